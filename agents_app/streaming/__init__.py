"""Live streams of a run: the replay-then-live feed every stream goes through (`feeds`), the
WebSocket consumers for pages and the API (`consumers`), tasks submitted and streamed over
the API socket in seed 000's protocol (`task_socket`), a conversation's stream of
transcript rows and its running answer (`conversations`), the notices behind browser
notifications (`notices`), Server-Sent Events (`sse`) with their shared subscriptions (`hub`)
and per-person cap (`slots`), API-key authentication for sockets (`ws_auth`), closing what a
credential opened when it ends (`credentials`), the types of the messages they send
(`messages`) and the socket routes (`routing`). Streams only authenticate, check ownership,
join, replay and forward."""

"""Live streams of a run: the replay-then-live feed every stream goes through (`feeds`), the
WebSocket consumers for pages and the API (`consumers`), a conversation's stream of
transcript rows and its running answer (`conversations`), the notices behind browser
notifications (`notices`), Server-Sent Events (`sse`), API-key
authentication for sockets (`ws_auth`) and the socket routes (`routing`). Streams only
authenticate, check ownership, join, replay and forward."""

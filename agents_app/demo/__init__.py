"""The no-model demo: a scripted stand-in for an LLM that ships with AgentDesk, so a newcomer
without a model sees every feature. `uv run go` serves it (`python -m agents_app.demo.server`)
when neither LLM_BASE_URL nor LOCAL_MODEL is set, under the model name DEMO_MODEL_NAME, and
every page and answer says it is the scripted demo.

It is no model: it answers each request from what the request says (the engine's phase marker,
the task, the conversation so far), and keeps nothing between requests, so any number of runs
can use one server. Plain Python, no Django: it runs as its own process.

    tasks.py          the task phases: analysis, plan, step, direct step, verdict
    conversations.py  chat answers and contract agents (cycles, evaluation)
    team.py           a head node's split into subtasks for profiles and a micro agent
    replies.py        one request → one reply (dispatch on the phase marker)
    wire.py           the OpenAI chat-completions wire format (streamed and whole)
    server.py         the HTTP server `go` starts
"""

# The model name the demo answers as: the pages show the demo banner for a connection to it.
DEMO_MODEL_NAME = "agentdesk-demo"

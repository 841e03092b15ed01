"""The scripted LLM server itself: scripting over HTTP is what the Celery worker tests rely on."""

import httpx
import pytest

from agents_app.demo.replies import DEMO_SCRIPT
from tests.support.llm_server import ScriptedLLMServer


@pytest.fixture
def server():
    scripted = ScriptedLLMServer().start()
    yield scripted
    scripted.stop()


def chat(server, text, **body):
    payload = {"model": "m", "messages": [{"role": "user", "content": text}], **body}
    return httpx.post(f"{server.base_url}/chat/completions", json=payload, timeout=5)


def test_it_can_be_scripted_and_inspected_over_http(server):
    root = server.base_url.removesuffix("/v1")
    rules = [{"match": "ping", "replies": [{"content": "pong"}]}]

    assert httpx.post(f"{root}/_script", json={"rules": rules}).json() == {"ok": True}
    answer = chat(server, "ping").json()

    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"] == "pong"
    recorded = httpx.get(f"{root}/_requests").json()["requests"]
    assert recorded[0]["messages"][0]["content"] == "ping"
    httpx.post(f"{root}/_reset", json={})
    assert server.requests == []


def test_it_pops_replies_in_order_and_repeats_the_last_one_when_asked(server):
    server.script(
        [
            {"match": "once", "replies": [{"content": "1"}]},
            {
                "match": ["twice", "please"],
                "repeat": True,
                "replies": [{"content": "a"}, {"content": "b"}],
            },
        ]
    )

    texts = [
        chat(server, "twice please").json()["choices"][0]["message"]["content"] for _ in range(3)
    ]
    first = chat(server, "once").json()["choices"][0]["message"]["content"]
    exhausted = chat(server, "once")

    assert texts == ["a", "b", "b"]
    assert first == "1"
    assert exhausted.status_code == 500


def test_it_answers_500_naming_the_last_message_when_nothing_matches(server):
    server.script([{"match": "known", "replies": [{"content": "x"}]}])

    response = chat(server, "a different question")

    assert response.status_code == 500
    assert "no scripted reply" in response.json()["error"]["message"]
    assert "a different question" in response.json()["error"]["message"]


def test_it_lists_a_model(server):
    assert httpx.get(f"{server.base_url}/models").json()["data"][0]["id"] == "scripted"


def test_the_demo_script_answers_every_phase(server):
    server.script(DEMO_SCRIPT)

    for marker in ("AGENTDESK:ANALYZE", "AGENTDESK:PLAN", "AGENTDESK:VERIFY", "AGENTDESK:STEP 1"):
        assert chat(server, f"{marker}\nDo the task").status_code == 200


def test_a_reply_can_be_computed_from_the_request_body(server):
    server.script([{"match": "", "replies": [lambda body: {"content": body["model"]}]}])

    answer = chat(server, "which model?", model="echoed").json()

    assert answer["choices"][0]["message"]["content"] == "echoed"


def test_the_demo_script_answers_a_direct_write_task_by_writing_the_file_it_names(server):
    server.script(DEMO_SCRIPT)

    first = chat(server, "AGENTDESK:DIRECT\nTask: Write hi to hi.txt")
    call = first.json()["choices"][0]["message"]["tool_calls"][0]["function"]

    assert (call["name"], call["arguments"]) == (
        "write_file",
        '{"path": "hi.txt", "content": "hi"}',
    )

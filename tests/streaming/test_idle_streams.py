"""Live streams on a running server (daphne, a Celery worker, Redis) stay open while nothing
happens: every kind of socket and an SSE client left idle for over half a minute still get the
next event, and a mobile client refused by the API socket is told why by its close code."""

import asyncio
import json

import httpx
import pytest
from django.conf import settings
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from agents_app.models import Approval, Run, RunStatus
from tests.support.clients import logged_in, make_api_key
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.waiting import wait_for
from tests.support.web import WebServer
from tools_app.mcp.discovery import sync_builtin_tools
from tools_app.models import Tool
from tools_app.process_registry import get_registry
from tools_app.registry import ApprovalLevel

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

# Longer than every timeout between a client and Redis that ever closed an idle stream or may:
# redis-py's 5 s read, channels_redis's 5 s pop, daphne's 20 s ping and the 30 s after which a
# pooled Redis connection is pinged before it is used again (config/settings.py). A proxy's 60 s
# read is no timeout here: the keepalives the SSE stream sends every few seconds, counted
# below, are what keeps one open, and the sockets' pings.
IDLE_SECONDS = 35
KEEPALIVE_SECONDS = 5
WAIT = 60
NOTE = {"path": "idle.md", "content": "still here\n"}


@pytest.fixture(scope="module")
def web(django_db_setup, llm_server, tmp_path_factory):
    server = WebServer(
        tmp_path_factory.mktemp("idle-web"),
        LLM_BASE_URL=llm_server.base_url,
        LLM_MODEL="scripted",
        SSE_KEEPALIVE_SECONDS=str(KEEPALIVE_SECONDS),
        # The test's own key: the sessions it logs in with are signed with it.
        SECRET_KEY=settings.SECRET_KEY,
    ).start()
    yield server
    server.stop()


def ws_url(web: WebServer, path: str) -> str:
    return web.url.replace("http://", "ws://") + path


def parked_run(web, llm, start_worker, owner, key: str) -> Run:
    """A task submitted to the server that the worker parks on a write_file approval."""
    sync_builtin_tools(get_registry())
    Tool.objects.filter(name="write_file").update(approval_level=ApprovalLevel.MODERATE)
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Save", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {"tool_calls": [{"name": "write_file", "arguments": NOTE}]},
                    {"content": "saved"},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "saved", evidence=[1])]},
        ]
    )
    start_worker()
    answer = httpx.post(
        f"{web.url}/api/v1/agent/task",
        json={"task": "Save a note"},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 202, answer.text
    run_id = answer.json()["run_id"]
    return wait_for(
        lambda: Run.objects.filter(pk=run_id, status=RunStatus.WAITING_APPROVAL).first(),
        timeout=WAIT,
        message="the run to park on its approval",
    )


async def receive_until(socket, found, timeout: float = WAIT) -> str:
    """Messages until one for which `found(message)` holds; that one."""

    async def read():
        while not found(message := await socket.recv()):
            pass
        return message

    return await asyncio.wait_for(read(), timeout)


@pytest.mark.slow(
    reason="every stream is left idle for IDLE_SECONDS (35 s), longer than all the timeouts that ever closed one"
)
def test_idle_sockets_and_sse_stay_open_and_get_the_next_event_when_the_run_resumes(
    web, llm, start_worker, owner
):
    key = make_api_key(owner, name="idle")
    run = parked_run(web, llm, start_worker, owner, key)
    approval_id = Approval.objects.get(run=run).pk
    held = run.event_seq
    session = logged_in(owner).cookies["sessionid"].value
    page_headers = {"Cookie": f"sessionid={session}"}
    bearer = {"Authorization": f"Bearer {key}"}

    async def scenario():
        def page_socket(path):
            return connect(
                ws_url(web, path),
                origin=web.url,
                additional_headers=page_headers,
                ping_interval=None,
            )

        sse_chunks: list[str] = []

        async def read_sse(client):
            headers = {**bearer, "Accept": "text/event-stream", "Last-Event-ID": str(held)}
            url = f"{web.url}/api/v1/runs/{run.pk}/events"
            async with client.stream("GET", url, headers=headers) as response:
                assert response.status_code == 200
                async for chunk in response.aiter_text():
                    sse_chunks.append(chunk)

        async with (
            page_socket(f"/ws/runs/{run.pk}/?after={held}") as run_page,
            page_socket("/ws/dashboard/") as dashboard,
            page_socket("/ws/header/") as header,
            connect(
                ws_url(web, f"/ws/api/runs/{run.pk}/?after={held}"),
                additional_headers=bearer,
                ping_interval=None,
            ) as api,
            httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as client,
        ):
            sse = asyncio.ensure_future(read_sse(client))
            # The header's two regions as they are now (the MCP panel, then the count of
            # approvals); nothing else is owed to anyone.
            for _ in range(2):
                await asyncio.wait_for(header.recv(), WAIT)
            # The point of the test: nobody says anything for this long. Every socket would
            # have been closed with 1011 after about 5 s (redis-py's read timeout).
            await asyncio.sleep(IDLE_SECONDS)
            assert not sse.done(), "the event stream ended while its run was waiting"
            keepalives = "".join(sse_chunks).count(": keepalive")

            decided = await client.post(
                f"{web.url}/api/v1/approvals/{approval_id}",
                json={"decision": "approve"},
                headers=bearer,
            )
            assert decided.status_code == 200, decided.text
            first = json.loads(await asyncio.wait_for(api.recv(), WAIT))
            result = await receive_until(api, lambda m: json.loads(m)["type"] == "result")
            page_result = await receive_until(run_page, lambda m: 'data-type="result"' in m)
            row = await asyncio.wait_for(dashboard.recv(), WAIT)
            count = await asyncio.wait_for(header.recv(), WAIT)
            await asyncio.wait_for(sse, WAIT)  # the stream ends by itself after the result
            return first, json.loads(result), page_result, row, count, keepalives, sse_chunks

    first, result, page_result, row, count, keepalives, sse_chunks = asyncio.run(scenario())

    assert first["seq"] == held + 1
    assert result["payload"]["status"] == "succeeded"
    assert f'id="run-row-{run.pk}"' in row
    assert 'id="nav-approvals-count"' in count
    assert keepalives >= IDLE_SECONDS // KEEPALIVE_SECONDS // 2
    stream = "".join(sse_chunks)
    assert f"id: {held + 1}\n" in stream
    assert "event: result" in stream
    assert "Timeout reading" not in web.log()
    assert Run.objects.get(pk=run.pk).status == RunStatus.SUCCEEDED


def test_the_api_socket_tells_a_refused_client_why_with_its_close_code(web, owner, outsider):
    run = make_run(owner)
    outsider_key = make_api_key(outsider, name="idle")

    async def close_code(headers) -> int:
        url = ws_url(web, f"/ws/api/runs/{run.pk}/")
        async with connect(url, additional_headers=headers) as socket:
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(socket.recv(), WAIT)
        return closed.value.rcvd.code

    async def scenario():
        return {
            "no key": await close_code({}),
            "bad key": await close_code({"Authorization": "Bearer adk_nope"}),
            "another user's run": await close_code({"Authorization": f"Bearer {outsider_key}"}),
        }

    assert asyncio.run(scenario()) == {
        "no key": 4401,
        "bad key": 4401,
        "another user's run": 4403,
    }

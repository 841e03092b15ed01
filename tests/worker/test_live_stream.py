"""A client that drops mid-run and reconnects with its last seq sees every event exactly once."""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync

from agents_app.models import Run, RunEvent
from agents_app.tasks import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.sockets import api_socket, receive_json

pytestmark = pytest.mark.integration


async def collect_events(socket, stop_after=None) -> list[dict]:
    """Events (not tokens) until `stop_after` of them, or until the run's result."""
    events = []
    while stop_after is None or len(events) < stop_after:
        message = await receive_json(socket, timeout=30)
        if message["type"] == "stream_token":
            continue
        events.append(message)
        if message["type"] == "result":
            break
    return events


def test_a_forced_disconnect_mid_run_loses_and_repeats_nothing(
    llm, start_worker, owner, api_key_for
):
    slow = {"chunk_delay": 0.05}
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(*[step(f"part {i}") for i in range(4)])],
            },
            *[
                {
                    "match": f"AGENTDESK:STEP {i}",
                    "replies": [{"content": f"part {i} is done now", **slow}],
                }
                for i in range(4)
            ],
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "all parts")]},
        ]
    )
    start_worker()
    run = make_run(owner)
    key = api_key_for(owner)

    async def scenario():
        first = api_socket(run.pk, key)
        assert (await first.connect())[0]
        await sync_enqueue(run.pk)
        seen = await collect_events(first, stop_after=6)
        await first.disconnect()  # the network drops in the middle of the run
        for _ in range(100):  # stay away until the run has moved on without us
            if await stored_seq(run.pk) > seen[-1]["seq"]:
                break
            await asyncio.sleep(0.1)
        assert await stored_seq(run.pk) > seen[-1]["seq"], "nothing happened while away"
        second = api_socket(run.pk, key, after=seen[-1]["seq"])
        assert (await second.connect())[0]
        seen += await collect_events(second)
        await second.disconnect()
        return seen

    from asgiref.sync import sync_to_async

    sync_enqueue = sync_to_async(lambda run_id: execute_run.delay(run_id))
    stored_seq = sync_to_async(lambda run_id: Run.objects.get(pk=run_id).event_seq)
    seen = async_to_sync(scenario)()
    stored = list(RunEvent.objects.filter(run=run).values_list("seq", "type"))
    assert [(m["seq"], m["type"]) for m in seen] == stored
    assert [m["seq"] for m in seen] == list(range(1, len(stored) + 1))
    assert seen[-1]["type"] == "result" and seen[-1]["payload"]["success"] is True
    assert json.dumps(seen)  # plain JSON all the way

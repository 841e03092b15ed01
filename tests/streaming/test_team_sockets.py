"""A team's tree live on its run pages: every commit of a run of the tree that changes how the
tree looks sends one notice to the tree's group (`tree.<root id>`), and the page socket of the
head node and of every child answers it with the Team panel read again. The run groups, which
the API socket and SSE read as numbered events, carry no notice."""

import asyncio

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from agents_app.core.events import EventType, publish, tree_group
from agents_app.models import AgentMessage, RunStatus
from agents_app.runs.writer import locked_run
from config.asgi import application
from tests.support.markup import by_id
from tests.support.runs import make_run, to_status
from tests.support.sockets import api_socket, receive_json, session_headers
from tests.support.teams import child_succeeds, start_team

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("queued_runs")]


@pytest.fixture
def team(owner, seeded_profiles):
    return start_team(
        owner,
        [
            ("Research the existing parsers", seeded_profiles["research_agent"]),
            ("Implement the parser in parser.py", seeded_profiles["builder_agent"]),
        ],
    )


def notices(root_id: int, act) -> list[dict]:
    """The messages `act()` sends to the tree group of `root_id`, in order."""

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(tree_group(root_id), channel)
        await sync_to_async(act)()
        await sync_to_async(publish)(tree_group(root_id), [{"type": "test.end"}])
        received = []
        while (message := await asyncio.wait_for(layer.receive(channel), 10))["type"] != "test.end":
            received.append(message)
        return received

    return async_to_sync(scenario)()


def test_a_childs_status_change_sends_one_notice_to_its_trees_group(team):
    head, (child, _) = team

    sent = notices(head.pk, lambda: to_status(child, RunStatus.PLANNING, RunStatus.RUNNING))

    assert sent == [{"type": "run.tree", "root_id": head.pk, "run_id": child.pk}]


@pytest.mark.fabricated_events  # its llm_usage event is made up: its type is what counts
def test_an_event_that_leaves_the_tree_as_it_is_sends_no_notice(team):
    head, (child, _) = team

    def usage():
        with locked_run(child.pk) as w:
            w.event(EventType.LLM_USAGE, {"prompt_tokens": 5})

    assert notices(head.pk, usage) == []


def test_a_run_in_no_tree_sends_no_notice(owner):
    run = make_run(owner)

    assert notices(run.pk, lambda: to_status(run, RunStatus.PLANNING)) == []


def page_socket(run, headers) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, f"/ws/runs/{run.pk}/?after=0", headers=headers)


async def receive_until(socket, found, limit: int = 20) -> str:
    """The first message for which `found(html)` holds, skipping others (at most `limit`)."""
    for _ in range(limit):
        html = await socket.receive_from(10)
        if found(html):
            return html
    raise AssertionError("no such message")


def team_panel(html: str) -> bool:
    return 'id="team"' in html and 'hx-swap-oob="true"' in html


def test_the_head_nodes_page_shows_a_child_starting_and_its_result_without_a_reload(owner, team):
    head, (research, builder) = team
    headers = session_headers(owner)

    async def scenario():
        socket = page_socket(head, headers)
        assert (await socket.connect())[0]
        caught_up = await receive_until(socket, team_panel)
        await sync_to_async(to_status)(research, RunStatus.PLANNING, RunStatus.RUNNING)
        running = await receive_until(
            socket, lambda h: team_panel(h) and 'data-status="running"' in h
        )
        await sync_to_async(child_succeeds)(research, "Three parsers exist.")
        ended = await receive_until(socket, lambda h: team_panel(h) and "task_result" in h)
        await socket.disconnect()
        return caught_up, running, ended

    caught_up, running, ended = async_to_sync(scenario)()
    node = f'id="team-run-{research.pk}"'
    assert node in caught_up and "Three parsers exist." not in caught_up
    assert node in running
    result = AgentMessage.objects.get(root=head, type="task_result")
    assert f'id="team-message-{result.pk}"' in ended and "Three parsers exist." in ended


def test_a_childs_page_hears_its_sibling_change(owner, team):
    head, (research, builder) = team
    headers = session_headers(owner)

    async def scenario():
        socket = page_socket(research, headers)
        assert (await socket.connect())[0]
        await receive_until(socket, team_panel)
        await sync_to_async(to_status)(builder, RunStatus.PLANNING)
        html = await receive_until(socket, team_panel)
        await socket.disconnect()
        return html

    html = async_to_sync(scenario)()
    assert by_id(html, f"team-run-{builder.pk}")["data-status"] == "planning"
    assert by_id(html, f"team-run-{research.pk}")["aria-current"] == "page"


@pytest.mark.dialect
def test_the_head_nodes_api_socket_gets_only_its_numbered_events(owner, team, api_key_for):
    head, (research, _) = team
    auth = api_key_for(owner)
    after = head.event_seq

    async def scenario():
        socket = api_socket(head.pk, auth, after=after)
        assert (await socket.connect())[0]
        await sync_to_async(to_status)(research, RunStatus.PLANNING)  # a tree notice
        await sync_to_async(to_status)(head, RunStatus.CANCELLED)
        received = []
        while not received or received[-1]["type"] != "run_status":
            received.append(await receive_json(socket))
        await socket.disconnect()
        return received

    received = async_to_sync(scenario)()
    assert received[-1]["payload"]["status"] == "cancelled"
    seqs = [m["seq"] for m in received]
    assert seqs == list(range(after + 1, after + 1 + len(received)))

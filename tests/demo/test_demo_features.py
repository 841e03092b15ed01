"""The demo `go` serves without an LLM (agents_app.demo), over its own HTTP server and the real
OpenAI provider, driving each feature the README's demo table names: a chat that reasons, calls
tools (one waiting for a person) and answers in Markdown; a contract agent that works in cycles
and completes by its own evaluation; a team whose head node splits a task into distinct
subtasks for two profiles and a micro agent. Each row of the table, and two paraphrases of it,
is a case here; every answer carries the demo's signature."""

import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.contracts.selectors import agent_state
from agents_app.contracts.services import agent_create, agent_start
from agents_app.conversations.selectors import transcript
from agents_app.conversations.services import conversation_create, message_post
from agents_app.demo import DEMO_MODEL_NAME
from agents_app.demo.reading import SIGNATURE
from agents_app.demo.server import DemoServer
from agents_app.models import Approval, Run, RunEvent, Task, ToolCall
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tests.support.site import PAGE, page_served
from tools_app.builtin import register_builtin_tools
from tools_app.registry import ToolRegistry

pytestmark = pytest.mark.django_db(transaction=True)


def _serve(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def demo_server() -> Iterator[DemoServer]:
    yield from _serve(DemoServer(port=0, delay=0))


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with page_served() as url:
        yield url


def _tools() -> ToolRegistry:
    """The builtin tools as a worker has them, but with loopback allowed: the page is there."""
    registry = ToolRegistry()
    register_builtin_tools(
        registry, file_max_bytes=1 << 20, http_max_bytes=1 << 20, http_timeout=10,
        http_allow_private=True,
    )  # fmt: skip
    return registry


TOOLS = _tools()


def execute(run_id: int) -> None:
    execute_run(run_id, registry=TOOLS)


@pytest.fixture(autouse=True)
def demo(demo_server, settings, tmp_path, queued_runs):
    """Every process setting `go` gives its children when it serves the demo."""
    settings.LLM_BASE_URL = demo_server.base_url
    settings.LLM_MODEL = DEMO_MODEL_NAME
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    return queued_runs


def drain(queued: list[int]) -> None:
    """Run what was queued for a worker (children, a head node woken, a run resumed)."""
    while queued:
        execute(queued.pop(0))


def rows(run) -> list[tuple[str, str]]:
    return [(e.kind, e.text) for e in transcript(run.conversation)]


def approve(run, queued) -> None:
    run.refresh_from_db()
    assert run.status == "waiting_approval"
    approval = Approval.objects.get(run=run, status="pending")
    approval_decide(approval_id=approval.pk, decision="approve", actor=run.owner, interface="api")
    drain(queued)


# --- tasks -----------------------------------------------------------------------------------


def task_run(owner, text: str) -> Run:
    run = run_create(task=Task.objects.create(owner=owner, text=text))
    execute(run.pk)
    run.refresh_from_db()
    return run


def made(run) -> list[tuple[str, str]]:
    return list(ToolCall.objects.filter(run=run).order_by("pk").values_list("tool", "status"))


@pytest.mark.parametrize(
    "words",
    [
        "Create notes.md containing remember the milk",
        "Write notes.md with the text: remember the milk",
        "Save remember the milk to notes.md",
    ],
)
def test_a_write_task_writes_what_it_names(owner, settings, words):
    run = task_run(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert made(run) == [("write_file", "succeeded")]
    written = settings.WORKSPACE_ROOT / f"run-{run.pk}" / "notes.md"
    assert written.read_text() == "remember the milk"


@pytest.mark.parametrize(
    "words",
    [
        "Create notes.md containing hi, then read notes.md",
        "Write hi to notes.md, then read notes.md",
        "Create notes.md containing hi, then show notes.md",
    ],
)
def test_a_write_then_read_task_answers_with_what_the_file_holds(owner, words):
    run = task_run(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert made(run) == [("write_file", "succeeded"), ("read_file", "succeeded")]
    assert run.final_response.startswith("notes.md says:\n\nhi")


@pytest.mark.parametrize("words", ["List the files", "What files are there?", "Show the files"])
def test_a_list_task_lists_the_workspace(owner, words):
    run = task_run(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert made(run) == [("list_files", "succeeded")]


@pytest.mark.parametrize(
    "words", ["Fetch {site}", "Download {site} please", "Summarise {site} for me"]
)
def test_a_fetch_task_waits_for_approval_then_summarises_the_page(owner, site, demo, words):
    run = task_run(owner, words.format(site=site))
    assert Approval.objects.get(run=run).tool == "http_get"

    approve(run, demo)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert PAGE in run.final_response


@pytest.mark.parametrize(
    "words",
    [
        "List the files and read notes.md",
        "Read notes.md and list the files",
        "Show the files, then read notes.md",
    ],
)
def test_independent_steps_run_side_by_side(owner, settings, words):
    run = run_create(task=Task.objects.create(owner=owner, text=words))
    workspace = settings.WORKSPACE_ROOT / f"run-{run.pk}"
    workspace.mkdir(parents=True)
    (workspace / "notes.md").write_text("remember the milk\n")
    execute(run.pk)
    run.refresh_from_db()

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.plans.get().raw["parallel"] is True
    assert sorted(made(run)) == [("list_files", "succeeded"), ("read_file", "succeeded")]
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


@pytest.mark.parametrize(
    "words",
    [
        "List the files and fetch {site}",
        "Fetch {site} and list the files",
        "Show the files, then download {site}",
    ],
)
def test_a_list_runs_beside_a_fetch_that_waits_for_approval(owner, site, demo, words):
    run = task_run(owner, words.format(site=site))

    assert run.status == "waiting_approval"
    assert run.plans.get().raw["parallel"] is True
    assert ("list_files", "succeeded") in made(run)  # done while the fetch waited
    approve(run, demo)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert sorted(made(run)) == [("http_get", "succeeded"), ("list_files", "succeeded")]


@pytest.mark.parametrize(
    "words",
    [
        "Make the first plan fail so I see a replan",
        "Show me a replan",
        "Let the first attempt fail",
    ],
)
def test_a_replan_task_fails_its_first_plan_and_succeeds_after_a_replan(owner, words):
    run = task_run(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.replans == 1
    assert made(run) == [
        ("read_file", "failed"),
        ("write_file", "succeeded"),
        ("read_file", "succeeded"),
    ]


@pytest.mark.parametrize("words", ["Say hello", "Plan a picnic", "Tell me about AgentDesk"])
def test_any_other_task_looks_at_the_workspace_and_answers_that_it_is_the_demo(owner, words):
    run = task_run(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert made(run) == [("list_files", "succeeded")]
    assert "demo script, not a model" in run.final_response


# --- chat ------------------------------------------------------------------------------------


def chat_answer(owner, text: str) -> Run:
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text=text)
    execute(run.pk)
    run.refresh_from_db()
    return run


@pytest.mark.parametrize(
    "words",
    ["Fetch {site}", "What is on {site}?", "Could you download {site} for me"],
)
def test_a_chat_fetch_reasons_waits_for_approval_then_answers_in_markdown(owner, site, demo, words):
    run = chat_answer(owner, words.format(site=site))
    approval = Approval.objects.get(run=run)
    assert (approval.tool, approval.arguments) == ("http_get", {"url": site})

    approve(run, demo)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    kinds = [kind for kind, _ in rows(run)]
    assert kinds[:4] == ["user", "reasoning", "tool_call", "tool_result"]
    assert kinds[-2:] == ["reasoning", "assistant"]
    assert run.final_response.startswith("**What I did**")
    assert PAGE in run.final_response and run.final_response.endswith(SIGNATURE)


@pytest.mark.parametrize(
    "words", ["List the files", "What files are in the workspace?", "Show me the files"]
)
def test_a_chat_list_calls_list_files_without_asking_and_answers(owner, words):
    run = chat_answer(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    calls = list(ToolCall.objects.filter(run=run).values_list("tool", "status"))
    assert calls == [("list_files", "succeeded")]
    assert "The workspace is empty." in run.final_response


@pytest.mark.parametrize(
    "words",
    [
        "Write hello to a.md, then read a.md",
        "Save hello to a.md and then show a.md",
        "Create a.md containing hello, then read a.md",
    ],
)
def test_a_chat_write_then_read_makes_both_calls_and_answers_with_the_file(owner, words):
    run = chat_answer(owner, words)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    calls = list(ToolCall.objects.filter(run=run).order_by("pk").values_list("tool", "status"))
    assert calls == [("write_file", "succeeded"), ("read_file", "succeeded")]
    assert "a.md says:\n\nhello" in run.final_response


@pytest.mark.parametrize("words", ["Hello!", "Who are you?", "Tell me a joke"])
def test_a_chat_message_that_asks_for_no_tool_gets_what_the_demo_can_do(owner, words):
    run = chat_answer(owner, words)

    assert run.status == "succeeded"
    assert "scripted demo" in run.final_response and "| Say |" in run.final_response
    assert [kind for kind, _ in rows(run)] == ["user", "reasoning", "assistant"]


def test_a_denied_chat_fetch_is_said_and_not_asked_again(owner, site, demo):
    run = chat_answer(owner, f"Fetch {site}")
    approval = Approval.objects.get(run=run)
    approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="api")
    drain(demo)

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert "denied" in run.final_response
    assert Approval.objects.filter(run=run).count() == 1


# --- contract agents --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("contract", "tools"),
    [
        ("Write the list of files in the workspace to status.md", ["list_files", "write_file"]),
        ("List the files, then save them to status.md", ["list_files", "write_file"]),
        ("Keep an eye on the workspace", ["list_files", "write_file"]),
    ],
)
def test_a_contract_agent_works_in_cycles_and_completes_by_its_own_evaluation(
    owner, contract, tools
):
    agent = agent_create(owner=owner, interface="api", contract=contract)
    run = agent_start(agent=agent, actor=owner, interface="api")

    execute(run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert agent_state(agent).status == "completed"
    evaluations = [e.payload for e in RunEvent.objects.filter(run=run, type="contract_evaluation")]
    assert [e["met"] for e in evaluations] == [False] * (len(tools) - 1) + [True]
    assert [c["tool"] for c in evaluations[-1]["evidence"]] == tools
    made = ToolCall.objects.filter(run=run).order_by("pk").values_list("tool", flat=True)
    assert list(made) == tools
    assert run.final_response.endswith(SIGNATURE)


# --- teams -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "words",
    [
        "Write a short report on what is in the workspace",
        "Research the workspace and write it up",
        "Have the team look at the files",
    ],
)
def test_a_team_splits_the_task_for_two_profiles_and_a_micro_agent_then_aggregates(
    owner, seeded_profiles, demo, words
):
    head = run_create(task=Task.objects.create(owner=owner, text=words, team=True))
    execute(head.pk)
    drain(demo)

    head.refresh_from_db()
    assert head.status == "succeeded", (head.error_code, head.error_message)
    children = list(Run.objects.filter(parent=head).order_by("pk"))
    assert [c.kind for c in children] == ["child", "child", "micro"]
    assert all(c.status == "succeeded" for c in children)
    profiles = [c.profile.name for c in children[:2]]
    assert len(set(profiles)) == 2, profiles
    subtasks = [c.task.text for c in children]
    assert len(set(subtasks)) == 3, subtasks
    assert children[2].task.persona.startswith("You are a strict reviewer")
    for index, child in enumerate(children):
        assert f"[{index}]" in head.final_response and f"run {child.pk}" in head.final_response

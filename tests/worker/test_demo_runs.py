"""The no-model demo (agents_app/demo) through a real Celery worker: each kind of
task the README's table names ends as it says, with the tool calls, approval and replans a
newcomer is told to expect. The scripted server plays DEMO_SCRIPT in-process, and one test runs
the demo's own server (`python -m agents_app.demo.server`) as `go` starts it."""

import os
import sys
from collections.abc import Iterator

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.demo.reading import SIGNATURE
from agents_app.demo.replies import DEMO_SCRIPT
from agents_app.demo.tasks import DEMO_NOTE, REPLAN_CONTENT, REPLAN_FILE
from agents_app.models import Approval, Plan, Run, RunEvent, ToolCall
from agents_app.tasks import execute_run
from config.embedded import DEMO_MODEL_ARGS
from tests.support.processes import ManagedProcess, free_port, port_open
from tests.support.runs import make_run
from tests.support.site import PAGE, page_served
from tests.support.waiting import wait_for, wait_for_run
from tests.support.workspaces import write_files

pytestmark = pytest.mark.integration

# The demo model as `go` starts it (config.embedded.DEMO_MODEL_ARGS).
DEMO_COMMAND = [sys.executable, *DEMO_MODEL_ARGS]


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with page_served() as url:
        yield url


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory):
    """The module's run workspaces: run ids repeat between sessions, files must not."""
    return tmp_path_factory.mktemp("workspaces")


@pytest.fixture(scope="module")
def module_worker_env(workspaces):
    # The demo's page is on loopback, which http_get refuses unless allowed.
    return {"WORKSPACE_ROOT": str(workspaces), "HTTP_TOOL_ALLOW_PRIVATE": "true"}


@pytest.fixture(autouse=True)
def same_workspaces(settings, workspaces):
    settings.WORKSPACE_ROOT = workspaces


@pytest.fixture
def demo(llm):
    llm.script(DEMO_SCRIPT)
    return llm


def start(owner, text, files=None, fast_path=None) -> Run:
    run = make_run(owner, text, fast_path=fast_path)
    if files:
        write_files(run, files)
    execute_run.delay(run.pk)
    return run


def calls(run) -> list[tuple[str, dict, str]]:
    return [
        (call.tool, call.arguments, call.status)
        for call in ToolCall.objects.filter(run=run).order_by("id")
    ]


def succeeded(run) -> Run:
    run = wait_for_run(run.pk)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    return run


def verdicts(run) -> list[dict]:
    events = RunEvent.objects.filter(run=run, type="verification").order_by("seq")
    return [event.payload for event in events]


def waiting(run) -> Approval:
    wait_for(lambda: Run.objects.get(pk=run.pk).status == "waiting_approval", 60, message="park")
    return Approval.objects.get(run=run)


@pytest.mark.slow(
    reason="the module's first test: starts the standalone demo model server and the module's worker"
)
def test_a_read_task_reads_the_file_and_answers_with_what_it_holds(demo, shared_worker, owner):
    run = start(owner, "What does notes.txt say?", {"notes.txt": "remember the milk\n"})

    run = succeeded(run)
    assert calls(run) == [("read_file", {"path": "notes.txt"}, "succeeded")]
    assert "remember the milk" in run.final_response
    assert verdicts(run)[-1]["evidence"] == [1]
    assert run.replans == 0


def test_a_write_task_writes_the_file_with_the_content_it_names(
    demo, shared_worker, owner, workspaces
):
    run = start(owner, "Create greeting.md containing Hello from the demo")

    run = succeeded(run)
    written = {"path": "greeting.md", "content": "Hello from the demo"}
    assert calls(run) == [("write_file", written, "succeeded")]
    assert (workspaces / f"run-{run.pk}" / "greeting.md").read_text() == "Hello from the demo"
    assert verdicts(run)[-1]["evidence"] == [1]


def test_a_list_task_lists_the_workspace_and_names_its_files(demo, shared_worker, owner):
    run = start(owner, "List the files", {"a.txt": "a", "b.md": "b"})

    run = succeeded(run)
    assert calls(run) == [("list_files", {}, "succeeded")]
    assert "a.txt" in run.final_response and "b.md" in run.final_response


def test_a_task_that_writes_a_file_then_reads_it_answers_with_what_it_wrote(
    demo, shared_worker, owner
):
    run = start(owner, "Create notes.md containing remember the milk, then read notes.md")

    run = succeeded(run)
    assert calls(run) == [
        ("write_file", {"path": "notes.md", "content": "remember the milk"}, "succeeded"),
        ("read_file", {"path": "notes.md"}, "succeeded"),
    ]
    assert run.final_response == f"notes.md says:\n\nremember the milk\n\n{SIGNATURE}"


def test_a_read_then_save_task_copies_what_it_read_into_the_file_it_names(
    demo, shared_worker, owner, workspaces
):
    run = start(owner, "Read a.md and save it to b.md", {"a.md": "# A\n\nline\n"})

    run = succeeded(run)
    assert [(tool, status) for tool, _, status in calls(run)] == [
        ("read_file", "succeeded"),
        ("write_file", "succeeded"),
    ]
    assert (workspaces / f"run-{run.pk}" / "b.md").read_text() == "# A\n\nline"
    assert verdicts(run)[-1]["evidence"] == [1, 2]


def test_a_url_task_waits_for_approval_then_fetches_and_summarises_the_page(
    demo, shared_worker, owner, site
):
    run = start(owner, f"Fetch {site} and tell me what it says")
    approval = waiting(run)
    assert (approval.tool, approval.arguments) == ("http_get", {"url": site})

    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="api")

    run = succeeded(run)
    assert calls(run) == [("http_get", {"url": site}, "succeeded")]
    assert PAGE in run.final_response
    assert verdicts(run)[-1]["evidence"] == [1]


def test_a_url_task_whose_fetch_is_denied_fails_saying_a_person_denied_it(
    demo, shared_worker, owner, site
):
    run = start(owner, f"Fetch {site}")
    approval = waiting(run)

    approval_decide(approval_id=approval.pk, decision="deny", actor=owner, interface="api")

    run = wait_for_run(run.pk)
    assert (run.status, run.error_code) == ("failed", "VERIFICATION_FAILED")
    assert calls(run) == [("http_get", {"url": site}, "denied")]
    assert "denied" in verdicts(run)[-1]["reasoning"]
    assert run.replans == 0


def test_a_task_asking_for_a_failure_fails_its_first_plan_and_succeeds_after_a_replan(
    demo, shared_worker, owner, workspaces
):
    run = start(owner, "Make the first plan fail so I can watch a replan")

    run = succeeded(run)
    assert run.replans == 1
    assert Plan.objects.filter(run=run).count() == 2
    assert calls(run) == [
        ("read_file", {"path": REPLAN_FILE}, "failed"),
        ("write_file", {"path": REPLAN_FILE, "content": REPLAN_CONTENT}, "succeeded"),
        ("read_file", {"path": REPLAN_FILE}, "succeeded"),
    ]
    first, last = verdicts(run)
    assert (first["task_complete"], first["should_replan"]) == (False, True)
    assert last["evidence"] == [2, 3]
    assert "Written by the second plan" in run.final_response


def test_any_other_task_gets_a_short_plan_answered_in_prose_citing_its_evidence(
    demo, shared_worker, owner
):
    run = start(owner, "What is the capital of France?")

    run = succeeded(run)
    assert calls(run) == [("list_files", {}, "succeeded")]
    assert [s.tool_names for s in Plan.objects.get(run=run).steps.order_by("index")] == [
        ["list_files"],
        [],
    ]
    assert DEMO_NOTE in run.final_response
    assert verdicts(run)[-1]["evidence"] == [1]


def test_on_the_fast_path_a_write_task_writes_then_calls_finish_task(
    demo, shared_worker, owner, workspaces
):
    run = start(owner, "Write hello to hello.txt", fast_path=True)

    run = succeeded(run)
    assert [(tool, status) for tool, _, status in calls(run)] == [
        ("write_file", "succeeded"),
        ("finish_task", "succeeded"),
    ]
    assert (workspaces / f"run-{run.pk}" / "hello.txt").read_text() == "hello"
    assert not any("AGENTDESK:VERIFY" in str(body["messages"]) for body in demo.requests)


def test_on_the_fast_path_a_task_asking_for_a_failure_replans_through_the_planner(
    demo, shared_worker, owner
):
    run = start(owner, "Show me a replan", fast_path=True)

    run = succeeded(run)
    assert run.replans == 1
    assert [(tool, status) for tool, _, status in calls(run)] == [
        ("read_file", "failed"),
        ("write_file", "succeeded"),
        ("read_file", "succeeded"),
    ]


def test_the_demo_server_go_starts_runs_a_task_for_a_worker(owner, start_worker, tmp_path):
    port = free_port()
    server = ManagedProcess("demo llm", tmp_path / "demo-llm.log", dict(os.environ))
    server.spawn(
        [*DEMO_COMMAND, "--port", str(port)],
        ready=lambda: port_open(port),
        timeout=30,
    )
    try:
        start_worker(
            "demo", LLM_BASE_URL=f"http://127.0.0.1:{port}/v1", WORKSPACE_ROOT=str(tmp_path)
        )
        run = make_run(owner, "Save plan.md with Buy bread")
        execute_run.delay(run.pk)

        run = succeeded(run)
        assert [(tool, status) for tool, _, status in calls(run)] == [("write_file", "succeeded")]
        assert (tmp_path / f"run-{run.pk}" / "plan.md").read_text() == "Buy bread"
    finally:
        server.stop()

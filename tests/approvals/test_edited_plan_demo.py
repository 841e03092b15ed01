"""The finding as a newcomer met it, with the demo model `go` serves: a plan edited down to its
one write step succeeds, judged as the person reshaped the task (issue 32, finding 6)."""

import threading
from collections.abc import Iterator

import pytest

from agents_app.approvals.decisions import approval_decide
from agents_app.demo import DEMO_MODEL_NAME
from agents_app.demo.server import DemoServer
from agents_app.models import Approval, Plan, RunEvent, Task
from agents_app.runs.lifecycle import workspace_for
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tools_app.builtin import register_builtin_tools
from tools_app.registry import ToolRegistry

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def demo_server() -> Iterator[DemoServer]:
    server = DemoServer(port=0, delay=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def tools(demo_server, settings, tmp_path) -> ToolRegistry:
    settings.LLM_BASE_URL = demo_server.base_url
    settings.LLM_MODEL = DEMO_MODEL_NAME
    settings.WORKSPACE_ROOT = tmp_path / "workspaces"
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    registry = ToolRegistry()
    register_builtin_tools(
        registry,
        file_max_bytes=1 << 20,
        http_max_bytes=1 << 20,
        http_timeout=10,
        http_allow_private=False,
    )
    return registry


def test_a_demo_plan_edited_down_to_its_write_step_succeeds(owner, tools, queued_runs):
    task = Task.objects.create(
        owner=owner,
        text="Read notes.txt, then write hello to hello.txt",
        approve_plan=True,
        fast_path=False,
    )
    run = run_create(task=task)
    execute_run(run.pk, registry=tools)
    run.refresh_from_db()
    assert run.status == "waiting_approval", (run.error_code, run.error_message)
    first = Plan.objects.get(run=run, version=1).raw["steps"]
    writes = [step for step in first if "write_file" in step["tool_names"]]
    assert len(first) > 1 and len(writes) == 1
    approval = Approval.objects.get(run=run, status="pending")

    approval_decide(
        approval_id=approval.pk,
        decision="modify",
        arguments={"steps": [{**writes[0], "depends_on": []}]},
        note="No need to read the notes.",
        actor=owner,
        interface="web",
    )
    while queued_runs:
        execute_run(queued_runs.pop(0), registry=tools)

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert (workspace_for(run) / "hello.txt").is_file()
    verdict = RunEvent.objects.filter(run=run, type="verification").last().payload
    assert "read_file" not in verdict["reasoning"]

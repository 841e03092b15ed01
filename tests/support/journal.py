"""A planned run whose steps change files, executed in the test process (the workspace journal,
issue 36): `run_steps(owner, [calls of step 1], [calls of step 2], …)`."""

from agents_app.models import Run
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import DiskTool, EchoTool, make_registry
from tools_app.builtin.files import WriteFileTool

TOOLS = ["write_file", "disk", "echo"]


def run_steps(owner, *calls_by_step: list[dict]) -> Run:
    """A planned run whose step k makes the calls `calls_by_step[k]`, then succeeds."""
    run = make_run(owner, "Change some files", fast_path=False)
    script = [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [plan_reply(*(step(f"step {k}", TOOLS) for k in range(len(calls_by_step))))],
        },
        *(
            {"match": f"AGENTDESK:STEP {k}", "replies": [*calls, {"content": f"step {k} done"}]}
            for k, calls in enumerate(calls_by_step)
        ),
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
    ]
    registry = make_registry(WriteFileTool(max_bytes=10_000), DiskTool(), EchoTool())
    execute_run(run.pk, provider=ScriptedProvider(script), registry=registry)
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    return run

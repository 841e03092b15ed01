"""Tools, a script and helpers that park a run on an approval in-process (no Celery)."""

from agents_app.models import Approval
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider, plan, step, verdict
from tools_app.registry import ApprovalLevel, SideEffects, Tool, ToolResult, ToolSpec


class SendTool(Tool):
    """A tool with external side effects: moderate, so it asks unless a rule allows it."""

    spec = ToolSpec(
        name="send",
        description="Send a message.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
            "required": ["to", "text"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"SEND"}),
        domain="messaging",
        side_effects=SideEffects.EXTERNAL,
    )

    def __init__(self):
        self.calls = []

    def run(self, arguments, context):
        self.calls.append(arguments)
        return ToolResult(ok=True, content={"sent": arguments["to"]})


class ShellTool(SendTool):
    spec = ToolSpec(
        name="shell",
        description="Run a command.",
        input_schema={"type": "object", "properties": {"command": {"type": "string"}}},
        capabilities=frozenset({"EXECUTE"}),
        domain="system",
        approval_level=ApprovalLevel.AUTO,
        side_effects=SideEffects.READ_ONLY,
    )


SCRIPT = {
    "AGENTDESK:PLAN": [plan(step("send the note", ["send"]), step("wrap up", [], [0]))],
    "AGENTDESK:STEP 0": [
        {"tool_calls": [{"name": "send", "arguments": {"to": "ann", "text": "hi"}}]},
        {"content": "note sent"},
    ],
    "AGENTDESK:STEP 1": [{"content": "wrapped"}],
    "AGENTDESK:VERIFY": [verdict(True, "done")],
}


def drive(run, provider, registry):
    """Execute the run in this process until it finishes or parks; `run` is refreshed."""
    outcome = execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return outcome


def parked(owner, registry, script=SCRIPT):
    """A run of `owner` parked on its first call: (run, provider, approval)."""
    run = make_run(owner)
    provider = ScriptedProvider(script)
    drive(run, provider, registry)
    assert run.status == "waiting_approval"
    assert run.lease_owner == "" and run.parked_at is not None
    return run, provider, Approval.objects.get(run=run)

"""Approvals in tests: runs parked on a call in-process, pending rows, deciding over REST and
on the pages, and, for a real worker, `write_file` made to ask and scripts that write."""

import json
from datetime import timedelta
from html import unescape

from django.utils import timezone

from agents_app.models import Approval, AuditEvent, Run, Task, ToolCall
from agents_app.runs.services import run_create
from agents_app.tasks import execute_run
from agents_app.worker.execution import execute_run as execute_in_process
from tests.support.api import post_json
from tests.support.markup import elements
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import SendTool
from tools_app.models import Tool, ToolSource

APPROVALS = "/api/v1/approvals"
HTMX = {"HX-Request": "true"}
TOOL = "write_file"
NOTES = {"path": "notes.md", "content": "remember the milk\n"}

SCRIPT = [
    {
        "match": "AGENTDESK:PLAN",
        "replies": [plan_reply(step("send the note", ["send"]), step("wrap up", [], [0]))],
    },
    {
        "match": "AGENTDESK:STEP 0",
        "replies": [tool_call("send", to="ann", text="hi"), {"content": "note sent"}],
    },
    {"match": "AGENTDESK:STEP 1", "replies": [{"content": "wrapped"}]},
    {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
]


def drive(run, provider, registry):
    """Execute the run in this process until it finishes or parks; `run` is refreshed."""
    outcome = execute_in_process(run.pk, provider=provider, registry=registry)
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


def plan_parked(owner, registry, script=SCRIPT):
    """A run of `owner` waiting for approval of its plan: (run, provider, approval)."""
    task = Task.objects.create(owner=owner, text="Send Ann a note", approve_plan=True)
    run = run_create(task=task)
    provider = ScriptedProvider(script)
    drive(run, provider, registry)
    assert run.status == "waiting_approval"
    return run, provider, Approval.objects.get(run=run, status="pending")


def pending(owner, tool="send", minutes_ago=0, **fields) -> Approval:
    """A pending approval on a queued run, without executing anything."""
    return Approval.objects.create(
        run=make_run(owner),
        owner=owner,
        tool=tool,
        arguments={"to": "ann", "text": "hi"},
        input_schema=SendTool.spec.input_schema,
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
        **fields,
    )


def decide(client, approval_id, **body):
    return post_json(client, f"{APPROVALS}/{approval_id}", body)


def as_json(data):
    return json.loads(json.dumps(data))


def ids(results):
    return [item["id"] for item in results]


def decide_url(approval) -> str:
    return f"/approvals/{approval.pk}/decide/"


def dialog_buttons(html: str) -> list[str]:
    return [
        attrs["value"]
        for tag, attrs in elements(html)
        if tag == "button" and attrs.get("name") == "decision"
    ]


def textarea_text(html: str) -> str:
    start = html.index('name="arguments"')
    return unescape(html[html.index(">", start) + 1 : html.index("</textarea>", start)])


def make_tool_ask(level: str = "moderate") -> None:
    """Staff's setting: every write_file call asks (unless a rule allows it, for moderate)."""
    Tool.objects.update_or_create(
        name=TOOL,
        defaults={
            "source": ToolSource.BUILTIN,
            "approval_level": level,
            "side_effects": "workspace_write",
        },
    )


def write_call(path: str = "note.txt", content: str = "hello") -> dict:
    return tool_call(TOOL, path=path, content=content)


def asking_script(
    path: str = "note.txt", content: str = "hello", complete: bool = True, summary: bool = True
) -> list:
    """Plan one write and (with `summary`) a summary after it; the write's step answers once
    its tool result (or a denial) is in the conversation. Every rule repeats, so any number of
    runs can use it."""
    steps = [step("write", [TOOL])] + ([step("sum up", [], [0])] if summary else [])
    return [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(*steps)], "repeat": True},
        {
            "match": ["AGENTDESK:STEP 0", "bytes_written"],
            "replies": [{"content": "written"}],
            "repeat": True,
        },
        {
            "match": ["AGENTDESK:STEP 0", "denied"],
            "replies": [{"content": "not allowed"}],
            "repeat": True,
        },
        {"match": "AGENTDESK:STEP 0", "replies": [write_call(path, content)], "repeat": True},
        {"match": "AGENTDESK:STEP 1", "replies": [{"content": "summed up"}], "repeat": True},
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [verdict(complete, "all done", evidence=[1])],
            "repeat": True,
        },
    ]


def script_a_write(llm, response="notes written"):
    """One step that calls write_file, then says what happened; the verifier accepts."""
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("note", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("write_file", **NOTES), {"content": "the step is over"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, response, evidence=[1])]},
        ]
    )


def queue_task(owner, *, timeout=None, on_timeout="") -> Run:
    """A task with its own approval timeout, queued for the workers (task_submit takes no
    timeout yet, so the task is made the way it would)."""
    task = Task.objects.create(
        owner=owner,
        text="Write the notes",
        approval_timeout=timeout,
        approval_on_timeout=on_timeout,
    )
    run = run_create(task=task)
    execute_run.delay(run.pk)
    return run


def audit_accounts_for_everything(run):
    """Every tool call of the run has a tool.call row; every decision an approval.decide."""
    audit = AuditEvent.objects.filter(run_id=run.pk)
    audited_calls = {e.details["tool_call_id"] for e in audit.filter(action="tool.call")}
    executed = set(
        ToolCall.objects.filter(run=run, status__in=["succeeded", "failed"]).values_list(
            "pk", flat=True
        )
    )
    assert executed == audited_calls
    decided = set(
        Approval.objects.filter(run=run)
        .exclude(status__in=["pending", "void"])
        .values_list("pk", flat=True)
    )
    assert decided == {e.details["approval_id"] for e in audit.filter(action="approval.decide")}
    assert decided == {e.details["approval_id"] for e in audit.filter(action="approval.request")}

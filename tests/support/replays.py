"""Runs recorded in the test's own process from a script, and replayed from what they recorded
with no model at all (issue 36, item 4: replay)."""

from django.conf import settings

from agents_app.approvals.decisions import approval_decide
from agents_app.core.events import EventType
from agents_app.models import Approval, AuditInterface, Run, RunEvent, Task
from agents_app.runs.replays import run_replay
from agents_app.runs.services import run_cancel, run_create
from agents_app.worker import execution
from agents_app.worker.execution import execute_run
from agents_app.worker.replaying import execute_replay
from tests.support.approvals import asking_script, make_tool_ask
from tests.support.runs import make_run
from tests.support.script import json_reply, plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry
from tools_app.builtin import register_builtin_tools
from tools_app.process_registry import get_registry
from tools_app.registry import ToolRegistry

NOTES_TASK = "Write notes.txt saying hello, then read it back"


def notes_script() -> list[dict]:
    """Two steps with the builtin file tools: write notes.txt, read it back; then the verdict."""
    return [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_reply(
                    step("write notes.txt", ["write_file"]),
                    step("read notes.txt back", ["read_file"], [0]),
                )
            ],
        },
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                tool_call("write_file", path="notes.txt", content="hello"),
                {"content": "wrote notes.txt"},
            ],
        },
        {
            "match": "AGENTDESK:STEP 1",
            "replies": [tool_call("read_file", path="notes.txt"), {"content": "it says hello"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "hello", evidence=[1, 2])]},
    ]


def recorded(owner, script: list[dict], text: str = NOTES_TASK, *, registry=None) -> Run:
    """A planned run of `owner`'s executed to its end from `script`, with the builtin tools."""
    run = make_run(owner, text, fast_path=False)
    execute_run(run.pk, provider=ScriptedProvider(script), registry=registry or get_registry())
    run.refresh_from_db()
    return run


def no_model(monkeypatch) -> None:
    """Any attempt to build a provider that talks to a model fails the test."""

    def refuse(run):
        raise AssertionError(f"run {run.pk} asked for a model")

    monkeypatch.setattr(execution, "provider_for_run", refuse)


def replayed(source: Run, *, rerun=None, registry=None) -> Run:
    """A replay of `source` executed to its end in this process."""
    replay = run_replay(
        run=source, actor=source.owner, interface=AuditInterface.API, rerun=rerun, admit=False
    )
    return execute_replay(replay.pk, registry=registry or get_registry())


def loopback_registry() -> ToolRegistry:
    """The builtin tools, http_get allowed to reach loopback (tests.support.site)."""
    registry = ToolRegistry()
    register_builtin_tools(
        registry,
        file_max_bytes=settings.FILE_TOOL_MAX_BYTES,
        http_max_bytes=settings.HTTP_TOOL_MAX_BYTES,
        http_timeout=5,
        http_allow_private=True,
    )
    return registry


def fetch_script(url: str) -> list[dict]:
    """One step that fetches `url` with http_get, then says so; the verifier accepts."""
    return [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("fetch the page", ["http_get"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [tool_call("http_get", url=url), {"content": "it says hello"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "hello", evidence=[1])]},
    ]


def divergences(run: Run) -> list[dict]:
    events = RunEvent.objects.filter(run=run, type=EventType.REPLAY_DIVERGED).order_by("seq")
    return [event.payload for event in events]


def replan_script() -> list[dict]:
    """A plan of one write; the verifier asks for a new plan; the second plan writes and reads
    back; the verifier accepts."""
    return [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_reply(step("write notes.txt", ["write_file"])),
                plan_reply(
                    step("write notes.txt again", ["write_file"]),
                    step("read it back", ["read_file"], [0]),
                ),
            ],
        },
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [
                tool_call("write_file", path="notes.txt", content="hi"),
                {"content": "wrote hi"},
                tool_call("write_file", path="notes.txt", content="hello"),
                {"content": "wrote hello"},
            ],
        },
        {
            "match": "AGENTDESK:STEP 1",
            "replies": [tool_call("read_file", path="notes.txt"), {"content": "it says hello"}],
        },
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [
                verdict(False, "it should say hello", replan=True),
                verdict(True, "hello", evidence=[2, 3]),
            ],
        },
    ]


def replayed_tree(source: Run, *, registry) -> Run:
    """A replay of `source` (a team's head node) executed in this process, its children too."""
    replay = run_replay(run=source, actor=source.owner, interface=AuditInterface.API, admit=False)
    return execute_replay(replay.pk, registry=registry)


def _split(*subtasks: str) -> dict:
    found = [{"description": text, "depends_on": []} for text in subtasks]
    return json_reply({"pattern": "parallel", "subtasks": found, "reasoning": "split"})


def _direct(answer: str, marker: str) -> dict:
    return {"match": ["AGENTDESK:DIRECT", marker], "replies": [{"content": answer}]}


TEAM_RULES = [
    {
        "match": "AGENTDESK:TEAM",
        "replies": [
            _split(
                "Research the existing parsers and explore their docs",
                "Implement the parser function in parser.py",
            )
        ],
    },
    _direct("Three parsers exist: a, b and c.", "Research the existing"),
    _direct("parser.py is written.", "Implement the parser"),
]


def recorded_team(owner, registry=None) -> Run:
    """A team's run (two children, each answering directly) recorded in this process."""
    head = run_create(
        task=Task.objects.create(
            owner=owner, text="Research the topic and implement the tool", team=True
        )
    )
    provider = ScriptedProvider(TEAM_RULES)
    for _ in range(5):
        for run in Run.objects.filter(root_id=head.pk).order_by("pk"):
            if not run.is_terminal:
                execute_run(run.pk, provider=provider, registry=registry or make_registry())
        execute_run(head.pk, provider=provider, registry=registry or make_registry())
        head.refresh_from_db()
        if head.is_terminal:
            break
    return head


def decided(owner, decision: str) -> Run:
    """A run whose write_file call asked, `decision` taken by its owner, run to its end."""
    make_tool_ask()
    run = make_run(owner, "Leave a note", fast_path=False)
    provider = ScriptedProvider(asking_script())
    execute_run(run.pk, provider=provider, registry=get_registry())
    approval = Approval.objects.get(run=run)
    approval_decide(
        approval_id=approval.pk, decision=decision, actor=owner, interface=AuditInterface.API
    )
    execute_run(run.pk, provider=provider, registry=get_registry())
    run.refresh_from_db()
    return run


def stopped(owner) -> Run:
    run = make_run(owner, "Write notes.txt saying hello, then read it back", fast_path=False)

    class StoppedAfterStep1(ScriptedProvider):
        def complete(self, request):
            answer = super().complete(request)
            if "AGENTDESK:STEP 0" in request.messages[0]["content"] and not answer.tool_calls:
                run_cancel(run=run, actor=owner, interface=AuditInterface.API)
            return answer

    execute_run(run.pk, provider=StoppedAfterStep1(notes_script()), registry=get_registry())
    run.refresh_from_db()
    return run

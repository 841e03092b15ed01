"""A team run driven through the database in this process, each run's delivery performed by
hand in the order a worker pool could perform them: the head node splits the task, parks in
waiting_children, each child is its own run on its profile, its envelope goes back, and the
child whose end lets the head node go on queues it. The same on a real worker pool:
test_team_on_workers.py."""

import pytest

from agents_app.models import AgentMessage, Run, RunEvent, Step, Task
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tests.support.script import json_reply, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.teams import start_team
from tests.support.tools import EchoTool, FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def team_run(owner, text="Research the topic and implement the tool", **task) -> Run:
    return run_create(task=Task.objects.create(owner=owner, text=text, team=True, **task))


def split(pattern: str, *subtasks: dict) -> dict:
    return json_reply({"pattern": pattern, "subtasks": list(subtasks), "reasoning": "split"})


def sub(description: str, depends_on=(), preferred: str = "", micro=None) -> dict:
    found = {"description": description, "depends_on": list(depends_on)}
    if preferred:
        found["preferred_profile"] = preferred
    if micro:
        found["micro"] = micro
    return found


def direct(answer: str, marker: str) -> dict:
    """A child's one direct step answering `answer` when its task holds `marker`."""
    return {"match": ["AGENTDESK:DIRECT", marker], "replies": [{"content": answer}]}


def deliver(run_id: int, rules, registry=None) -> Run:
    """One delivery of the run; `rules` a script (each delivery starts it afresh) or a
    ScriptedProvider (its script goes on where the last delivery left it)."""
    provider = rules if isinstance(rules, ScriptedProvider) else ScriptedProvider(rules)
    execute_run(run_id, provider=provider, registry=registry or make_registry())
    return Run.objects.get(pk=run_id)


@pytest.mark.dialect
def test_a_parallel_team_splits_delegates_by_the_matrix_and_aggregates(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [
                split(
                    "parallel",
                    sub("Research the existing parsers and explore their docs"),
                    sub("Implement the parser function in parser.py"),
                )
            ],
        },
        direct("Three parsers exist: a, b and c.", "Research the existing"),
        direct("parser.py is written.", "Implement the parser"),
    ]
    head = team_run(owner)
    assert head.kind == "team" and head.profile.name == "head_node"

    head = deliver(head.pk, rules)

    assert head.status == "waiting_children" and head.lease_owner == ""
    children = list(Run.objects.filter(parent=head).order_by("parent_step__index"))
    assert [(c.kind, c.profile.name, c.depth, c.root_id) for c in children] == [
        ("child", "research_agent", 1, head.pk),
        ("child", "builder_agent", 1, head.pk),
    ]
    assert queued_runs == [c.pk for c in children]
    assert [s.status for s in Step.objects.filter(run=head)] == ["running", "running"]
    assert children[0].task.persona == seeded_profiles["research_agent"].persona

    first = deliver(children[0].pk, rules)
    assert first.status == "succeeded"
    assert first.envelope["summary"] == "Three parsers exist: a, b and c."
    head.refresh_from_db()
    assert head.status == "waiting_children"  # the other child still works
    assert queued_runs == [c.pk for c in children]

    deliver(children[1].pk, rules)
    head.refresh_from_db()
    assert head.status == "running" and queued_runs[-1] == head.pk  # the last child queued it

    head = deliver(head.pk, rules)
    assert head.status == "succeeded", (head.error_code, head.error_message)
    assert head.final_response.index("Three parsers") < head.final_response.index("parser.py")
    assert f"run {children[0].pk}" in head.final_response
    for child, name in zip(children, ("research_agent", "builder_agent"), strict=True):
        assignment = AgentMessage.objects.get(recipient=child, type="task_assignment")
        said = [
            (m.type, m.from_agent, m.to_agent, m.payload.get("lifecycle", ""))
            for m in AgentMessage.objects.filter(correlation_id=assignment.correlation_id)
        ]
        assert said == [
            ("task_assignment", "head_node (head)", name, ""),
            ("status_response", name, "head_node (head)", "active"),
            ("task_result", name, "head_node (head)", ""),
            ("context_update", name, "head_node (head)", ""),
        ]
    head.refresh_from_db()
    assert head.shared["intermediate_results"] == {
        "0": {"child_run_id": children[0].pk, "summary": "Three parsers exist: a, b and c."},
        "1": {"child_run_id": children[1].pk, "summary": "parser.py is written."},
    }
    assert [(d["subtask"], d["profile"]) for d in head.shared["decisions"]] == [
        (0, "research_agent"),
        (1, "builder_agent"),
    ]
    events = list(RunEvent.objects.filter(run=head).values_list("type", flat=True))
    assert events.count("child_started") == 2 and events.count("child_finished") == 2


def test_a_pipeline_passes_each_envelope_to_the_next_child(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [
                split(
                    "pipeline",
                    sub("Research the options"),
                    sub("Review the options found and pick one"),
                )
            ],
        },
        direct("Option A and option B.", "Research the options"),
        direct("Pick A.", "Review the options"),
    ]
    head = deliver(team_run(owner).pk, rules)
    (first,) = Run.objects.filter(parent=head)
    deliver(first.pk, rules)
    head = deliver(head.pk, rules)  # woken: starts the second subtask
    assert head.status == "waiting_children"
    second = Run.objects.filter(parent=head).exclude(pk=first.pk).get()
    assert second.profile.name == "synthesis_agent"  # review: the matrix's primary
    assert second.task.context["depends_on"] == [
        {
            "subtask": 0,
            "child_run_id": first.pk,
            "summary": "Option A and option B.",
            "artifacts": [],
        }
    ]
    deliver(second.pk, rules)
    head = deliver(head.pk, rules)
    assert head.status == "succeeded"


def test_a_micro_agent_inherits_the_tools_but_waiting_ones_and_ends_with_finish_task(
    owner, seeded_profiles, queued_runs
):
    echo = EchoTool()
    registry = make_registry(echo, FinishTool())
    micro = {"persona": "You are a terse checker.", "exclude_actions": ["echo"], "max_steps": 3}
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Check the list", micro=micro))],
        },
        {
            "match": "You are a terse checker.",
            "replies": [tool_call("finish_task", result="the list is fine")],
        },
    ]
    head = deliver(team_run(owner).pk, rules, registry)
    (child,) = Run.objects.filter(parent=head)
    assert child.kind == "micro" and child.profile is None
    assert child.task.allowed_tools == ["finish_task"]  # echo excluded, finish_task always
    assert child.task.context["max_steps"] == 3
    child = deliver(child.pk, rules, registry)
    assert child.status == "succeeded", (child.error_code, child.error_message)
    assert child.envelope["summary"] == "the list is fine"
    head = deliver(head.pk, rules, registry)
    assert head.status == "succeeded"
    assert "the list is fine" in head.final_response


def test_cancelling_the_head_node_cancels_its_children(
    owner, seeded_profiles, queued_runs, settings
):
    from agents_app.runs.services import run_cancel

    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Research a"), sub("Research b"))],
        }
    ]
    head = deliver(team_run(owner).pk, rules)
    run_cancel(run=head, actor=owner, interface="web")
    head.refresh_from_db()
    assert head.status == "cancelled"
    children = Run.objects.filter(parent=head)
    assert sorted(children.values_list("status", flat=True)) == ["cancelled", "cancelled"]
    from agents_app.models import AuditEvent

    audited = AuditEvent.objects.filter(action="run.cancel", run__in=children)
    assert sorted(audited.values_list("interface", flat=True)) == ["worker", "worker"]


def test_a_head_node_whose_close_policy_is_finish_lets_its_children_finish(
    owner, seeded_profiles, queued_runs, settings
):
    from agents_app.runs.services import run_cancel

    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Research a"), sub("Research b"))],
        },
        direct("a is done.", "Research a"),
        direct("b is done.", "Research b"),
    ]
    task = Task.objects.create(owner=owner, text="Find out two things", team=True)
    head = deliver(run_create(task=task, close_policy="finish").pk, rules)
    children = list(Run.objects.filter(parent=head).order_by("pk"))
    assert [c.close_policy for c in children] == ["finish", "finish"]  # inherited

    run_cancel(run=head, actor=owner, interface="web")
    head.refresh_from_db()
    assert head.status == "cancelled"
    assert [c.status for c in Run.objects.filter(parent=head)] == ["queued", "queued"]
    queued_runs.clear()
    for child in children:
        assert deliver(child.pk, rules).status == "succeeded"

    # Their results are kept, as envelopes and messages; the ended head node is not woken.
    head.refresh_from_db()
    assert head.status == "cancelled" and queued_runs == []
    assert AgentMessage.objects.filter(recipient=head, type="task_result").count() == 2
    assert [Run.objects.get(pk=c.pk).envelope["summary"] for c in children] == [
        "a is done.",
        "b is done.",
    ]


def test_a_team_with_no_agent_profile_fails_clearly_instead_of_waiting(
    owner, queued_runs, settings
):
    from agents_app.models import AgentProfile

    AgentProfile.objects.all().delete()  # staff deleted every profile
    settings.AGENT_MAX_REPLANS = 0
    rules = [{"match": "AGENTDESK:TEAM", "replies": [split("parallel", sub("Research a"))]}]
    head = deliver(team_run(owner).pk, rules)

    assert (head.status, head.error_code) == ("failed", "CHILD_FAILED")
    assert "there is no agent profile" in head.error_message
    assert not Run.objects.filter(parent=head).exists() and queued_runs == []
    refused = RunEvent.objects.get(run=head, type="delegation_refused")
    assert refused.payload == {"index": 0, "reason": "there is no agent profile"}


@pytest.mark.dialect
def test_the_same_delegation_of_a_subtask_done_before_is_refused(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    settings.AGENT_MAX_REPLANS = 1
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("iterative", sub("Research a", preferred="research_agent"))],
            "repeat": True,
        },
        direct("a is done", "Research a"),
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [json_reply({"task_complete": False, "reasoning": "not yet"})],
        },
    ]
    model = ScriptedProvider(rules)
    head = deliver(team_run(owner).pk, model)
    (child,) = Run.objects.filter(parent=head)
    deliver(child.pk, model)
    head = deliver(head.pk, model)
    # Judged not done, the head node splits again, gets the same delegation back and refuses
    # it: its child did it already (a subtask whose child failed is tried again instead:
    # test_weak_splits.py).
    assert head.status == "failed" and head.error_code == "CHILD_FAILED"
    assert Run.objects.filter(parent=head).count() == 1
    refused = RunEvent.objects.get(run=head, type="delegation_refused").payload
    assert (
        refused["reason"]
        == f"research_agent was given this subtask before (run {child.pk}, succeeded)"
    )


def test_a_childs_approval_pauses_only_its_branch(
    owner, seeded_profiles, queued_runs, settings, send
):
    from agents_app.approvals.decisions import approval_decide
    from agents_app.models import Approval

    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    registry = make_registry(send, FinishTool())
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [
                split("parallel", sub("Research and send ann the note"), sub("Research b"))
            ],
        },
        {
            "match": ["AGENTDESK:DIRECT", "send ann", '"sent"'],
            "replies": [{"content": "note sent"}],
        },
        {
            "match": ["AGENTDESK:DIRECT", "send ann"],
            "replies": [tool_call("send", to="ann", text="the note")],
        },
        direct("b is done", "Research b"),
    ]
    head = deliver(team_run(owner).pk, rules, registry)
    asking, other = Run.objects.filter(parent=head).order_by("parent_step__index")

    asking = deliver(asking.pk, rules, registry)
    assert asking.status == "waiting_approval"
    approval = Approval.objects.get(run=asking, status="pending")
    assert approval.owner_id == owner.pk  # in its owner's approvals queue
    other = deliver(other.pk, rules, registry)
    assert other.status == "succeeded"  # the other branch went on
    head.refresh_from_db()
    assert head.status == "waiting_children"  # the head node waits for the asking branch only
    assert send.calls == []
    lifecycles = AgentMessage.objects.filter(sender=asking, type="status_response")
    assert [m.payload["lifecycle"] for m in lifecycles] == ["active", "paused"]

    approval_decide(approval_id=approval.pk, decision="approve", actor=owner, interface="web")
    asking = deliver(asking.pk, rules, registry)
    assert asking.status == "succeeded", (asking.error_code, asking.error_message)
    assert send.calls == [{"to": "ann", "text": "the note"}]
    head = deliver(head.pk, rules, registry)
    assert head.status == "succeeded"


@pytest.mark.dialect
def test_a_timed_out_child_is_tried_again_with_twice_the_time(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {"match": "AGENTDESK:TEAM", "replies": [split("parallel", sub("Research a"))]},
        # The try after the timeout is told it has twice as long.
        {"match": ["AGENTDESK:DIRECT", "twice as long"], "replies": [{"content": "a is done"}]},
        {"match": "AGENTDESK:DIRECT", "replies": [{"raise": "REQUEST_TIMEOUT"}]},
    ]
    head = deliver(team_run(owner, max_seconds=100).pk, rules)
    (first,) = Run.objects.filter(parent=head)
    first = deliver(first.pk, rules)
    assert (first.status, first.error_code) == ("failed", "REQUEST_TIMEOUT")
    head.refresh_from_db()
    assert head.status == "waiting_children"  # not woken: the step is tried again
    second = Run.objects.filter(parent=head).exclude(pk=first.pk).get()
    assert second.parent_step_id == first.parent_step_id
    assert second.task.max_seconds == 2 * first.task.max_seconds
    assert "twice as long" in second.task.context["last_try"]
    retried = RunEvent.objects.get(run=head, type="child_retried").payload
    assert (retried["recovery"], retried["retry"], retried["limit"]) == ("timeout", 1, 2)

    deliver(second.pk, rules)
    head = deliver(head.pk, rules)
    assert head.status == "succeeded" and "a is done" in head.final_response


RETRY_NOTE = (
    "The last try failed: INVALID_RESPONSE: scripted failure. Keep exactly to the format asked."
)


@pytest.mark.dialect
def test_past_the_tables_limit_the_team_fails_with_the_childs_error(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    settings.AGENT_MAX_REPLANS = 0
    rules = [
        {"match": "AGENTDESK:TEAM", "replies": [split("parallel", sub("Research a"))]},
        {"match": "AGENTDESK:DIRECT", "replies": [{"raise": "INVALID_RESPONSE"}], "repeat": True},
    ]
    head = deliver(team_run(owner).pk, rules)
    for _ in range(3):  # the first try and invalid output's two retries
        child = Run.objects.filter(parent=head, status="queued").get()
        assert "Keep exactly to the format" in child.task.context.get(
            "last_try", "Keep exactly to the format"
        )
        deliver(child.pk, rules)
    head.refresh_from_db()
    assert head.status == "running"  # woken: nothing is left to try
    head = deliver(head.pk, rules)
    assert (head.status, head.error_code) == ("failed", "CHILD_FAILED")
    assert head.error_message.startswith("subtask 0 failed: INVALID_RESPONSE")
    assert Run.objects.filter(parent=head).count() == 3


@pytest.mark.dialect
def test_pausing_a_team_pauses_its_children_and_resuming_lets_them_go_on(
    owner, seeded_profiles, queued_runs, settings
):
    from agents_app.models import AuditEvent, KillSwitch
    from agents_app.runs.control import kill_switch_set
    from agents_app.runs.services import run_pause, run_resume

    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {"match": "AGENTDESK:TEAM", "replies": [split("parallel", sub("Research a"))]},
        direct("a is done", "Research a"),
    ]
    head = deliver(team_run(owner).pk, rules)
    (child,) = Run.objects.filter(parent=head)

    run_pause(run=head, actor=owner, interface="web")
    head.refresh_from_db()
    child.refresh_from_db()
    assert (head.status, head.resume_status) == ("paused", "running")
    assert (child.status, child.resume_status) == ("paused", "queued")
    assert deliver(child.pk, rules).status == "paused"  # a delivery does not unpause it
    # The kill switch's release leaves what a person paused alone.
    kill_switch_set(engaged=True, actor=owner, interface="admin")
    kill_switch_set(engaged=False, actor=owner, interface="admin")
    assert not KillSwitch.is_engaged()
    assert Run.objects.get(pk=child.pk).status == "paused"

    run_resume(run=head, actor=owner, interface="web")
    head.refresh_from_db()
    assert head.status == "running" and not head.pause_requested
    child = deliver(child.pk, rules)
    assert child.status == "succeeded", (child.error_code, child.error_message)
    head = deliver(head.pk, rules)
    assert head.status == "succeeded"
    actions = list(
        AuditEvent.objects.filter(action__startswith="run.p").values_list("action", "run_id")
    )
    assert sorted(actions) == sorted([("run.pause", head.pk), ("run.pause", child.pk)])
    lifecycles = AgentMessage.objects.filter(sender=child, type="status_response")
    assert [m.payload["lifecycle"] for m in lifecycles] == ["paused", "idle", "active"]


def named_echo(name: str):
    """An echo tool under another name (a waiting action, a second tool)."""
    from dataclasses import replace

    tool = EchoTool()
    tool.spec = replace(EchoTool.spec, name=name)
    return tool


@pytest.mark.parametrize(
    ("micro", "tools"),
    [
        # Inherited: every tool of the parent but the waiting ones, and finish_task.
        ({}, ["echo", "shout", "finish_task"]),
        # Restricted to the actions named (a waiting one stays out), finish_task added.
        ({"available_actions": ["shout", "wait"]}, ["shout", "finish_task"]),
        # Excluded: the rest.
        ({"exclude_actions": ["shout"]}, ["echo", "finish_task"]),
        # Both.
        (
            {"available_actions": ["echo", "shout"], "exclude_actions": ["echo"]},
            ["shout", "finish_task"],
        ),
    ],
)
def test_a_micro_agents_tools_are_inherited_restricted_and_excluded(
    owner, seeded_profiles, queued_runs, micro, tools
):
    registry = make_registry(EchoTool(), named_echo("shout"), named_echo("wait"), FinishTool())
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Check it", micro={"persona": "Checker.", **micro}))],
        }
    ]
    head = deliver(team_run(owner).pk, rules, registry)
    (child,) = Run.objects.filter(parent=head)
    assert sorted(child.task.allowed_tools) == sorted(tools)
    provider = ScriptedProvider(
        [{"match": "Checker.", "replies": [tool_call("finish_task", result="ok")]}]
    )
    execute_run(child.pk, provider=provider, registry=registry)
    child.refresh_from_db()
    assert child.status == "succeeded"
    # What the model was offered, and that it spoke as the persona.
    (request,) = provider.requests
    assert sorted(t.name for t in request.tools) == sorted(tools)
    assert request.messages[0]["content"].startswith("Checker.")


def test_a_sequential_team_starts_each_subtask_after_the_one_before(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            # No dependencies given: sequential makes each depend on the one before.
            "replies": [
                split("sequential", sub("Research a"), sub("Research b"), sub("Research c"))
            ],
        },
        direct("a found", "Research a"),
        direct("b found", "Research b"),
        direct("c found", "Research c"),
    ]
    head = deliver(team_run(owner).pk, rules)
    order = []
    for _ in range(3):
        (working,) = Run.objects.filter(parent=head, status="queued")
        order.append(working.task.text)
        deliver(working.pk, rules)
        head = deliver(head.pk, rules)
    assert order == ["Research a", "Research b", "Research c"]
    assert head.status == "succeeded"
    assert [s.depends_on for s in Step.objects.filter(run=head).order_by("index")] == [[], [0], [1]]


def test_an_iterative_team_is_judged_and_refined_then_done(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [
                split("iterative", sub("Draft the summary")),
                split("iterative", sub("Draft the summary again, shorter")),
            ],
        },
        direct("a long draft", "Draft the summary again"),
        direct("a long draft", "Draft the summary"),
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [
                json_reply({"task_complete": False, "reasoning": "too long"}),
                json_reply({"task_complete": True, "reasoning": "ok", "response": "Short now."}),
            ],
        },
    ]
    model = ScriptedProvider(rules)
    head = deliver(team_run(owner).pk, model)
    for _ in range(2):
        (working,) = Run.objects.filter(parent=head, status="queued")
        deliver(working.pk, model)
        # Judged: the first time refined (a new split, its child started), then done.
        head = deliver(head.pk, model)
    assert head.status == "succeeded", (head.error_code, head.error_message)
    assert head.final_response.startswith("Short now.")
    assert head.replans == 1 and head.replan_reason == "too long"
    assert Run.objects.filter(parent=head).count() == 2
    types = list(RunEvent.objects.filter(run=head).values_list("type", flat=True))
    assert types.count("verification") == 2 and types.count("plan_created") == 2


def test_childrens_results_past_the_head_nodes_context_budget_are_cut_and_it_says_so(
    owner, seeded_profiles, queued_runs, settings
):
    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    settings.TEAM_CONTEXT_TOKENS = 80
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Research the parsers"), sub("Implement it"))],
        },
        direct("The parsers: " + "a, " * 200, "Research the parsers"),
        direct("The parser: " + "b, " * 200, "Implement it"),
    ]
    head = deliver(team_run(owner).pk, rules)
    for child in Run.objects.filter(parent=head).order_by("parent_step__index"):
        deliver(child.pk, rules)
    head = deliver(head.pk, rules)

    assert head.status == "succeeded", (head.error_code, head.error_message)
    tokens = sum(c.envelope["summary_tokens"] for c in Run.objects.filter(parent=head))
    trimmed = RunEvent.objects.get(run=head, type="envelopes_trimmed").payload
    assert trimmed == {"tokens": tokens, "budget": 80, "children": 2} and tokens > 80


def test_a_subtask_whose_preferred_profile_is_at_its_limit_waits_for_it_and_says_so(
    owner, seeded_profiles, queued_runs, settings
):
    research = seeded_profiles["research_agent"]
    research.concurrency_limit = 1
    research.save(update_fields=["concurrency_limit"])
    _, (working,) = start_team(owner, [("Research the lexers", research)])
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Research the parsers", preferred="research_agent"))],
        },
    ]

    head = deliver(team_run(owner).pk, rules)

    assert head.status == "waiting_children" and not Run.objects.filter(parent=head).exists()
    assert Run.objects.get(pk=working.pk).status == "queued"  # the one place it has
    queued = RunEvent.objects.get(run=head, type="subtask_queued").payload
    assert queued == {
        "index": 0,
        "reason": "the preferred profile is at its limit",
        "waiting_for": "research_agent",
    }

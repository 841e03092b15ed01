"""The engine driven through the database with an in-process scripted LLM (no Celery)."""

import re

import pytest

from agents_app.models import Run, RunEvent, Step, ToolCall
from agents_app.worker.execution import execute_run
from tests.support.runs import decisions_made, executor_of, make_run
from tests.support.script import json_reply, llm_error, plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry
from tools_app.registry import SideEffects, Tool, ToolResult, ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)


def run_with(owner, rules, registry=None, **run_kwargs):
    return run_with_id(make_run(owner, **run_kwargs), rules, registry)


def run_with_id(run, rules, registry=None):
    provider = ScriptedProvider(rules)
    outcome = execute_run(run.pk, provider=provider, registry=registry or make_registry())
    run.refresh_from_db()
    return run, provider, outcome


def event_types(run):
    return list(RunEvent.objects.filter(run=run).values_list("type", flat=True))


@pytest.mark.dialect
def test_a_run_plans_executes_and_succeeds(owner):
    echo = EchoTool()
    run, _, outcome = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("say hi", ["echo"]), step("summarise", [], [0]))],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [tool_call("echo", text="hi"), {"content": "said hi"}],
            },
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "summary"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "all good", evidence=[1])]},
        ],
        registry=make_registry(echo, FinishTool()),
    )
    assert outcome.state == "finished"
    assert run.status == "succeeded"
    assert run.final_response == "all good"
    assert echo.calls == ["hi"]
    assert [s.status for s in Step.objects.filter(run=run)] == ["completed", "completed"]
    call = ToolCall.objects.get(run=run)
    assert (call.tool, call.status, call.result) == ("echo", "succeeded", {"echo": "hi"})
    assert run.tool_calls_made == 1
    assert run.prompt_tokens > 0 and run.lease_owner == ""
    types = event_types(run)
    assert types[0] == "run_queued" and types[-1] == "result"
    for expected in [
        "plan_created",
        "step_started",
        "tool_call",
        "tool_result",
        "step_completed",
        "progress_update",
        "verification",
    ]:
        assert expected in types
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_malformed_plan_is_retried_once_with_the_error_shown(owner):
    run, provider, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [{"content": "here is my plan: steps!"}, plan_reply(step("think"))],
            },
            {"match": "AGENTDESK:STEP", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )
    assert run.status == "succeeded"
    second_plan_request = provider.requests[1]
    assert "not valid" in second_plan_request.messages[-1]["content"]


def test_two_malformed_plans_fail_as_planning_failed(owner):
    run, _, _ = run_with(
        owner, [{"match": "AGENTDESK:PLAN", "replies": [{"content": "no json"}], "repeat": True}]
    )
    assert run.status == "failed"
    assert run.error_code == "PLANNING_FAILED"
    assert "error" in event_types(run)


def test_a_plan_naming_an_unknown_tool_is_refused(owner):
    run, provider, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("x", ["no_such_tool"]))],
                "repeat": True,
            }
        ],
    )
    assert run.error_code == "PLANNING_FAILED"
    assert "no_such_tool" in provider.requests[1].messages[-1]["content"]


def test_a_tool_failure_fails_the_step_and_skips_its_dependents(owner):
    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(step("break", ["broken"]), step("after", [], [0]), step("other"))
                ],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("broken")]},
            {"match": "AGENTDESK:STEP 2", "replies": [{"content": "independent work"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, replan=False)]},
        ],
    )
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [s.status for s in steps] == ["failed", "skipped", "completed"]
    assert "the service said no" in steps[0].error
    assert ToolCall.objects.get(run=run).status == "failed"
    assert run.status == "failed" and run.error_code == "VERIFICATION_FAILED"


def test_invalid_tool_arguments_fail_the_step(owner):
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("echo", ["echo"]))]},
            {"match": "AGENTDESK:STEP", "replies": [tool_call("echo", text=5)]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False)]},
        ],
    )
    step_row = Step.objects.get(run=run)
    assert step_row.status == "failed" and step_row.error.startswith("INVALID_ARGUMENTS")


def test_a_verifier_asking_to_replan_makes_a_new_plan_version(owner):
    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("first try")), plan_reply(step("second try"))],
            },
            {"match": "AGENTDESK:STEP", "replies": [{"content": "meh"}, {"content": "great"}]},
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(False, replan=True), verdict(True, "done twice")],
            },
        ],
    )
    assert run.status == "succeeded" and run.replans == 1
    assert list(run.plans.values_list("version", flat=True)) == [1, 2]
    assert "replanned" in event_types(run)


def test_replans_stop_after_the_maximum(owner, settings):
    settings.AGENT_MAX_REPLANS = 2
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("try"))], "repeat": True},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "meh"}], "repeat": True},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, replan=True)], "repeat": True},
        ],
    )
    assert run.status == "failed" and run.error_code == "VERIFICATION_FAILED"
    assert run.replans == 2 and run.plans.count() == 3


def test_finish_task_skips_the_remaining_steps(owner):
    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("finish", ["finish_task"]), step("never"))],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("finish_task", result="42")]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "")]},
        ],
    )
    assert run.status == "succeeded" and run.final_response == "42"
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "completed",
        "skipped",
    ]


def test_crossing_the_token_budget_ends_the_run_with_its_history(owner):
    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    {
                        **plan_reply(step("a"), step("b")),
                        "usage": {"prompt_tokens": 50, "completion_tokens": 10},
                    }
                ],
            },
            {
                "match": "AGENTDESK:STEP",
                "replies": [
                    {"content": "x", "usage": {"prompt_tokens": 100, "completion_tokens": 0}}
                ],
            },
        ],
        max_tokens=100,
    )
    assert run.status == "failed" and run.error_code == "BUDGET_EXCEEDED"
    assert run.total_tokens == 160
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "failed",
        "skipped",
    ]


def test_the_tool_call_budget_refuses_the_call_past_it(owner):
    echo = EchoTool()
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("echo twice", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="1"), tool_call("echo", text="2")],
            },
        ],
        registry=make_registry(echo),
        max_tool_calls=1,
    )
    assert run.error_code == "BUDGET_EXCEEDED"
    assert echo.calls == ["1"] and run.tool_calls_made == 1


def test_an_llm_failure_fails_the_run_with_its_code(owner):
    run, _, _ = run_with(
        owner, [{"match": "AGENTDESK:PLAN", "replies": [llm_error("RATE_LIMITED")]}]
    )
    assert run.status == "failed" and run.error_code == "RATE_LIMITED"


def test_a_cancel_request_stops_before_the_next_model_call(owner):
    def cancel_then_answer(request):
        Run.objects.filter(task__owner=owner).update(cancel_requested=True)
        return {"content": "step done"}

    run, provider, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("a"), step("b"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [cancel_then_answer]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "must not run"}]},
        ],
    )
    assert run.status == "cancelled"
    assert not any("AGENTDESK:STEP 1" in r.messages[0]["content"] for r in provider.requests)
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "completed",
        "skipped",
    ]


@pytest.mark.dialect
def test_a_resumed_run_continues_from_the_first_step_not_completed(owner):
    first = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("a"), step("b", depends_on=[0]))],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "a done"}]},
            {"match": "AGENTDESK:STEP 1", "replies": [llm_error("CONNECTION_REFUSED")]},
        ]
    )
    run = make_run(owner)
    execute_run(run.pk, provider=first, registry=make_registry())
    # Pretend the worker died in step 1 instead: put the run back as a crash would leave it.
    Run.objects.filter(pk=run.pk).update(status="running", error_code="", finished_at=None)
    Step.objects.filter(run=run, index=1).update(status="running", error="")
    second = ScriptedProvider(
        [
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "b done"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "ok")]},
        ]
    )
    execute_run(run.pk, provider=second, registry=make_registry())
    run.refresh_from_db()
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert run.status == "succeeded"
    assert [(s.status, s.retry_count) for s in steps] == [("completed", 0), ("completed", 1)]
    assert not any("AGENTDESK:STEP 0" in r.messages[0]["content"] for r in second.requests)


@pytest.mark.dialect
def test_a_step_taken_over_past_run_max_takeovers_fails_the_run(owner, settings):
    """Seed 001: a crashed worker's run resumes elsewhere, 3 times; the 4th interruption of
    the same step ends the run instead of handing the crash to worker after worker."""
    settings.RUN_MAX_TAKEOVERS = 3
    rules = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("a"))]},
        {"match": "AGENTDESK:STEP 0", "replies": [{"content": "a done"}], "repeat": True},
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "ok")]},
    ]

    def crashed_in_step_0(run, times_before):
        """The rows as a worker that died in step 0 leaves them, after `times_before`
        earlier takeovers of that step."""
        Run.objects.filter(pk=run.pk).update(status="running", finished_at=None)
        Step.objects.filter(run=run).update(status="running", retry_count=times_before)

    run = make_run(owner)
    execute_run(run.pk, provider=ScriptedProvider(rules), registry=make_registry())
    crashed_in_step_0(run, 2)
    execute_run(run.pk, provider=ScriptedProvider(rules), registry=make_registry())
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)  # the third: resumed
    assert Step.objects.get(run=run).retry_count == 3

    crashed_in_step_0(run, 3)
    again = ScriptedProvider(rules)
    execute_run(run.pk, provider=again, registry=make_registry())

    run.refresh_from_db()
    assert (run.status, run.error_code) == ("failed", "MAX_RETRIES_EXCEEDED")
    assert "interrupted 4 times" in run.error_message
    assert again.requests == []  # not tried a 4th time
    (step0,) = Step.objects.filter(run=run)
    assert step0.status == "failed" and step0.error.startswith("MAX_RETRIES_EXCEEDED")
    error = RunEvent.objects.filter(run=run, type="error").last()
    assert error.payload["details"] == {"step_index": 0, "interruptions": 4}


@pytest.mark.dialect
def test_a_run_leased_by_another_worker_is_left_alone(owner):
    from datetime import timedelta

    from django.utils import timezone

    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(
        lease_owner="someone-else", lease_expires_at=timezone.now() + timedelta(seconds=30)
    )
    provider = ScriptedProvider([{"match": "AGENTDESK", "replies": [{"content": "never"}]}])
    outcome = execute_run(run.pk, provider=provider, registry=make_registry())
    assert outcome.state == "busy" and 25 < outcome.retry_in <= 30
    assert provider.requests == []


def test_task_analysis_offers_the_planner_only_matching_tools(owner, settings):
    settings.AGENT_ANALYSIS_MIN_TOOLS = 2
    run, provider, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:ANALYZE",
                "replies": [json_reply({"capabilities": ["echo"], "domain": "nowhere"})],
            },
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say it", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="it"), {"content": "said"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(evidence=[1])]},
        ],
    )
    plan_prompt = next(r for r in provider.requests if "AGENTDESK:PLAN" in r.messages[0]["content"])
    # The tool list is in the user message, as data (issue 35: descriptions are a server's words).
    catalog = plan_prompt.messages[1]["content"]
    assert "- echo:" not in plan_prompt.messages[0]["content"]
    assert "- echo:" in catalog and "- finish_task:" in catalog and "- broken:" not in catalog
    analysis = RunEvent.objects.get(run=run, type="task_analysis").payload
    assert analysis["tools"] == ["echo", "finish_task"]
    assert run.status == "succeeded"


def test_a_failed_analysis_offers_every_tool(owner, settings):
    settings.AGENT_ANALYSIS_MIN_TOOLS = 2
    run, provider, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:ANALYZE", "replies": [llm_error("INVALID_RESPONSE")]},
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say it", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="it"), {"content": "said"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(evidence=[1])]},
        ],
    )
    plan_prompt = next(r for r in provider.requests if "AGENTDESK:PLAN" in r.messages[0]["content"])
    assert "- broken:" in plan_prompt.messages[1]["content"]
    assert RunEvent.objects.get(run=run, type="task_analysis").payload["tools"] == "all"
    assert run.status == "succeeded"


class WordyTool(Tool):
    """A tool whose description alone takes about 600 tokens of the model's context."""

    def __init__(self, name):
        self.spec = ToolSpec(
            name=name,
            description="lorem " * 400,
            input_schema={"type": "object", "properties": {}},
            capabilities=frozenset({"WORDY"}),
            domain="wordy",
        )

    def run(self, arguments, context):
        return ToolResult(ok=True, content="")


def test_an_analysis_cut_off_for_length_offers_the_tools_that_fit_the_context(owner, settings):
    settings.AGENT_ANALYSIS_MIN_TOOLS = 2
    settings.CHAT_CONTEXT_WINDOW, settings.LLM_MAX_TOKENS_PLAN = 2000, 200
    too_long = {"content": '{"capabilities": ["ec', "finish_reason": "length"}
    wordy = [WordyTool(f"wordy_{n}") for n in range(6)]
    run, provider, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:ANALYZE", "replies": [too_long], "repeat": True},
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say it", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP",
                "replies": [tool_call("echo", text="it"), {"content": "said"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(evidence=[1])]},
        ],
        registry=make_registry(*wordy, EchoTool(), FinishTool()),
        text="Echo the word it",
    )

    assert run.status == "succeeded"
    analysis = RunEvent.objects.get(run=run, type="task_analysis").payload
    assert analysis["error"].startswith("ANSWER_TOO_LONG")
    # The tool the task names, finish_task always, and of the rest what fits the window.
    offered = set(analysis["tools"])
    assert {"echo", "finish_task"} <= offered and 1 <= len(offered - {"echo", "finish_task"}) < 6
    plan_prompt = next(r for r in provider.requests if "AGENTDESK:PLAN" in r.messages[0]["content"])
    assert "- wordy_5:" not in plan_prompt.messages[0]["content"]


def test_few_tools_need_no_analysis(owner):
    run, provider, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )
    assert not any("AGENTDESK:ANALYZE" in r.messages[0]["content"] for r in provider.requests)
    assert not RunEvent.objects.filter(run=run, type="task_analysis").exists()


@pytest.mark.dialect
def test_recovery_queues_only_active_runs_that_no_worker_holds(owner, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.runs.control import runs_recover

    orphan, held, expired, done, paused = (make_run(owner) for _ in range(5))
    soon, past = timezone.now() + timedelta(seconds=30), timezone.now() - timedelta(seconds=1)
    Run.objects.filter(pk=held.pk).update(status="running", lease_owner="w", lease_expires_at=soon)
    Run.objects.filter(pk=expired.pk).update(
        status="running", lease_owner="w", lease_expires_at=past
    )
    Run.objects.filter(pk=done.pk).update(status="succeeded")
    Run.objects.filter(pk=paused.pk).update(status="paused")
    # The queued messages go to this session's own Redis queue, which no worker consumes here.
    assert sorted(runs_recover()) == sorted([orphan.pk, expired.pk])


@pytest.mark.dialect
def test_the_lease_sweep_queues_each_expired_lease_once_and_leaves_the_rest(owner):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.runs.control import leases_expired_requeue

    waiting, held, expired, done = (make_run(owner) for _ in range(4))
    soon, past = timezone.now() + timedelta(seconds=30), timezone.now() - timedelta(seconds=1)
    Run.objects.filter(pk=held.pk).update(status="running", lease_owner="w", lease_expires_at=soon)
    Run.objects.filter(pk=expired.pk).update(
        status="running", lease_owner="dead", lease_expires_at=past
    )
    Run.objects.filter(pk=done.pk).update(
        status="succeeded", lease_owner="x", lease_expires_at=past
    )
    # A queued run without a lease still has its message: it is not queued again. (The
    # messages go to this session's own Redis queue, which no worker consumes here.)
    assert leases_expired_requeue() == [expired.pk]
    assert leases_expired_requeue() == []  # the second sweep (another worker) finds none
    expired.refresh_from_db()
    # The frozen owner's renewals and fenced writes now fail: its lease is gone.
    assert (expired.lease_owner, expired.lease_expires_at) == ("", None)
    held.refresh_from_db()
    assert held.lease_owner == "w"


TWO_STEPS = [
    {
        "match": "AGENTDESK:PLAN",
        "replies": [plan_reply(step("gather the notes"), step("summarise them", [], [0]))],
    },
    {"match": "AGENTDESK:STEP 0", "replies": [{"content": "gathered three notes"}]},
    {"match": "AGENTDESK:STEP 1", "replies": [{"content": "a summary"}]},
    {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
]


def test_a_step_is_shown_the_steps_before_it_and_not_those_after(owner):
    _, provider, _ = run_with(owner, TWO_STEPS)

    def prompt(index):
        """The step's request: (system, user)."""
        marker = f"AGENTDESK:STEP {index}"
        request = next(r for r in provider.requests if marker in r.messages[0]["content"])
        return request.messages[0]["content"], request.messages[1]["content"]

    assert "Earlier steps" not in "".join(prompt(0))
    # Numbered from 1, as the pages number steps (issue 32, finding 5); in the user message.
    shown = prompt(1)[1].split("Earlier steps:")[1]
    assert "Step 1 (completed): gather the notes\nOutput: gathered three notes" in shown
    assert "Step 2 (" not in shown
    assert "gathered three notes" not in prompt(1)[0]


def test_a_late_step_is_shown_what_it_depends_on_and_the_last_steps_before_it(owner, settings):
    settings.AGENT_MAX_STEPS = 30
    steps = [step(f"part {i}") for i in range(23)] + [step("put it together", [], [0, 1])]
    rules = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(*steps)]},
        {"match": "AGENTDESK:STEP", "replies": [{"content": "did it"}], "repeat": True},
        {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
    ]
    run, provider, _ = run_with(owner, rules)
    assert run.status == "succeeded", run.error_message

    last = next(
        r.messages[1]["content"]
        for r in provider.requests
        if "AGENTDESK:STEP 23\n" in r.messages[0]["content"]
    )
    shown = last.split("Earlier steps:\n")[1]
    # Steps 0 and 1 (its dependencies) and the last 20 (3 to 22); step 2 is left out, and said to be.
    # Numbered from 1: the indexes 0, 1, then 3 to 22 (the step's own line, "Step 24:", follows).
    earlier = [line for line in shown.splitlines() if re.match(r"Step \d+ \(", line)]
    assert [int(line.split()[1]) for line in earlier] == [
        1,
        2,
        *range(4, 24),
    ]
    assert shown.startswith(
        "(1 of the steps before this one not shown: it does not depend on them)"
    )


def test_progress_updates_count_the_steps_done_out_of_the_plan(owner):
    run, _, _ = run_with(owner, TWO_STEPS)

    updates = RunEvent.objects.filter(run=run, type="progress_update").order_by("seq")
    progress = [
        (p["current_step"], p["total_steps"], p["percent"])
        for p in updates.values_list("payload", flat=True)
    ]

    assert progress == [(0, 2, 0), (1, 2, 50), (2, 2, 100)]


def test_an_unexpected_error_fails_the_run_as_an_internal_error_naming_it(owner):
    def provider_bug(request):
        raise RuntimeError("the provider has a bug")

    run, provider, outcome = run_with(
        owner,
        [
            # The planner would answer a second time: the run must not get there.
            {"match": "AGENTDESK:PLAN", "replies": [provider_bug, plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )

    assert outcome.state == "finished"
    assert (run.status, run.error_code) == ("failed", "INTERNAL_ERROR")
    assert run.error_message == "RuntimeError: the provider has a bug"
    assert len(provider.requests) == 1


@pytest.mark.dialect
def test_a_worker_whose_database_connection_dropped_between_tasks_reconnects(owner):
    from django.db import connection

    run = make_run(owner)
    # The database server closed the idle connection while the worker waited for its next task.
    connection.ensure_connection()
    connection.connection.close()

    execute_run(
        run.pk,
        provider=ScriptedProvider(TWO_STEPS),
        registry=make_registry(),
    )

    run.refresh_from_db()
    assert run.status == "succeeded"


def test_a_replan_shows_the_planner_the_first_2000_characters_of_each_step(owner):
    long_output = "y" * 1999 + "z" + "w" * 500
    _, provider, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("first try")), plan_reply(step("second try"))],
            },
            {"match": "AGENTDESK:STEP", "replies": [{"content": long_output}, {"content": "ok"}]},
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(False, replan=True), verdict(True, "done")],
            },
        ],
    )

    plans = [r for r in provider.requests if "AGENTDESK:PLAN" in r.messages[0]["content"]]
    asked = "\n".join(m["content"] for m in plans[1].messages)
    assert "Step 0 (completed): first try\n  " + "y" * 1999 + "z\n" in asked
    assert "zw" not in asked


@pytest.mark.parametrize("gone", [True, False], ids=["deleted", "ended"])
def test_a_delivery_of_a_run_that_is_gone_or_has_ended_does_nothing(owner, gone):
    run = make_run(owner)
    if gone:
        Run.objects.filter(pk=run.pk).delete()
    else:
        Run.objects.filter(pk=run.pk).update(status="succeeded")
    provider = ScriptedProvider([{"match": "AGENTDESK", "replies": [{"content": "never"}]}])

    outcome = execute_run(run.pk, provider=provider, registry=make_registry())

    assert outcome.state == "finished" and provider.requests == []


def test_a_worker_reads_the_kill_switch_again_once_it_moved_between_two_decisions(owner):
    from agents_app.runs.control import kill_switch_set

    run = make_run(owner)
    executor = executor_of(run)
    rows = executor.load()
    assert executor.state_of(rows, fresh=True).halted is False

    kill_switch_set(engaged=True, actor=owner, interface="admin")

    assert executor.state_of(rows, fresh=False).halted is True


def test_a_failure_to_let_waiting_runs_go_is_logged_with_its_traceback(monkeypatch, caplog):
    from django.db import DatabaseError

    from agents_app.worker import execution

    def blip(owner_id):
        raise DatabaseError("the database blinked")

    monkeypatch.setattr(execution, "admit_waiting", blip)

    execution.admit_waiting_quietly(7)

    (record,) = [r for r in caplog.records if r.name == execution.__name__]
    assert record.levelname == "WARNING" and "user 7's waiting runs" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is DatabaseError


def test_a_delivery_that_ends_its_run_lets_the_person_s_next_waiting_run_go(
    owner, settings, monkeypatch, caplog
):
    from agents_app.runs.services import task_submit

    settings.RUNS_RUNNING_PER_USER = 1
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:9/v1", "scripted"
    sent = []
    monkeypatch.setattr(
        "agents_app.runs.lifecycle.dispatch.send",
        lambda task, run_id, countdown=None: sent.append(run_id),
    )
    first = task_submit(owner=owner, interface="api", text="First", fast_path=True)
    second = task_submit(owner=owner, interface="api", text="Second")
    assert sent == [first.pk] and Run.objects.get(pk=second.pk).waiting_turn

    provider = ScriptedProvider([{"match": "AGENTDESK", "replies": [{"content": "Done."}]}])
    execute_run(first.pk, provider=provider, registry=make_registry())

    assert Run.objects.get(pk=first.pk).status == "succeeded"
    assert sent == [first.pk, second.pk] and not Run.objects.get(pk=second.pk).waiting_turn
    said = [r.getMessage() for r in caplog.records if r.name == "agents_app.worker.execution"]
    assert said == [f"let user {owner.pk}'s waiting runs go: [{second.pk}]"]


def test_reading_a_run_s_rows_again_brings_its_row_up_to_date(owner):

    run = make_run(owner)
    executor = executor_of(run)
    assert executor.load().run.cancel_requested is False
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)  # as another process would

    assert executor.load().run.cancel_requested is True


def test_a_run_with_a_persona_speaks_as_it_in_every_request(owner):
    from agents_app.models import Task

    run = make_run(owner, fast_path=True)
    Task.objects.filter(pk=run.task_id).update(persona="You are Ada, a terse reviewer.")

    _, provider, _ = run_with_id(run, [{"match": "AGENTDESK", "replies": [{"content": "Ok."}]}])

    assert provider.requests
    for request in provider.requests:
        assert request.messages[0]["content"].startswith("You are Ada, a terse reviewer.\n\n")


def test_every_event_of_a_delivery_is_sent_before_it_returns(owner, monkeypatch):
    from agents_app.core.publisher import PUBLISHER

    said = []
    submit, flush = PUBLISHER.submit, PUBLISHER.flush
    monkeypatch.setattr(PUBLISHER, "submit", lambda sends: said.append("handed") or submit(sends))
    monkeypatch.setattr(
        PUBLISHER, "flush", lambda *a, **kw: said.append(f"all sent: {flush(*a, **kw)}")
    )

    run_with(owner, [{"match": "AGENTDESK", "replies": [{"content": "Done."}]}], fast_path=True)

    assert "handed" in said and said[-1] == "all sent: True"


def test_finish_task_skips_only_the_steps_still_pending_after_it(owner):
    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(
                        step("break", ["broken"]),
                        step("finish", ["finish_task"]),
                        step("after", [], [0]),
                    )
                ],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("broken")]},
            {"match": "AGENTDESK:STEP 1", "replies": [tool_call("finish_task", result="42")]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "")]},
        ],
    )

    skipped = RunEvent.objects.filter(run=run, type="step_skipped")
    assert [e.payload["index"] for e in skipped] == [2]
    assert "did not complete" in skipped.get().payload["reason"]


def test_a_worker_reads_a_person_s_stop_again_once_it_was_signalled(owner):
    from agents_app.runs.services import run_cancel

    run = make_run(owner)
    executor = executor_of(run)
    rows = executor.load()
    assert executor.state_of(rows, fresh=True).cancel_requested is False

    run_cancel(run=run, actor=owner, interface="api")

    assert executor.state_of(rows, fresh=False).cancel_requested is True


def test_a_run_with_nothing_to_decide_stops_its_worker(owner):

    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(status="waiting_approval")
    executor = executor_of(run)

    assert executor.step_once() is False


def test_a_paused_run_remembers_the_status_it_goes_back_to(owner):
    from tests.support.runs import add_plan

    run = make_run(owner)
    add_plan(run, ["write it"])
    Run.objects.filter(pk=run.pk).update(pause_requested=True)

    run, _, _ = run_with_id(run, [])

    assert (run.status, run.resume_status) == ("paused", "running")
    paused = RunEvent.objects.filter(run=run, type="run_status").last().payload
    assert (paused["status"], paused["reason"]) == ("paused", "paused by request")


class MeanwhileTool(Tool):
    """A tool during whose call somebody else acts (`meanwhile`, called with the run's id)."""

    def __init__(self, meanwhile):
        self.spec = ToolSpec(
            name="meanwhile",
            description="Wait a moment.",
            input_schema={"type": "object", "properties": {}},
            capabilities=frozenset({"WAIT"}),
            domain="testing",
            side_effects=SideEffects.READ_ONLY,
        )
        self.meanwhile = meanwhile

    def run(self, arguments, context):
        self.meanwhile(context.run_id)
        return ToolResult(ok=True, content={"waited": True})


WAIT_THEN_STEP = [
    {
        "match": "AGENTDESK:PLAN",
        "replies": [plan_reply(step("wait", ["meanwhile"]), step("after", [], [0]))],
    },
    {"match": "AGENTDESK:STEP 0", "replies": [tool_call("meanwhile"), {"content": "waited"}]},
    {"match": "AGENTDESK:STEP 1", "replies": [{"content": "after"}]},
    {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
]


def test_the_kill_switch_engaged_during_a_step_pauses_the_run_before_the_next(owner):
    from agents_app.runs.control import kill_switch_set

    def engage(run_id):
        kill_switch_set(engaged=True, actor=owner, interface="admin")

    run, provider, _ = run_with(owner, WAIT_THEN_STEP, make_registry(MeanwhileTool(engage)))

    assert run.status == "paused" and run.resume_status == "running"
    paused = RunEvent.objects.filter(run=run, type="run_status").last().payload
    assert (paused["status"], paused["reason"]) == ("paused", "kill switch engaged")
    assert [s.status for s in Step.objects.filter(run=run).order_by("index")] == [
        "completed",
        "pending",
    ]
    assert not any("AGENTDESK:STEP 1" in r.messages[0]["content"] for r in provider.requests)


def test_a_pause_asked_during_a_step_s_last_answer_puts_back_the_step_its_end_began(owner):
    from agents_app.runs.services import run_pause

    run = make_run(owner)

    def pause_then_answer(request):
        # After the step's last checkpoint: its end begins the next step, then sees the pause.
        run_pause(run=Run.objects.get(pk=run.pk), actor=owner, interface="api")
        return {"content": "waited"}

    script = [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [plan_reply(step("wait"), step("after", [], [0]))],
        },
        {"match": "AGENTDESK:STEP 0", "replies": [pause_then_answer]},
        {"match": "AGENTDESK:STEP 1", "replies": [{"content": "after"}]},
    ]
    run, provider, _ = run_with_id(run, script)

    assert run.status == "paused"
    after = Step.objects.get(run=run, index=1)
    assert (after.status, after.started_at) == ("pending", None)
    assert not any("AGENTDESK:STEP 1" in r.messages[0]["content"] for r in provider.requests)


@pytest.mark.parametrize(("least", "analysed"), [(3, True), (4, False)])
def test_the_task_is_analysed_from_as_many_tools_as_the_setting_names(
    owner, settings, least, analysed
):
    settings.AGENT_ANALYSIS_MIN_TOOLS = least  # make_registry offers three
    run, provider, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:ANALYZE", "replies": [json_reply({"capabilities": ["echo"]})]},
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )

    asked = any("AGENTDESK:ANALYZE" in r.messages[0]["content"] for r in provider.requests)
    assert asked is analysed and run.status == "succeeded"


def test_an_unexpected_error_is_logged_with_its_traceback(owner, caplog):
    from agents_app.worker import execution

    class Odd(Exception):
        pass

    def provider_bug(request):
        raise Odd("nobody expected this")

    run, _, _ = run_with(owner, [{"match": "AGENTDESK:PLAN", "replies": [provider_bug]}])

    assert run.status == "failed"
    (record,) = [r for r in caplog.records if r.name == execution.__name__]
    assert record.levelname == "ERROR" and record.exc_info[0] is Odd
    assert record.getMessage() == f"run {run.pk}: unexpected error in plan"


def test_finish_task_s_answer_stays_the_run_s_answer_when_the_verifier_fails_it(owner):
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("finish", ["finish_task"]))]},
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("finish_task", result="42")]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, replan=False)]},
        ],
    )

    assert (run.status, run.final_response) == ("failed", "42")


def test_a_step_parked_on_an_approval_that_is_gone_starts_again(owner):
    from tests.support.runs import add_plan

    run = make_run(owner)
    step0 = add_plan(run, ["write it"]).steps.get()
    step0.progress = {"approval_id": 10**9, "thoughts": []}
    executor = executor_of(run)

    assert executor.decided(step0) is None


def test_a_run_without_a_model_to_ask_fails_naming_what_is_missing(owner, settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = "", ""
    run = make_run(owner)

    outcome = execute_run(run.pk, registry=make_registry())

    run.refresh_from_db()
    assert outcome.state == "finished"
    assert (run.status, run.error_code) == ("failed", "LLM_NOT_CONFIGURED")
    assert "LLM_BASE_URL" in run.error_message and run.lease_owner == ""


def test_a_run_whose_lease_is_about_to_lapse_is_tried_again_a_second_later(owner, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.runs.lease import Lease

    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(
        lease_owner="someone-else", lease_expires_at=timezone.now() + timedelta(seconds=0.5)
    )
    # Still held when asked, however long the test takes to ask.
    monkeypatch.setattr(Lease, "claim", staticmethod(lambda run_id, seconds: None))

    outcome = execute_run(run.pk, provider=ScriptedProvider([]), registry=make_registry())

    assert (outcome.state, outcome.retry_in) == ("busy", 1.0)


def test_a_worker_that_lost_its_run_to_another_stops_and_says_so(owner, caplog):
    def steal(run_id):
        Run.objects.filter(pk=run_id).update(lease_owner="another-worker")

    run, provider, outcome = run_with(owner, WAIT_THEN_STEP, make_registry(MeanwhileTool(steal)))

    assert outcome.state == "lost" and run.lease_owner == "another-worker"
    assert Step.objects.get(run=run, index=0).status == "running"  # its end was not written
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert f"run {run.pk}: lease lost to another worker; stopping" in said


def test_a_failed_step_s_event_says_why(owner):
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("break", ["broken"]))]},
            {"match": "AGENTDESK:STEP 0", "replies": [tool_call("broken")]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(False, replan=False)]},
        ],
    )

    failed = RunEvent.objects.get(run=run, type="step_failed").payload
    assert (failed["index"], failed["status"]) == (0, "failed")
    assert failed["error_code"] and "the service said no" in failed["error"]


def test_after_a_verdict_the_next_decision_is_made_from_the_rows_read_again(owner, monkeypatch):
    from agents_app.worker.execution import RunExecutor

    loads = []
    load = RunExecutor.load
    monkeypatch.setattr(RunExecutor, "load", lambda self: loads.append(1) or load(self))

    run, _, _ = run_with(
        owner,
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [plan_reply(step("first try")), plan_reply(step("second try"))],
            },
            {"match": "AGENTDESK:STEP", "replies": [{"content": "meh"}, {"content": "great"}]},
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(False, replan=True), verdict(True, "done twice")],
            },
        ],
    )

    # Read when the delivery began, and after the verdict that asked for a new plan; the
    # plan, its steps and the last verdict went on from the rows each wrote.
    assert run.status == "succeeded" and len(loads) == 2


@pytest.mark.dialect
def test_a_decision_reads_a_person_s_flags_only_when_they_may_have_moved_since_last_read(
    owner, django_assert_num_queries
):

    run = make_run(owner)
    executor = executor_of(run)
    rows = executor.load()  # the flags with the row

    with django_assert_num_queries(1):  # the kill switch, the first time
        executor.state_of(rows, fresh=True)
    with django_assert_num_queries(0):  # nothing signalled since
        executor.state_of(rows, fresh=False)


def test_a_worker_s_own_delivery_starts_this_process_s_mcp_sessions_first(
    owner, monkeypatch, settings
):
    from agents_app.worker import execution

    registry = make_registry()
    started = []
    monkeypatch.setattr(execution, "get_registry", lambda: registry)
    monkeypatch.setattr(
        "tools_app.mcp.client.ensure_pool", lambda r, wait: started.append((r, wait))
    )
    run = make_run(owner, fast_path=True)

    execute_run(
        run.pk, provider=ScriptedProvider([{"match": "AGENTDESK", "replies": [{"content": "Hi."}]}])
    )

    run.refresh_from_db()
    assert run.status == "succeeded" and started == [(registry, settings.MCP_STARTUP_WAIT)]


@pytest.mark.dialect
def test_a_run_that_never_started_is_read_with_its_lease_and_nothing_more(
    owner, django_assert_num_queries
):
    from agents_app.worker.execution import RUN_TO_EXECUTE

    run = make_run(owner)
    given = RUN_TO_EXECUTE.get(run.pk)  # as execute_run reads it once its lease is taken
    executor = executor_of(run, given=given)

    with django_assert_num_queries(0):  # no plan yet: it is written with its start
        rows = executor.load()

    assert rows.run is given and rows.plan is None and rows.steps == []


def test_the_first_decision_of_a_delivery_reads_no_flags_but_those_read_with_the_row(owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(lease_owner="mine")
    executor = executor_of(run)

    with CaptureQueriesContext(connection) as queries:
        executor.step_once()  # reads the run, decides to start it, starts it

    # read_control_flags: SELECT "agents_app_run"."cancel_requested" AS "cancel_requested", …
    flags_only = [
        q["sql"]
        for q in queries.captured_queries
        if '"cancel_requested" AS "cancel_requested"' in q["sql"]
    ]
    assert Run.objects.get(pk=run.pk).status == "planning" and flags_only == []


def test_a_run_s_lease_is_kept_renewed_while_it_executes_and_not_after(owner):
    from agents_app.runs.lease import RENEWER

    held = []

    def look(run_id):
        held.append(RENEWER.held())

    run, _, _ = run_with(owner, WAIT_THEN_STEP, make_registry(MeanwhileTool(look)))

    assert run.status == "succeeded" and held == [1] and RENEWER.held() == 0


def test_a_run_deleted_as_its_delivery_begins_leaves_no_lease_renewed(owner, monkeypatch):
    from agents_app.runs.lease import RENEWER, Lease

    claim = Lease.claim

    def claim_then_delete(run_id, seconds):
        lease = claim(run_id, seconds)
        Run.objects.filter(pk=run_id).delete()  # by its owner, a moment later
        return lease

    monkeypatch.setattr(Lease, "claim", staticmethod(claim_then_delete))
    run = make_run(owner)

    with pytest.raises(Run.DoesNotExist):
        execute_run(run.pk, provider=ScriptedProvider([]), registry=make_registry())

    assert RENEWER.held() == 0


def test_a_worker_that_paused_its_run_decides_nothing_more_about_it(owner, monkeypatch):
    from tests.support.runs import add_plan

    decided_at = decisions_made(monkeypatch)
    run = make_run(owner)
    add_plan(run, ["write it"])
    Run.objects.filter(pk=run.pk).update(pause_requested=True)

    run, _, _ = run_with_id(run, [])

    assert run.status == "paused" and decided_at == ["running"]


def test_each_step_records_when_it_started_and_ended(owner):
    run, _, _ = run_with(
        owner,
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("one"), step("two"))]},
            {"match": "AGENTDESK:STEP", "replies": [{"content": "done"}], "repeat": True},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict()]},
        ],
    )

    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert run.status == "succeeded" and len(steps) == 2
    for s in steps:
        assert s.started_at is not None and s.started_at <= s.finished_at


def test_what_the_model_said_before_its_call_failed_is_published_when_the_step_ends(owner):
    from agents_app.engine.llm import LLMError
    from tests.support.sockets import published

    def say_then_fail(request):
        request.on_token("Checking the key sk-")  # short: it waits for more
        raise LLMError("LLM_UNAVAILABLE", "the connection dropped mid-answer")

    run = make_run(owner)
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("check"))]},
        {"match": "AGENTDESK:STEP 0", "replies": [say_then_fail]},
    ]

    sent = published(run, lambda: run_with_id(run, script))

    tokens = "".join(m["token"] for m in sent if m["type"] == "run.token")
    assert tokens.endswith("Checking the key sk-")


def test_a_run_past_its_deadline_fails_saying_so_at_its_next_checkpoint(owner):
    from datetime import timedelta

    from django.utils import timezone

    from agents_app.models import Task
    from tests.support.runs import add_plan

    run = make_run(owner)
    Task.objects.filter(pk=run.task_id).update(max_seconds=60)
    add_plan(run, ["think"])
    Step.objects.filter(run=run).update(tool_names=[])
    Run.objects.filter(pk=run.pk).update(started_at=timezone.now() - timedelta(seconds=61))

    run, provider, _ = run_with_id(run, [])

    assert (run.status, run.error_code) == ("failed", "EXECUTION_TIMEOUT")
    assert run.error_message == "the run exceeded 60 s" and provider.requests == []


def test_a_delivery_of_a_parked_run_gives_its_lease_back(owner):
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(status="waiting_approval")

    outcome = execute_run(run.pk, provider=ScriptedProvider([]), registry=make_registry())

    run.refresh_from_db()
    assert outcome.state == "finished"
    assert (run.status, run.lease_owner, run.lease_expires_at) == ("waiting_approval", "", None)


@pytest.mark.dialect
def test_the_step_a_step_s_end_began_is_executed_with_no_read_of_the_flags(
    owner, django_assert_num_queries
):
    from tests.support.runs import add_plan

    run = make_run(owner)
    add_plan(run, ["one", "two"])
    executor = executor_of(run)
    rows = executor.load()
    executor.state_of(rows, fresh=True)  # the first look
    executor.started_next = rows.steps[1]  # as step 0's end began it

    with django_assert_num_queries(0):  # the flags came back with that commit
        executor.state_of(rows, fresh=False)


def test_a_run_cancelled_during_a_step_ends_in_the_commit_that_cuts_it(owner, monkeypatch):
    from agents_app.runs.services import run_cancel

    decided_at = decisions_made(monkeypatch)

    def cancel(run_id):
        run_cancel(run=Run.objects.get(pk=run_id), actor=owner, interface="api")

    run, _, _ = run_with(owner, WAIT_THEN_STEP, make_registry(MeanwhileTool(cancel)))

    assert (run.status, run.error_message) == ("cancelled", "Cancelled by request")
    assert decided_at == ["queued", "planning"]  # none after the cut


def test_a_verdict_that_breaks_inside_its_step_s_commit_fails_the_run_in_a_commit_of_its_own(
    owner, monkeypatch
):
    from agents_app.runs.task_recipe import TaskRecipe

    def broken(self, ctx, rows, *, fast):
        raise RuntimeError("the verdict has a bug")

    monkeypatch.setattr(TaskRecipe, "verify", broken)

    run, _, _ = run_with(
        owner, [{"match": "AGENTDESK", "replies": [{"content": "Done."}]}], fast_path=True
    )

    assert (run.status, run.error_code) == ("failed", "INTERNAL_ERROR")
    assert run.error_message == "RuntimeError: the verdict has a bug"
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1)) and run.lease_owner == ""

"""The engine driven through the database with an in-process scripted LLM (no Celery)."""

import pytest

from agents_app.models import Run, RunEvent, Step, ToolCall
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import json_reply, llm_error, plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)


def run_with(owner, rules, registry=None, **run_kwargs):
    run = make_run(owner, **run_kwargs)
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
    catalog = plan_prompt.messages[0]["content"]
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
    assert "- broken:" in plan_prompt.messages[0]["content"]
    assert RunEvent.objects.get(run=run, type="task_analysis").payload["tools"] == "all"
    assert run.status == "succeeded"


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

    def system_prompt(index):
        marker = f"AGENTDESK:STEP {index}"
        return next(
            r.messages[0]["content"]
            for r in provider.requests
            if marker in r.messages[0]["content"]
        )

    assert "Earlier steps" not in system_prompt(0)
    assert "Step 0 (completed): gather the notes\nOutput: gathered three notes" in system_prompt(1)
    assert "Step 1" not in system_prompt(1).split("Earlier steps:")[1]


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
        r.messages[0]["content"]
        for r in provider.requests
        if "AGENTDESK:STEP 23\n" in r.messages[0]["content"]
    )
    shown = last.split("Earlier steps:\n")[1]
    # Steps 0 and 1 (its dependencies) and the last 20 (3 to 22); step 2 is left out, and said to be.
    assert [int(line.split()[1]) for line in shown.splitlines() if line.startswith("Step ")] == [
        0,
        1,
        *range(3, 23),
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

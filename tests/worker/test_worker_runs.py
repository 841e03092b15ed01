"""Runs through a real Celery worker, real Redis and the scripted OpenAI-wire LLM server."""

import json

import pytest

from agents_app.models import Run, RunEvent, Step, ToolCall
from agents_app.runs.services import task_submit
from agents_app.tasks import execute_run
from tests.support.runs import make_run
from tests.support.script import asked, plan_reply, step, verdict
from tests.support.waiting import wait_for, wait_for_run

pytestmark = pytest.mark.integration


def append_line(path, line):
    return {
        "tool_calls": [
            {
                "name": "write_file",
                "arguments": {"path": path, "content": line + "\n", "append": True},
            }
        ]
    }


def submit(client, text="Write a greeting to hello.txt"):
    response = client.post(
        "/api/v1/agent/task", json.dumps({"task": text}), content_type="application/json"
    )
    assert response.status_code == 202, response.content
    return response.json()["run_id"]


def test_a_task_posted_to_the_api_completes_on_a_worker(llm, shared_worker, owner_api):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("write it", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [append_line("hello.txt", "hello"), {"content": "wrote hello.txt"}],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "hello.txt says hello", evidence=[1])],
            },
        ]
    )
    run_id = submit(owner_api)
    run = wait_for_run(run_id)
    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert run.final_response == "hello.txt says hello"
    detail = owner_api.get(f"/api/v1/runs/{run_id}").json()
    call = detail["plans"][0]["steps"][0]["tool_calls"][0]
    assert (call["tool"], call["status"]) == ("write_file", "succeeded")
    events = owner_api.get(f"/api/v1/runs/{run_id}/events?after=0").json()["events"]
    assert events[-1]["type"] == "result" and events[-1]["payload"]["success"] is True
    # The model's answers were streamed (the worker asked with stream=true).
    assert all(body.get("stream") for body in llm.requests)


def test_a_run_replans_when_the_verifier_asks(llm, shared_worker, owner_api):
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(step("first idea")),
                    plan_reply(step("better idea", ["write_file"])),
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {"content": "meh"},
                    append_line("hello.txt", "hello"),
                    {"content": "good"},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [
                    verdict(False, replan=True),
                    verdict(True, "second plan worked", evidence=[1]),
                ],
            },
        ]
    )
    run = wait_for_run(submit(owner_api))
    assert run.status == "succeeded" and run.replans == 1
    assert list(run.plans.values_list("version", flat=True)) == [1, 2]
    types = list(RunEvent.objects.filter(run=run).values_list("type", flat=True))
    assert types.count("plan_created") == 2 and "replanned" in types


def test_malformed_plans_fail_the_run_as_planning_failed(llm, shared_worker, owner_api):
    llm.script([{"match": "AGENTDESK:PLAN", "replies": [{"content": "{not json"}], "repeat": True}])
    run = wait_for_run(submit(owner_api))
    assert (run.status, run.error_code) == ("failed", "PLANNING_FAILED")
    plan_requests = [b for b in llm.requests if "AGENTDESK:PLAN" in json.dumps(b["messages"])]
    assert len(plan_requests) == 2  # retried once with the error shown, then failed


def test_a_rate_limited_llm_fails_the_run_as_rate_limited(llm, start_worker, owner_api):
    llm.script([{"match": "AGENTDESK:PLAN", "replies": [{"status": 429}], "repeat": True}])
    start_worker(LLM_MAX_RETRIES="2")
    run = wait_for_run(submit(owner_api))
    assert (run.status, run.error_code) == ("failed", "RATE_LIMITED")


def test_a_worker_without_an_llm_fails_the_run_clearly(llm, start_worker, owner):
    start_worker(LLM_BASE_URL="", LLM_MODEL="")
    run = make_run(owner)
    execute_run.delay(run.pk)
    run = wait_for_run(run.pk)
    assert (run.status, run.error_code) == ("failed", "LLM_NOT_CONFIGURED")
    assert "LLM_BASE_URL" in run.error_message


@pytest.mark.dialect
@pytest.mark.slow(
    reason="two workers start, one after the other, the second once the first is killed mid-run"
)
def test_a_worker_killed_mid_run_resumes_without_repeating_a_completed_step(
    llm, start_worker, owner, settings
):
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(step("log a", ["write_file"]), step("log b", ["write_file"], [0]))
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [append_line("log.txt", "a"), {"content": "logged a"}],
            },
            {
                "match": "AGENTDESK:STEP 1",
                # The first attempt hangs until the worker is killed; the resumed one answers.
                "replies": [
                    {"delay": 60, "content": "too late"},
                    append_line("log.txt", "b"),
                    {"content": "logged b"},
                ],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [verdict(True, "a and b logged", evidence=[1, 2])],
            },
        ]
    )
    first = start_worker("first")
    run = make_run(owner)
    execute_run.delay(run.pk)
    # Kill only once the hanging request has reached the LLM: a kill between the step's start
    # and its request would hand the hanging reply to the resumed attempt instead.
    wait_for(lambda: asked(llm, "AGENTDESK:STEP 1"), message="step 1's request")
    first.kill()
    # It gets the killed worker's message once that has been unacknowledged for 4 s.
    start_worker("second", CELERY_VISIBILITY_TIMEOUT="4")
    run = wait_for_run(run.pk, timeout=90)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [(s.status, s.retry_count) for s in steps] == [("completed", 0), ("completed", 1)]
    log = (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "log.txt").read_text()
    assert log == "a\nb\n"
    assert ToolCall.objects.filter(step=steps[0]).count() == 1
    step0_requests = [b for b in llm.requests if "AGENTDESK:STEP 0" in json.dumps(b["messages"])]
    assert len(step0_requests) == 2  # the tool round and the answer, once
    resumed = RunEvent.objects.get(
        run=run, type="step_started", payload__index=1, payload__retry_count=1
    )
    assert resumed.payload["resumed_after_interruption"] is True


@pytest.mark.slow(reason="two workers start and receive the same run")
def test_the_same_run_delivered_to_two_workers_executes_each_step_once(
    llm, start_worker, owner, settings
):
    steps = [step(f"log {i}", ["write_file"]) for i in range(3)]
    rules = [{"match": "AGENTDESK:PLAN", "replies": [plan_reply(*steps)]}]
    for i in range(3):
        # Step 0's tool call waits until the second delivery has found the lease taken.
        hold = {"hold": "second delivery"} if i == 0 else {}
        rules.append(
            {
                "match": f"AGENTDESK:STEP {i}",
                "replies": [
                    {**append_line("log.txt", str(i)), **hold},
                    {"content": f"logged {i}"},
                ],
            }
        )
    rules.append(
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "all logged", evidence=[1, 2, 3])]}
    )
    llm.script(rules)
    one, two = start_worker("one"), start_worker("two")
    run = make_run(owner)
    execute_run.delay(run.pk)
    # The second delivery while the first holds the lease, mid-step.
    wait_for(lambda: asked(llm, "AGENTDESK:STEP 0"), message="step 0's request")
    execute_run.delay(run.pk)
    # The one that found the lease taken retries instead of running.
    wait_for(lambda: "retry" in (one.log() + two.log()).lower(), message="the retry's log line")
    llm.release("second delivery")
    run = wait_for_run(run.pk, timeout=90)

    assert run.status == "succeeded", (run.error_code, run.error_message)
    assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "log.txt").read_text() == "0\n1\n2\n"
    assert ToolCall.objects.filter(run=run).count() == 3
    assert all(s.retry_count == 0 for s in Step.objects.filter(run=run))
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    # Both deliveries arrived.
    assert "execute_run" in one.log() and "execute_run" in two.log()


@pytest.mark.dialect
@pytest.mark.slow(
    reason="two workers start; the frozen one's lease must run out before the takeover"
)
def test_a_frozen_worker_loses_its_lease_and_cannot_commit_after_a_takeover(
    llm, start_worker, owner, settings
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("log", ["write_file"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {**append_line("log.txt", "frozen"), "delay": 2},
                    append_line("log.txt", "taker"),
                    {"content": "logged"},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "logged once", evidence=[1])]},
        ]
    )
    frozen = start_worker("frozen")
    run = make_run(owner)
    execute_run.delay(run.pk)
    wait_for(lambda: asked(llm, "AGENTDESK:STEP 0"), message="step 0's request")
    frozen.pause()
    try:
        # It gets the frozen worker's message once that has been unacknowledged for 4 s.
        start_worker("taker", CELERY_VISIBILITY_TIMEOUT="4")
        run = wait_for_run(run.pk, timeout=90)
        events_before = RunEvent.objects.filter(run=run).count()
    finally:
        frozen.resume()
    wait_for(
        lambda: "lease lost" in frozen.log(), timeout=30, message="the frozen worker to notice"
    )

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "log.txt").read_text() == "taker\n"
    assert RunEvent.objects.filter(run=run).count() == events_before
    step0 = Step.objects.get(run=run, index=0)
    assert (step0.status, step0.retry_count) == ("completed", 1)


def test_a_run_whose_message_was_lost_is_picked_up_when_a_worker_starts(llm, start_worker, owner):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("think"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "thought"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "recovered")]},
        ]
    )
    run = make_run(owner)  # queued, but its message never reached Redis
    finished = make_run(owner)
    Run.objects.filter(pk=finished.pk).update(status="succeeded")
    worker = start_worker()
    run = wait_for_run(run.pk, timeout=60)
    assert run.status == "succeeded" and run.final_response == "recovered"
    assert "queued 1 run(s) that no worker held" in worker.log()


@pytest.mark.dialect
@pytest.mark.slow(
    reason="two workers start; the second takes over only once the first one's 20 s lease has run out"
)
def test_a_worker_already_running_takes_over_the_run_of_a_worker_killed_mid_run(
    llm, start_worker, owner
):
    llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("think"))]},
            {
                "match": "AGENTDESK:STEP 0",
                # The first attempt hangs until its worker is killed; the taken-over one answers.
                "replies": [{"delay": 60, "content": "too late"}, {"content": "thought"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "taken over")]},
        ]
    )
    # A long lease, so the second worker is surely up (and its start's recovery done) while
    # the first still holds the run: only the second's sweep can then take it over. The
    # killed worker's message comes back only after the visibility timeout, an hour here.
    first = start_worker("first", RUN_LEASE_SECONDS="20", CELERY_VISIBILITY_TIMEOUT="3600")
    run = make_run(owner)
    execute_run.delay(run.pk)
    wait_for(lambda: asked(llm, "AGENTDESK:STEP 0"), message="step 0's request")
    second = start_worker("second", LEASE_SWEEP_INTERVAL="1", CELERY_VISIBILITY_TIMEOUT="3600")
    holder = Run.objects.get(pk=run.pk)
    assert holder.lease_owner and "queued 1 run(s)" not in second.log()
    first.kill()

    run = wait_for_run(run.pk, timeout=90)
    assert run.status == "succeeded" and run.final_response == "taken over"
    assert f"queued 1 run(s) again whose worker stopped renewing: [{run.pk}]" in second.log()
    step0 = Step.objects.get(run=run, index=0)
    assert (step0.status, step0.retry_count) == ("completed", 1)


@pytest.mark.dialect
@pytest.mark.slow(reason="50 runs in flight on one worker, which is killed; a second takes over")
def test_a_worker_killed_with_50_runs_in_flight_loses_none_and_repeats_no_step(
    llm, start_worker, owner, settings
):
    """Many runs per process (issue 31): a worker's death takes 50 runs with it at once, each
    between its tool call and its model's answer. Every one finishes on the next worker, and
    no step completes twice."""
    runs = 50
    llm.script(
        [
            # After the tool: the first 50 answers hang until the worker is killed.
            {
                "match": '"bytes_written"',
                "replies": [*[{"hold": "killed"}] * runs, {"content": "logged"}],
                "repeat": True,
            },
            {"match": "Log a line", "replies": [append_line("log.txt", "x")], "repeat": True},
        ]
    )
    first = start_worker("first", concurrency=64)
    ids = [
        task_submit(owner=owner, interface="api", text=f"Log a line {n}", fast_path=True).pk
        for n in range(runs)
    ]
    wait_for(
        lambda: sum('"bytes_written"' in text for text, _, _ in llm.timeline) == runs,
        timeout=90,
        message="every run's answer to hang",
    )
    first.kill()
    llm.release("killed")
    # The killed worker's messages come back once 4 s unacknowledged; its expired leases are
    # queued again by the second worker's start too (each run is then delivered twice).
    start_worker("second", concurrency=64, CELERY_VISIBILITY_TIMEOUT="4")
    finished = [wait_for_run(run_id, timeout=120) for run_id in ids]

    assert [run.status for run in finished] == ["succeeded"] * runs
    calls: dict[int, tuple[str, ...]] = {}
    for run in finished:
        step0 = Step.objects.get(run=run)
        assert (step0.status, step0.retry_count) == ("completed", 1)
        assert RunEvent.objects.filter(run=run, type="step_completed").count() == 1
        # The call cut off with its worker stays visible, failed, and the step's second
        # attempt calls again (a step is exactly-once, a call in an interrupted step is not:
        # docs/ARCHITECTURE.md); then it answers.
        calls[run.pk] = tuple(
            ToolCall.objects.filter(run=run).order_by("pk").values_list("status", flat=True)
        )
        assert (settings.WORKSPACE_ROOT / f"run-{run.pk}" / "log.txt").read_text() == "x\nx\n"
    assert set(calls.values()) == {("failed", "succeeded")}

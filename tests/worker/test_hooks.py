"""DatabaseHooks in this process: streamed tokens on the channel layer, the poll for a cancel
while the model streams, retries and tool calls in the run's rows."""

import os
from dataclasses import replace

import pytest

from agents_app.core import secrecy
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.events import publish, run_group
from agents_app.engine.hooks import StopRun
from agents_app.engine.llm import RetryNotice, Usage
from agents_app.models import AuditEvent, Run, RunEvent, ToolCall
from agents_app.runs.lease import Lease
from agents_app.worker import hooks as hooks_module
from agents_app.worker.hooks import DatabaseHooks
from tests.support.runs import add_plan, make_run
from tests.support.sockets import published
from tools_app.registry import ToolResult, ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)

MARK = {"type": "test.mark"}


def hooks_of(run, step=None) -> DatabaseHooks:
    """The hooks of a worker that holds the run's lease."""
    Run.objects.filter(pk=run.pk).update(lease_owner="mine")
    return DatabaseHooks(run, Lease(run.pk, "mine", 30), step)


# A server's tool that reads a path: its path argument is checked against the run's workspace.
NOTES = ToolSpec(
    name="notes_read",
    description="Read a note.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    capabilities=frozenset(),
    domain="notes",
    source="mcp",
)


@pytest.fixture
def only_size_and_context_flush(monkeypatch):
    """Tokens are also flushed every TOKEN_FLUSH_SECONDS: an hour keeps the clock out of it.
    And only the test's own secrets are known: the end of a piece that could begin another
    (one an earlier test in this process registered, or this machine's environment holds)
    would be held back for the redaction, and the pieces come out cut elsewhere."""
    monkeypatch.setattr(hooks_module, "TOKEN_FLUSH_SECONDS", 3600)
    monkeypatch.setattr(secrecy, "_registered", set())
    for name in list(os.environ):
        if secrecy.looks_secret(name):
            monkeypatch.delenv(name)


def test_streamed_tokens_are_published_in_pieces_of_at_least_64_characters(
    owner, only_size_and_context_flush
):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    def stream():
        for piece in ["a" * 40, "b" * 24, "c" * 63]:
            hooks.on_token(piece, phase="execution", step_index=0)
        publish(run_group(run.pk), [MARK])
        hooks.flush_tokens()

    pieces = [m.get("token", "|") for m in published(run, stream)]

    # After a piece the count starts again: 63 more characters wait for the next flush.
    assert pieces == ["a" * 40 + "b" * 24, "|", "c" * 63]


def test_a_secret_streamed_across_two_pieces_is_published_redacted(
    owner, only_size_and_context_flush, monkeypatch
):
    secret = "sk-hooks-TestKey0123456789abcdefXYZ"
    monkeypatch.setenv("HOOKS_TEST_API_KEY", secret)  # a secret of this process's
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    said = f"Your key is {secret}, as the server told me; nothing else to add here."

    def stream():
        # Flushed (as every 64 characters or 0.1 s) with the key cut in two.
        hooks.on_token(said[:20], phase="execution", step_index=0)
        hooks.flush_tokens(ended=False)
        hooks.on_token(said[20:], phase="execution", step_index=0)
        hooks.flush_tokens()

    shown = "".join(m["token"] for m in published(run, stream))

    assert shown == said.replace(secret, "[redacted]")


def test_a_token_is_published_with_the_phase_and_step_it_was_streamed_in(
    owner, only_size_and_context_flush
):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    def stream():
        hooks.on_token("Plan", phase="planning", step_index=None)
        hooks.on_token("Hm", phase="execution", step_index=0, reasoning=True)
        hooks.on_token("Done", phase="execution", step_index=0)
        hooks.flush_tokens()

    token = {"type": "run.token", "run_id": run.pk}
    assert published(run, stream) == [
        {**token, "token": "Plan", "phase": "planning", "step_index": None, "reasoning": False},
        {**token, "token": "Hm", "phase": "execution", "step_index": 0, "reasoning": True},
        {**token, "token": "Done", "phase": "execution", "step_index": 0, "reasoning": False},
    ]


def test_the_reasoning_streamed_in_a_phase_is_kept_for_the_rows(owner):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    hooks.on_token("Two steps will do.", phase="planning", step_index=None, reasoning=True)
    hooks.on_token('{"steps": []}', phase="planning", step_index=None)
    hooks.on_token("Is it done?", phase="verification", step_index=None, reasoning=True)

    assert hooks.streamed_reasoning("analysis", "planning") == "Two steps will do."
    assert hooks.streamed_reasoning("verification") == "Is it done?"


def test_a_worker_that_lost_its_lease_stops_at_the_next_checkpoint(owner):
    run = make_run(owner)
    lease = Lease(run.pk, "mine", 30)
    hooks = DatabaseHooks(run, lease)
    lease.lost.set()

    with pytest.raises(StopRun) as stopped:
        hooks.checkpoint()

    assert stopped.value.code == ErrorCode.LEASE_LOST


@pytest.mark.dialect
def test_while_the_model_streams_the_poll_notices_a_cancel(owner, monkeypatch):
    monkeypatch.setattr(hooks_module, "POLL_SECONDS", 0)
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)

    with pytest.raises(StopRun) as stopped:
        hooks.poll()

    assert stopped.value.code == ErrorCode.CANCELLED


def test_a_contract_attempt_s_poll_lets_the_answer_finish_after_a_stop_but_not_a_lost_lease(
    owner, monkeypatch
):
    monkeypatch.setattr(hooks_module, "POLL_SECONDS", 0)
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(kind="contract", cancel_requested=True)
    run = Run.objects.select_related("task").get(pk=run.pk)
    lease = Lease(run.pk, "mine", 30)
    hooks = DatabaseHooks(run, lease)

    hooks.poll()  # stopped, but the request in flight goes on (seed 002's Stop)
    lease.lost.set()
    with pytest.raises(StopRun) as stopped:
        hooks.poll()

    assert stopped.value.code == ErrorCode.LEASE_LOST


@pytest.mark.dialect
def test_the_poll_reads_the_run_only_once_its_interval_has_passed(
    owner, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(hooks_module, "POLL_SECONDS", 60)
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)

    with django_assert_num_queries(0):
        hooks.poll()  # not a minute since the hooks began: the cancel waits for a checkpoint


def test_a_model_call_about_to_be_retried_is_a_run_event(owner):
    run = make_run(owner)
    hooks = hooks_of(run)

    hooks.on_llm_retry(
        RetryNotice(code="RATE_LIMITED", reason="HTTP 429", delay=1.23456, attempt=2, attempts=3)
    )

    assert RunEvent.objects.get(run=run, type="llm_retry").payload == {
        "code": "RATE_LIMITED",
        "reason": "HTTP 429",
        "delay": 1.23,
        "attempt": 2,
        "attempts": 3,
        "step_index": None,
    }


def test_a_tool_call_s_duration_is_recorded_in_milliseconds(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)
    handle = hooks.before_tool_call("echo", {"text": "hi"})

    an_hour_ago = replace(handle, started=handle.started - 3600)
    hooks.after_tool_call(an_hour_ago, result=ToolResult(ok=True, content={"echo": "hi"}))
    with hooks.commit():  # a result is written with the step's next commit
        pass

    call = ToolCall.objects.get(pk=handle.call_id)
    assert call.status == "succeeded"
    assert 3_600_000 <= call.duration_ms < 3_603_000
    audit = AuditEvent.objects.get(run_id=run.pk, action="tool.call")
    assert audit.details["duration_ms"] == call.duration_ms


def test_a_tool_result_that_is_not_ok_is_recorded_failed_even_without_an_error_code(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)
    handle = hooks.before_tool_call("echo", {"text": "hi"})

    hooks.after_tool_call(handle, result=ToolResult(ok=False, error="no echo today"))
    with hooks.commit():
        pass

    assert ToolCall.objects.get(pk=handle.call_id).status == "failed"
    result = RunEvent.objects.get(run=run, type="tool_result").payload
    assert (result["status"], result["result"]) == ("failed", None)


def test_a_server_tool_s_path_outside_the_run_s_workspace_asks_a_person(owner, tmp_path):
    run = make_run(owner)
    workspace = tmp_path / f"run-{run.pk}"
    hooks = DatabaseHooks(
        run, Lease(run.pk, "mine", 30), specs={"notes_read": NOTES}, workspace=workspace
    )

    assert hooks.approval_needed("notes_read", {"path": str(workspace / "todo.md")}) is None
    ask = hooks.approval_needed("notes_read", {"path": "/etc/passwd"})
    assert ask is not None
    assert "argument 'path' points outside the workspace" in ask.classification.reasons


@pytest.mark.dialect
def test_a_result_waits_for_the_next_commit_which_writes_it_with_its_event_and_audit_row(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)
    handle = hooks.before_tool_call("echo", {"text": "hi"})
    hooks.after_tool_call(handle, result=ToolResult(ok=True, content={"echo": "hi"}))

    assert ToolCall.objects.get(pk=handle.call_id).status == "running"
    assert not RunEvent.objects.filter(run=run, type="tool_result").exists()
    with hooks.commit():
        pass

    assert ToolCall.objects.get(pk=handle.call_id).status == "succeeded"
    types = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))
    assert types[-2:] == ["tool_call", "tool_result"]
    assert AuditEvent.objects.filter(run_id=run.pk, action="tool.call").count() == 1


@pytest.mark.dialect
def test_a_cancel_is_seen_at_the_next_checkpoint_with_no_query_while_nothing_changed(
    owner, django_assert_num_queries
):
    from agents_app.runs.services import run_cancel

    run = make_run(owner)
    hooks = hooks_of(run)
    hooks.checkpoint()  # the first look reads the row

    with django_assert_num_queries(0):
        hooks.checkpoint()
        hooks.checkpoint()
    run_cancel(run=run, actor=owner, interface="api")
    with pytest.raises(StopRun) as stopped:
        hooks.checkpoint()

    assert stopped.value.code == ErrorCode.CANCELLED


class Clock:
    """time.monotonic for the hooks module, moved by the test."""

    def __init__(self, now: float):
        self.now = now

    def monotonic(self) -> float:
        return self.now


def test_short_tokens_are_published_once_a_tenth_of_a_second_passed_since_the_last(
    owner, monkeypatch
):
    clock = Clock(0.0)
    monkeypatch.setattr(hooks_module, "time", clock)
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    def stream():
        hooks.on_token("Hel", phase="execution", step_index=0)  # its context's first piece
        clock.now = 0.06
        hooks.on_token("lo", phase="execution", step_index=0)  # 5 characters in 60 ms
        publish(run_group(run.pk), [MARK])
        clock.now = 0.1
        hooks.on_token(", world", phase="execution", step_index=0)  # 100 ms: out it goes
        publish(run_group(run.pk), [MARK])
        clock.now = 0.15
        hooks.on_token("!", phase="execution", step_index=0)  # 50 ms since that one
        publish(run_group(run.pk), [MARK])
        hooks.flush_tokens()  # the answer came

    pieces = [m.get("token", "|") for m in published(run, stream)]

    # Between the marks: nothing, then what had come (less an end this process's redaction
    # may hold back as a secret's possible start), then nothing; the rest at the end.
    first, second, third, rest = "".join(pieces).split("|")
    assert (first, third) == ("", "")
    assert second.startswith("Hello, wor") and second + rest == "Hello, world!"


def test_tokens_are_published_each_time_64_characters_have_gathered(
    owner, only_size_and_context_flush
):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))

    def stream():
        hooks.on_token("." * 63, phase="execution", step_index=0)
        publish(run_group(run.pk), [MARK])
        hooks.on_token(",", phase="execution", step_index=0)  # 64
        hooks.on_token("~" * 64, phase="execution", step_index=0)  # 64 again
        publish(run_group(run.pk), [MARK])

    pieces = [m.get("token", "|") for m in published(run, stream)]

    # Punctuation: no end of it is held back as a secret's possible start.
    assert pieces == ["|", "." * 63 + ",", "~" * 64, "|"]


def test_the_end_of_a_stream_held_back_as_a_possible_secret_goes_out_when_it_ends(
    owner, only_size_and_context_flush
):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    said = "Keys of this shape begin with sk-"

    def stream():
        hooks.on_token(said, phase="execution", step_index=0)
        hooks.flush_tokens(ended=False)  # mid-stream: "sk-" may be a key's start
        publish(run_group(run.pk), [MARK])
        hooks.flush_tokens()  # the answer came: nothing more follows

    pieces = [m.get("token", "|") for m in published(run, stream)]

    assert pieces[-1] != "|" and "".join(p for p in pieces if p != "|") == said
    assert pieces.index("|") < len(pieces) - 1


def test_a_failed_tool_call_s_row_keeps_its_error_with_its_code(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)
    handle = hooks.before_tool_call("echo", {"text": "hi"})

    hooks.after_tool_call(handle, result=None, error_code="TOOL_TIMEOUT", error="no answer in 5 s")
    with hooks.commit():
        pass

    call = ToolCall.objects.get(pk=handle.call_id)
    assert (call.status, call.error) == ("failed", "no answer in 5 s")


def test_a_tool_call_s_name_and_arguments_are_recorded_as_any_database_stores_them(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)

    handle = hooks.before_tool_call("ec\x00ho", {"te\x00xt": "h\x00i"})

    call = ToolCall.objects.get(pk=handle.call_id)
    assert (call.tool, call.arguments) == ("ec\ufffdho", {"te\ufffdxt": "h\ufffdi"})
    assert handle.tool == "ec\ufffdho"


def test_the_run_stops_at_the_checkpoint_on_its_deadline(owner, monkeypatch):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    monkeypatch.setattr(hooks_module.timezone, "now", lambda: hooks.deadline)

    with pytest.raises(StopRun) as stopped:
        hooks.checkpoint()

    assert stopped.value.code == ErrorCode.EXECUTION_TIMEOUT


def child_of(root: Run, owner) -> Run:
    """A run of `root`'s tree, with a budget of its own far above its root's."""
    child = make_run(owner, max_tokens=10**6, max_tool_calls=1000)
    Run.objects.filter(pk=child.pk).update(root=root)
    return Run.objects.select_related("task").get(pk=child.pk)


def test_a_child_s_tool_calls_spend_its_tree_s_budget_up_to_the_root_s_limit(owner):
    root = make_run(owner, max_tool_calls=3)
    Run.objects.filter(pk=root.pk).update(tool_calls_made=1)
    child = child_of(root, owner)
    hooks = hooks_of(child, add_plan(child, ["echo"]).steps.get())

    hooks.before_tool_call("echo", {"text": "two of three"})
    hooks.before_tool_call("echo", {"text": "three of three"})
    with pytest.raises(DomainError) as refused:
        hooks.before_tool_call("echo", {"text": "four"})

    assert refused.value.code == ErrorCode.BUDGET_EXCEEDED
    assert refused.value.details == {"budget": "tool_calls", "used": 3, "limit": 3, "tree": root.pk}
    assert ToolCall.objects.filter(run=child).count() == 2


def test_a_child_s_tokens_spend_its_tree_s_budget_past_the_root_s_limit(owner):
    root = make_run(owner, max_tokens=100)
    Run.objects.filter(pk=root.pk).update(prompt_tokens=40)
    child = child_of(root, owner)
    hooks = hooks_of(child)

    hooks.on_llm_usage(Usage(prompt_tokens=50, completion_tokens=10), "scripted")  # 100 of 100
    with pytest.raises(DomainError) as refused:
        hooks.on_llm_usage(Usage(prompt_tokens=1, completion_tokens=0), "scripted")

    assert refused.value.code == ErrorCode.BUDGET_EXCEEDED
    assert refused.value.details == {"budget": "tokens", "used": 101, "limit": 100, "tree": root.pk}


def test_a_run_within_its_own_token_budget_goes_on_up_to_the_last_token(owner):
    run = make_run(owner, max_tokens=100)
    hooks = hooks_of(run)

    hooks.on_llm_usage(Usage(prompt_tokens=90, completion_tokens=10), "scripted")  # 100 of 100
    with pytest.raises(DomainError) as refused:
        hooks.on_llm_usage(Usage(prompt_tokens=1, completion_tokens=0), "scripted")

    assert refused.value.details == {"budget": "tokens", "used": 101, "limit": 100}


def test_a_model_call_s_usage_ends_its_stream_first(owner, only_size_and_context_flush):
    run = make_run(owner)
    hooks = hooks_of(run)
    said = "The key you want starts with sk-"

    def stream():
        hooks.on_token(said, phase="execution", step_index=0)
        hooks.on_llm_usage(Usage(prompt_tokens=5, completion_tokens=9), "scripted")
        publish(run_group(run.pk), [MARK])

    pieces = [m.get("token", "|") for m in published(run, stream)]

    assert pieces == [said, "|"]


def test_a_worker_that_lost_its_lease_stops_when_its_model_call_ends(owner):
    run = make_run(owner)
    lease = Lease(run.pk, "mine", 30)
    hooks = DatabaseHooks(run, lease)
    lease.lost.set()

    with pytest.raises(StopRun) as stopped:
        hooks.on_llm_usage(Usage(prompt_tokens=5, completion_tokens=9), "scripted")

    assert stopped.value.code == ErrorCode.LEASE_LOST


def test_a_steered_message_is_delivered_into_the_running_answer_once(owner, settings, monkeypatch):
    from agents_app.conversations.services import conversation_create, message_post

    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:9/v1", "scripted"
    monkeypatch.setattr("agents_app.runs.lifecycle.dispatch.send", lambda *a, **kw: None)
    conversation = conversation_create(owner=owner, interface="api")
    _, answer = message_post(conversation=conversation, actor=owner, interface="api", text="Hi")
    steer, _ = message_post(
        conversation=conversation,
        actor=owner,
        interface="api",
        text="Also: in French",
        mode="steer",
    )
    hooks = hooks_of(Run.objects.select_related("task").get(pk=answer.pk))

    assert hooks.incoming(turn=1) == [(steer.pk, "Also: in French")]
    assert hooks.incoming(turn=2) == []
    steered = RunEvent.objects.filter(run=answer, type="message_steered")
    assert [e.payload["turn"] for e in steered] == [1]


def test_while_the_model_streams_the_run_is_looked_at_every_quarter_second(owner, monkeypatch):
    clock = Clock(0.0)
    monkeypatch.setattr(hooks_module, "time", clock)
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    looks = []
    monkeypatch.setattr(hooks, "checkpoint", lambda: looks.append(clock.now))

    for now in (0.2, 0.25, 0.45, 0.5):
        clock.now = now
        hooks.poll()

    assert looks == [0.25, 0.5]


def test_time_parked_on_a_person_does_not_count_against_the_run_s_deadline(owner, settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.AGENT_RUN_TIMEOUT = 120
    run = make_run(owner)
    Run.objects.filter(pk=run.pk).update(
        started_at=timezone.now() - timedelta(seconds=150), parked_seconds=100
    )
    run = Run.objects.select_related("task").get(pk=run.pk)
    hooks = hooks_of(run)

    hooks.checkpoint()  # 150 s since it started, 100 of them parked: 50 of its 120 s

    assert hooks.deadline - run.started_at == timedelta(seconds=220)


def test_a_model_call_about_to_be_retried_ends_its_stream_first(owner, only_size_and_context_flush):
    run = make_run(owner)
    hooks = hooks_of(run)
    said = "The key you want starts with sk-"

    def stream():
        hooks.on_token(said, phase="execution", step_index=0)
        hooks.on_llm_retry(
            RetryNotice(code="RATE_LIMITED", reason="HTTP 429", delay=1, attempt=1, attempts=3)
        )
        publish(run_group(run.pk), [MARK])

    shown = published(run, stream)
    pieces = [m.get("token", "|") for m in shown if m["type"] in ("run.token", MARK["type"])]

    assert pieces == [said, "|"]


def test_a_model_call_s_usage_is_written_at_the_step_s_end_not_with_a_tool_call_s_row(owner):
    run = make_run(owner)
    step = add_plan(run, ["echo"]).steps.get()
    hooks = hooks_of(run, step)
    hooks.on_llm_usage(Usage(prompt_tokens=5, completion_tokens=9), "scripted")

    hooks.before_tool_call("echo", {"text": "hi"})  # the call's row, committed before the call

    assert Run.objects.get(pk=run.pk).prompt_tokens == 0
    assert not RunEvent.objects.filter(run=run, type="llm_usage").exists()
    with hooks.commit():  # the step's end
        pass
    assert Run.objects.get(pk=run.pk).prompt_tokens == 5
    assert RunEvent.objects.filter(run=run, type="llm_usage").count() == 1


def test_a_secret_cut_by_a_checkpoint_mid_stream_is_still_published_redacted(
    owner, only_size_and_context_flush, monkeypatch
):
    secret = "sk-hooks-TestKey0123456789abcdefXYZ"
    monkeypatch.setenv("HOOKS_TEST_API_KEY", secret)
    run = make_run(owner)
    hooks = hooks_of(run)
    said = f"Here: {secret} and no more."

    def stream():
        hooks.on_token(said[:15], phase="execution", step_index=0)
        hooks.checkpoint()  # between two pieces of the stream
        hooks.on_token(said[15:], phase="execution", step_index=0)
        hooks.flush_tokens()

    shown = "".join(m["token"] for m in published(run, stream))

    assert shown == "Here: [redacted] and no more."


def test_how_a_call_was_let_through_is_recorded_for_that_call_only(owner, tmp_path):
    run = make_run(owner)
    step = add_plan(run, ["read"]).steps.get()
    Run.objects.filter(pk=run.pk).update(lease_owner="mine")
    workspace = tmp_path / f"run-{run.pk}"
    hooks = DatabaseHooks(
        run, Lease(run.pk, "mine", 30), step, specs={"notes_read": NOTES}, workspace=workspace
    )

    assert hooks.approval_needed("notes_read", {"path": str(workspace / "a.md")}) is None
    first = hooks.before_tool_call("notes_read", {"path": str(workspace / "a.md")})
    second = hooks.before_tool_call("notes_read", {"path": str(workspace / "b.md")})

    assert hooks.let_through.get(first.call_id) and second.call_id not in hooks.let_through


def test_a_tool_the_configuration_does_not_offer_asks_nobody(owner):
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30), specs={})

    assert hooks.approval_needed("echo", {"text": "hi"}) is None


def test_a_secret_cut_by_the_64_character_flush_is_still_published_redacted(
    owner, only_size_and_context_flush, monkeypatch
):
    secret = "sk-hooks-TestKey0123456789abcdefXYZ"
    monkeypatch.setenv("HOOKS_TEST_API_KEY", secret)
    run = make_run(owner)
    hooks = DatabaseHooks(run, Lease(run.pk, "mine", 30))
    said = "x" * 50 + f" {secret} and no more."

    def stream():
        hooks.on_token(said[:64], phase="execution", step_index=0)  # flushed: 64 characters
        hooks.on_token(said[64:], phase="execution", step_index=0)
        hooks.flush_tokens()

    shown = "".join(m["token"] for m in published(run, stream))

    assert shown == "x" * 50 + " [redacted] and no more."


def test_what_the_model_said_is_published_at_a_checkpoint_before_what_follows_it(
    owner, only_size_and_context_flush
):
    run = make_run(owner)
    hooks = hooks_of(run)

    def stream():
        hooks.on_token("Let me check.", phase="execution", step_index=0)
        hooks.checkpoint()  # before a tool call: the watcher reads the words first
        publish(run_group(run.pk), [MARK])

    pieces = [m.get("token", "|") for m in published(run, stream)]

    assert pieces == ["Let me check.", "|"]

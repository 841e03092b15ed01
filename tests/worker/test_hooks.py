"""DatabaseHooks in this process: streamed tokens on the channel layer, the poll for a cancel
while the model streams, retries and tool calls in the run's rows."""

import asyncio
from dataclasses import replace

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from agents_app.core.errors import ErrorCode
from agents_app.core.events import publish, run_group
from agents_app.engine.hooks import StopRun
from agents_app.engine.llm import RetryNotice
from agents_app.models import AuditEvent, Run, RunEvent, ToolCall
from agents_app.runs.lease import Lease
from agents_app.worker import hooks as hooks_module
from agents_app.worker.hooks import DatabaseHooks
from tests.support.runs import add_plan, make_run
from tools_app.registry import ToolResult, ToolSpec

pytestmark = pytest.mark.django_db(transaction=True)

MARK = {"type": "test.mark"}


def hooks_of(run, step=None) -> DatabaseHooks:
    """The hooks of a worker that holds the run's lease."""
    Run.objects.filter(pk=run.pk).update(lease_owner="mine")
    return DatabaseHooks(run, Lease(run.pk, "mine", 30), step)


def published(run, stream) -> list[dict]:
    """What `stream()` publishes to the run's group, in order, up to a last MARK of its own."""

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(run_group(run.pk), channel)
        await sync_to_async(stream)()
        await sync_to_async(publish)(run_group(run.pk), [{"type": "test.end"}])
        messages = []
        while (message := await asyncio.wait_for(layer.receive(channel), 10))["type"] != "test.end":
            messages.append(message)
        return messages

    return async_to_sync(scenario)()


@pytest.fixture
def only_size_and_context_flush(monkeypatch):
    """Tokens are also flushed every TOKEN_FLUSH_SECONDS: an hour keeps the clock out of it."""
    monkeypatch.setattr(hooks_module, "TOKEN_FLUSH_SECONDS", 3600)


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
    notes = ToolSpec(
        name="notes_read",
        description="Read a note.",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        capabilities=frozenset(),
        domain="notes",
        source="mcp",
    )
    run = make_run(owner)
    workspace = tmp_path / f"run-{run.pk}"
    hooks = DatabaseHooks(
        run, Lease(run.pk, "mine", 30), specs={"notes_read": notes}, workspace=workspace
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

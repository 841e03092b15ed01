"""What a run's model calls answered, one row a call (issue 36): the foundation of replay."""

from django.db import models
from django.utils import timezone

from agents_app.models.runs import Run, Step


class ModelExchange(models.Model):
    """One model request's outcome as received, written with the step's next commit (the
    commit that counts its tokens: worker.commits.PendingWrites): what the model said (text,
    tool calls, reasoning), why it stopped, what it cost, and a hash of what it was asked
    (engine.exchanges.request_sha256), so a replay can answer the same request from here and
    tell when a request drifted. Text from the model is redacted (core.secrecy) before it is
    stored, like a tool's result.

    `seq` orders a run's calls (Run.exchange_seq, advanced under the run's row lock or fence
    by the lease holder, who alone writes them). `step` is null for the calls that belong to
    no step (analysis, planning, verifying, a team's decomposition, condensing a chat)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="exchanges", db_index=False)
    # The step and the connection as AuditEvent keeps its run: no database constraint, no
    # index, nothing done when one is deleted (a step goes only with its run, whose exchanges
    # go with it; a deleted connection's number stays, as the record of who answered). Each
    # would otherwise cost every call's row an index entry and a constraint check.
    step = models.ForeignKey(
        Step,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        null=True,
        blank=True,
        related_name="exchanges",
    )
    seq = models.PositiveIntegerField()
    # engine.hooks.StreamPhase: analysis, planning, execution, verification, condensation.
    phase = models.CharField(max_length=20)
    # The step's retry_count at the call; for a call of no step, the run's attempt.
    attempt = models.PositiveIntegerField(default=0)
    request_sha256 = models.CharField(max_length=64)
    # The request's canonical text (engine.exchanges.request_text), redacted and compressed
    # (zlib): what a replay shows a drifted request's diff against (engine.replay). Empty for
    # an exchange recorded before it was kept.
    request = models.BinaryField(default=b"", blank=True)
    content = models.TextField(blank=True)
    # [{id, name, arguments, arguments_error}] as the model asked for them.
    tool_calls = models.JSONField(default=list, blank=True)
    reasoning = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    # A call that failed after the provider's retries: its error code and AgentDesk's words.
    error_code = models.CharField(max_length=40, blank=True)
    error = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    llm_model = models.CharField("model", max_length=200, blank=True)
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        null=True,
        blank=True,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="model_exchange_seq_unique")
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.phase}"

"""What a run's model calls answered (issue 36): the foundation of replay."""

from django.db import models
from django.utils import timezone

from agents_app.models.runs import Run


class ModelExchange(models.Model):
    """The model calls of one phase of no step (analysis, planning, verifying, a team's
    decomposition, a contract's evaluation, condensing a chat) that one commit wrote: the
    commit that counts their tokens (worker.commits.PendingWrites). A step's calls are kept
    the same way on the step's own row (Step.model_calls), written by the step's own UPDATE
    (migration 0031 moved them there).

    Each call's outcome as received: what the model said (text, tool calls, reasoning), why
    it stopped, what it cost, which connection and model answered, and what it was asked (its
    request's canonical text and its hash, engine.exchanges), so a replay can answer the same
    request from here and tell, with a diff, when one drifted. Text from the model and the
    requests are redacted (core.secrecy) before they are kept.

    The calls are one frame (`calls`, engine.exchanges.pack_calls; read a run's with
    runs.exchanges.model_calls), not a row each: with a row each, a step cost about a sixth
    more than without the recording, against the tenth allowed, and a row a step's calls
    still a twelfth (`uv run python bench/exchange_cost.py`). A large frame (a long tool
    loop's requests, each the one before again and more) is compressed.

    `seq` is the first call's number (the others follow it); the run's calls are numbered in the order their commits
    wrote them (Run.exchange_seq, advanced under the run's row lock or fence by the lease
    holder, who alone writes them)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="exchanges", db_index=False)
    seq = models.PositiveIntegerField()
    # engine.hooks.StreamPhase: analysis, planning, execution, verification, condensation.
    phase = models.CharField(max_length=20)
    # The step's retry_count at the calls; for calls of no step, the run's attempt.
    attempt = models.PositiveIntegerField(default=0)
    calls = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="model_exchange_seq_unique")
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.phase}"

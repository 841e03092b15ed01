"""Runs shaped for the metrics: a profile, an outcome, a wall time and tokens, written as the
columns the figures read (`orchestration.metrics`); and what GET /metrics answers, parsed."""

from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from agents_app.models import AgentProfile, Run, RunStatus
from tests.support.runs import make_run

# Every shaped run starts here (a fixed instant: the figures never depend on the clock).
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def shaped_run(
    owner,
    profile: AgentProfile | None = None,
    status: str = RunStatus.SUCCEEDED,
    *,
    seconds: float | None = None,
    prompt_tokens: int = 0,
    completion_tokens: int = 0,
    created_at: datetime | None = None,
) -> Run:
    """A run of `owner` as `profile` (None: no profile), in `status`, that ran `seconds` from
    START (None: never started) and used those tokens."""
    run = make_run(owner, "Measure me")
    fields = {
        "profile": profile,
        "status": status,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "created_at": created_at or START,
    }
    if seconds is not None:
        fields["started_at"] = START
        fields["finished_at"] = START + timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(**fields)
    run.refresh_from_db()
    return run


def scraped(text: str) -> dict[tuple[str, frozenset], float]:
    """A Prometheus exposition, parsed by prometheus_client's own parser: each sample's value
    by its name and its labels (`sample(parsed, "name", label=value, ...)` reads one)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(parsed: dict[tuple[str, frozenset], float], name: str, **labels: str) -> float | None:
    """One sample's value, None when the exposition has no such sample."""
    return parsed.get((name, frozenset(labels.items())))

"""Per-profile run metrics (issue 15, item 9): for each agent profile, how many of its runs
succeeded, failed and were cancelled, how long a successful one took on average, the tokens
they used and the error rate, computed in SQL over the runs.

The figures, as the metrics page and `/metrics` show them:

- **completed** is `succeeded`; **failed** and **cancelled** are counted apart, and **active**
  is every run not finished yet (queued, working, parked on a person or on its children).
- **average completion time** is the mean wall time, `finished_at - started_at`, of the
  succeeded runs (as the dashboard's *Duration*: time spent waiting for an approval counts).
  It is summed in SQL as a duration and divided here, so SQLite (microseconds from Django's
  `django_timestamp_diff`) and PostgreSQL (an `interval`) give the same figure.
- **tokens** are prompt plus completion tokens of every run, whatever its outcome.
- **error rate** is `failed / (succeeded + failed)`: of the runs that reached an outcome of
  their own, the share that failed. A cancellation is a person's choice, not the agent's
  error, so it is neither; None while no run has succeeded or failed.

Runs without a profile (plain tasks, chat answers, contract attempts) are one row, "no
profile" (`profile_id` None), so the page says something before any team has run; a profile's
row is there with zeros when none of the runs asked for has it.

Scope: `profile_metrics` reads the runs of the user who asks; staff may ask for everyone's
(`everyone=True`). `site_profile_metrics` reads every run, for the Prometheus endpoint, which
is for operators and guards itself (web/prometheus.py).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import AgentProfile, Run, RunStatus
from agents_app.runs.selectors import runs_for

NO_PROFILE = "no profile"

_SUCCEEDED = Q(status=RunStatus.SUCCEEDED)
_TIMED = _SUCCEEDED & Q(started_at__isnull=False, finished_at__isnull=False)
_DURATION = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())


@dataclass(frozen=True)
class ProfileMetrics:
    """One profile's figures over the runs read (`profile_id` None: the runs with none)."""

    profile_id: int | None
    name: str
    role: str
    runs: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # The succeeded runs with both timestamps, and their wall time added up.
    timed: int = 0
    completion_time: timedelta = timedelta(0)

    @property
    def active(self) -> int:
        return self.runs - self.succeeded - self.failed - self.cancelled

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def average_completion_seconds(self) -> float | None:
        if not self.timed:
            return None
        return self.completion_time.total_seconds() / self.timed

    @property
    def error_rate(self) -> float | None:
        outcomes = self.succeeded + self.failed
        return self.failed / outcomes if outcomes else None


def profile_metrics(
    *, user: Any, everyone: bool = False, since: datetime | None = None
) -> list[ProfileMetrics]:
    """Each profile's figures over the user's runs (everyone's with `everyone`, for staff
    only), created at or after `since` when given: every profile by name, then "no profile"
    when runs without one exist. Raises DomainError FORBIDDEN for `everyone` asked by a user
    who is not staff."""
    if everyone and not getattr(user, "is_staff", False):
        raise DomainError(ErrorCode.FORBIDDEN, "Only staff may read everyone's metrics")
    runs = Run.objects.all() if everyone else runs_for(user)
    if since is not None:
        runs = runs.filter(created_at__gte=since)
    return _figures(runs)


def site_profile_metrics() -> list[ProfileMetrics]:
    """Each profile's figures over every run of the site (the operators' `/metrics`)."""
    return _figures(Run.objects.all())


def _figures(runs: QuerySet[Run]) -> list[ProfileMetrics]:
    # Two queries whatever the number of runs: one GROUP BY over the runs, one for the names.
    rows = (
        runs.order_by()
        .values("profile_id")
        .annotate(
            runs=Count("pk"),
            succeeded=Count("pk", filter=_SUCCEEDED),
            failed=Count("pk", filter=Q(status=RunStatus.FAILED)),
            cancelled=Count("pk", filter=Q(status=RunStatus.CANCELLED)),
            prompt_tokens=Sum("prompt_tokens"),
            completion_tokens=Sum("completion_tokens"),
            timed=Count("pk", filter=_TIMED),
            completion_time=Sum(_DURATION, filter=_TIMED),
        )
    )
    by_profile = {row.pop("profile_id"): row for row in rows}
    figures = []
    for profile in AgentProfile.objects.order_by("name").values("id", "name", "role"):
        row = by_profile.pop(profile["id"], None)
        figures.append(
            _row(profile_id=profile["id"], name=profile["name"], role=profile["role"], row=row)
        )
    # What is left is the runs without a profile, and those of a profile created or deleted
    # between the two queries (a deleted profile's runs lose it: they are "no profile" then).
    if by_profile:
        figures.append(
            _row(profile_id=None, name=NO_PROFILE, role="", row=_merged(list(by_profile.values())))
        )
    return figures


def _row(*, profile_id: int | None, name: str, role: str, row: dict | None) -> ProfileMetrics:
    if row is None:
        return ProfileMetrics(profile_id=profile_id, name=name, role=role)
    return ProfileMetrics(
        profile_id=profile_id,
        name=name,
        role=role,
        runs=row["runs"],
        succeeded=row["succeeded"],
        failed=row["failed"],
        cancelled=row["cancelled"],
        prompt_tokens=row["prompt_tokens"] or 0,
        completion_tokens=row["completion_tokens"] or 0,
        timed=row["timed"],
        completion_time=row["completion_time"] or timedelta(0),
    )


def _merged(rows: list[dict]) -> dict:
    """Rows of the same shape added up (the no-profile group and a profile deleted meanwhile)."""
    return {
        key: sum((row[key] or zero for row in rows), zero)
        for key, zero in [
            ("runs", 0),
            ("succeeded", 0),
            ("failed", 0),
            ("cancelled", 0),
            ("prompt_tokens", 0),
            ("completion_tokens", 0),
            ("timed", 0),
            ("completion_time", timedelta(0)),
        ]
    }

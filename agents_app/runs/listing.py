"""A person's list of runs, searched, filtered and sorted in the database: one vocabulary for
the dashboard and `GET /api/v1/runs`, so both answer the same question the same way.

- `q` finds runs whose task text contains it (case-insensitive).
- `status` is a run status (`running`, `waiting_approval`, …) or a group of them (`StatusGroup`):
  `active` (queued, planning, running, verifying) and `waiting` (parked: waiting for a person's
  approval, or paused by the kill switch).
- `kind` is a kind of run (`task`, `chat`, …), `listed` (the kinds the dashboard lists by
  default: tasks and team runs, as their recipes say) or None for every kind.
- `sort` (`RunSort`) orders by creation time, duration or tokens; every order ends with the id,
  so a page boundary never splits or repeats runs that tie.

Duration is wall time from start to end, up to now for a run still going; a run not yet started
has none and sorts last either way. It is computed in SQL (`Coalesce(finished_at, Now()) -
started_at`), which Django compiles for SQLite and PostgreSQL alike.
"""

from enum import StrEnum
from typing import Any

from django.db.models import DurationField, ExpressionWrapper, F, QuerySet
from django.db.models.functions import Coalesce, Now

from agents_app.models import ACTIVE_STATUSES, PARKED_STATUSES, Run, RunKind, RunStatus
from agents_app.runs.recipes import recipe_for
from agents_app.runs.selectors import runs_for

# The longest search the list accepts; longer text is refused (REST) or cut (the dashboard).
SEARCH_MAX_LENGTH = 200


class StatusGroup(StrEnum):
    ACTIVE = "active"
    WAITING = "waiting"


class RunSort(StrEnum):
    NEWEST = "newest"
    OLDEST = "oldest"
    LONGEST = "longest"
    SHORTEST = "shortest"
    MOST_TOKENS = "most_tokens"
    FEWEST_TOKENS = "fewest_tokens"


# The kinds listed by default (runs.recipes: `listed`), as a value of `kind`.
LISTED = "listed"


def kinds_of(kind: str) -> list[str]:
    """The kinds of run `kind` stands for: one kind, or LISTED's."""
    if kind == LISTED:
        return [value for value in RunKind.values if recipe_for(value).listed]
    return [RunKind(kind).value]


# What `kind` may be, as one enum for the REST schema: every kind and LISTED.
RunListKind = StrEnum(  # type: ignore[misc]
    "RunListKind", {value.upper(): value for value in (*RunKind.values, LISTED)}
)

STATUS_GROUPS: dict[str, frozenset[str]] = {
    StatusGroup.ACTIVE: ACTIVE_STATUSES,
    StatusGroup.WAITING: PARKED_STATUSES,
    **{status.value: frozenset({status.value}) for status in RunStatus},
}

# What `status` may be: every run status and every group, as one enum for the REST schema.
RunListStatus = StrEnum(  # type: ignore[misc]
    "RunListStatus", {value.upper(): value for value in STATUS_GROUPS}
)

_DURATION = ExpressionWrapper(
    Coalesce(F("finished_at"), Now()) - F("started_at"), output_field=DurationField()
)
_TOKENS = F("prompt_tokens") + F("completion_tokens")

ORDERINGS: dict[RunSort, tuple[Any, ...]] = {
    RunSort.NEWEST: (F("created_at").desc(), F("id").desc()),
    RunSort.OLDEST: (F("created_at").asc(), F("id").asc()),
    RunSort.LONGEST: (F("duration").desc(nulls_last=True), F("id").desc()),
    RunSort.SHORTEST: (F("duration").asc(nulls_last=True), F("id").desc()),
    RunSort.MOST_TOKENS: (_TOKENS.desc(), F("id").desc()),
    RunSort.FEWEST_TOKENS: (_TOKENS.asc(), F("id").desc()),
}


def runs_search(
    *,
    user: Any,
    q: str = "",
    status: str | None = None,
    sort: str = RunSort.NEWEST,
    kind: str | None = None,
) -> QuerySet[Run]:
    """The user's runs (staff included: only their own) whose task text contains `q`, in
    `status` (a run status or a `StatusGroup`; None or "" for all), of `kind` (a RunKind or
    LISTED; None or "" for every kind), ordered by `sort`.

    Raises KeyError for a status or sort outside the vocabulary: the edges check their input
    against `STATUS_GROUPS` and `RunSort` first and answer with their own error."""
    runs = runs_for(user)
    q = q.strip()
    if q:
        runs = runs.filter(task__text__icontains=q)
    if status:
        runs = runs.filter(status__in=sorted(STATUS_GROUPS[status]))
    if kind:
        runs = runs.filter(kind__in=kinds_of(kind))
    order = RunSort(sort)
    if order in (RunSort.LONGEST, RunSort.SHORTEST):
        runs = runs.annotate(duration=_DURATION)
    return runs.order_by(*ORDERINGS[order])

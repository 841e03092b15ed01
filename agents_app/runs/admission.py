"""Runs queue per person, so that one person's backlog never delays another's work.

The workers take their messages first come first served: had every new run sent its message at
once, a person who submitted 500 runs would have put 500 messages before the next person's
chat answer. Instead a new run is sent to the workers only while its person has fewer than
RUNS_RUNNING_PER_USER runs running (queued for a worker, planning, running or verifying;
parked runs do not count); past that it waits its turn in the database (`Run.waiting_turn`),
and each time one of the person's deliveries ends (the run finished, parked or paused), the
worker lets their next ones go: chat answers first (somebody is watching; the recipes'
`priority`), then the oldest. Every worker's lease sweep does the same for anyone left
waiting (a worker that died between). Past RUNS_QUEUED_PER_USER runs waiting, a new task,
chat message or agent start is refused with 429 RATE_LIMITED.

Counting and letting go happen under a lock of the person's user row, so two workers ending
two of their runs at once do not both let the same turn go. A re-queued run (a decision on an
approval, the kill switch released, a run recovered) was let go before and is sent at once.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Case, Count, IntegerField, Q, Value, When

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.prepared import Prepared
from agents_app.models import Run, RunStatus
from agents_app.runs.lifecycle import run_enqueue
from agents_app.runs.recipes import RECIPES

# A run in one of these, not waiting its turn, holds one of its person's turns.
HOLDS_A_TURN = (RunStatus.QUEUED, RunStatus.PLANNING, RunStatus.RUNNING, RunStatus.VERIFYING)


def waiting_runs(owner_id: int):
    return Run.objects.filter(owner_id=owner_id, waiting_turn=True, status=RunStatus.QUEUED)


# Read after every delivery and at every submission: compiled once (core.prepared).
_ANY_WAITING = Prepared(
    lambda owner_id: waiting_runs(owner_id).values_list("pk")[:1], samples=(-1,)
)
_PERSON_LOCKED = Prepared(
    lambda owner_id: (
        get_user_model().objects.select_for_update().filter(pk=owner_id).values_list("pk")
    ),
    samples=(-1,),
)


def admission_check(owner_id: int) -> dict[str, int] | None:
    """Before a new run of this person: raises DomainError RATE_LIMITED (429) when they have
    RUNS_QUEUED_PER_USER runs waiting their turn already. Inside the transaction that will
    create the run, the person's lock is taken first and their turns are returned as counted
    under it, for run_admit to use instead of counting again; outside one, None."""
    cap = settings.RUNS_QUEUED_PER_USER
    locked = connection.in_atomic_block
    if locked:
        _lock_person(owner_id)
        turns = queue_counts(owner_id)
        waiting = turns["waiting"]
    else:
        waiting = waiting_runs(owner_id).count()
    if waiting >= cap:
        raise DomainError(
            ErrorCode.RATE_LIMITED,
            f"You have {waiting} runs waiting their turn, the most allowed: wait until some "
            "have run, or cancel some",
            {"queued": waiting, "max_queued": cap},
        )
    return turns if locked else None


def _lock_person(owner_id: int) -> None:
    """Count and let go one at a time per person. SQLite's writers already go one at a time
    (BEGIN IMMEDIATE), so there the lock would be a query for nothing."""
    if connection.vendor != "sqlite":
        _PERSON_LOCKED.rows(owner_id)


@transaction.atomic(savepoint=False)
def run_admit(run: Run, turns: dict[str, int] | None = None) -> None:
    """A new run: sent to the workers once the caller's transaction commits if its person has
    a turn free and nothing waiting, else it takes its place among their waiting runs (which
    then go in their order, as far as turns are free: it never jumps ahead of an older one).
    `turns`: what admission_check returned in this transaction, before the run was created
    (the lock is held since, so the counts stand, but for this run); None: counted here."""
    if turns is None:
        _lock_person(run.owner_id)
        turns = queue_counts(run.owner_id)  # counting this run, which holds a turn until it waits
    else:
        turns = {**turns, "running": turns["running"] + 1}
    if not turns["waiting"] and turns["running"] <= settings.RUNS_RUNNING_PER_USER:
        run_enqueue(run_id=run.pk)
        return
    Run.objects.filter(pk=run.pk).update(waiting_turn=True)
    run.waiting_turn = True
    _let_go(run.owner_id)


def _first_served():
    """Higher priority first (a chat answer's), then the oldest."""
    return Case(
        *[When(kind=kind, then=Value(recipe.priority)) for kind, recipe in RECIPES.items()],
        default=Value(0),
        output_field=IntegerField(),
    )


def admit_waiting(owner_id: int) -> list[int]:
    """Let this person's waiting runs go, as many as they have turns free. Returns their ids.
    One read when nothing waits (after every delivery: the common case), no transaction."""
    if not _ANY_WAITING.rows(owner_id):
        return []
    with transaction.atomic():
        _lock_person(owner_id)
        return _let_go(owner_id)


def _let_go(owner_id: int) -> list[int]:
    """Under the person's lock: their waiting runs that have a turn, sent."""
    free = settings.RUNS_RUNNING_PER_USER - queue_counts(owner_id)["running"]
    if free <= 0:
        return []
    chosen = list(
        waiting_runs(owner_id)
        .annotate(first=_first_served())
        .order_by("-first", "pk")
        .values_list("pk", flat=True)[:free]
    )
    Run.objects.filter(pk__in=chosen).update(waiting_turn=False)
    for run_id in chosen:
        run_enqueue(run_id=run_id)
    return chosen


def admit_everyone() -> list[int]:
    """The sweep: every person with runs waiting gets the turns they have free."""
    people = (
        Run.objects.filter(waiting_turn=True, status=RunStatus.QUEUED)
        .values_list("owner_id", flat=True)
        .distinct()
    )
    let_go: list[int] = []
    for owner_id in list(people):
        let_go += admit_waiting(owner_id)
    return let_go


TURNS = {
    "running": Count("pk", filter=Q(waiting_turn=False)),
    "waiting": Count("pk", filter=Q(waiting_turn=True, status=RunStatus.QUEUED)),
}
# A person's turns, counted at every submission: compiled once (core.prepared).
_TURNS = Prepared(
    lambda owner_id: (
        Run.objects.filter(owner_id=owner_id, status__in=HOLDS_A_TURN)
        .values("owner_id")
        .annotate(**TURNS)
        .values_list(*TURNS)
    ),
    samples=(-1,),
)


def queue_counts(owner_id: int | None = None) -> dict[str, int]:
    """Runs running (holding a turn) and waiting their turn: one person's, or everyone's."""
    if owner_id is None:
        return Run.objects.filter(status__in=HOLDS_A_TURN).aggregate(**TURNS)
    counted = _TURNS.one(owner_id) or (0, 0)
    return dict(zip(TURNS, counted, strict=True))

"""A run replayed (issue 36, item 4): a new run of its source's task and kind whose origin is
the source (Run.origin replay), answered by its source's recorded model answers instead of a
model (worker.replay), its tools run again in its own fresh workspace. Where it parts from its
source it says so (Run.replay_report, `replay_diverged` events)."""

from typing import Any

from django.db import transaction

from agents_app.core.audit import RUN_REPLAY, audit_record
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.inputs import text_problem
from agents_app.models import Origin, Run
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.services import ended_run, refuse_unless_offered, run_create

# The most tool names a replay may be asked to run again, and the longest name.
RERUN_MAX = 100
TOOL_NAME_MAX = 200


def _rerun_of(rerun: Any) -> list[str]:
    if rerun is None:
        return []
    if (
        not isinstance(rerun, list)
        or len(rerun) > RERUN_MAX
        or not all(
            isinstance(n, str) and 0 < len(n) <= TOOL_NAME_MAX and text_problem(n) is None
            for n in rerun
        )
    ):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"rerun is a list of at most {RERUN_MAX} tool names",
            {"field": "rerun"},
        )
    return sorted(set(rerun))


@transaction.atomic
def run_replay(
    *, run: Run, actor: Any, interface: str, rerun: Any = None, admit: bool = True
) -> Run:
    """A replay of `run` (which the caller read as `actor`'s), queued unless `admit` is False
    (runs_replay executes it in its own process). `rerun`: the MCP and network tools it runs
    again instead of answering them from the record. Returns the new Run. Raises DomainError
    VALIDATION_ERROR for a bad `rerun`; CONFLICT for a run of a kind that is not replayed on
    its own, one still working, one recorded before model answers were kept, or a fork."""
    names = _rerun_of(rerun)
    recipe = refuse_unless_offered(run, "replay", "replayed")
    refuse_while_halted()
    with ended_run(run.pk, ": only an ended run is replayed") as w:
        if reason := w.run.not_replayable_because:
            details = {"origin": Origin.FORK} if w.run.origin == Origin.FORK else {}
            raise DomainError(ErrorCode.CONFLICT, reason, details or {"recorded": False})
    turns = admission_check(run.owner_id) if admit else None
    replay = run_create(
        task=run.task,
        kind=run.kind,
        conversation=recipe.replay_conversation(run),
        close_policy=run.close_policy,
    )
    options = {"rerun": names}
    Run.objects.filter(pk=replay.pk).update(
        origin=Origin.REPLAY, origin_run=run, origin_options=options
    )
    replay.origin, replay.origin_run, replay.origin_options = Origin.REPLAY, run, options
    audit_record(
        action=RUN_REPLAY,
        interface=interface,
        actor=actor,
        run=run,
        details={"replay_run_id": replay.pk, "rerun": names},
    )
    if admit:
        run_admit(replay, turns)
    return replay

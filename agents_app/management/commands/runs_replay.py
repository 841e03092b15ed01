"""Replay recorded runs here and now, and say where each parted from its source: a team keeps
recorded runs as regression tests of its prompts and tools (issue 36, item 4)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q

from agents_app.core.events import EventType
from agents_app.models import AuditInterface, Run, RunEvent
from agents_app.runs.replays import run_replay
from agents_app.worker.replaying import execute_replay

# Exit statuses besides 0 (every replay matched its source): one diverged; an ID named no run
# that can be replayed.
DIVERGED, BAD_ID = 1, 2


class Command(BaseCommand):
    help = (
        "Replay each run given by ID in this process (its recorded model answers instead of "
        "a model, its tools run again in a fresh workspace) and print where it diverged. "
        "Exits 1 if any replay diverged, 2 for an ID that names no run that can be replayed."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_ids", nargs="+", type=int, metavar="ID")
        parser.add_argument(
            "--rerun",
            action="append",
            default=[],
            metavar="TOOL",
            help="an MCP or network tool to call again instead of answering from the record",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ids = options["run_ids"]
        found = {run.pk: run for run in Run.objects.filter(pk__in=ids).select_related("task")}
        missing = [pk for pk in ids if pk not in found]
        if missing:
            self.stderr.write(f"no run {', '.join(map(str, missing))}")
            raise SystemExit(BAD_ID)
        diverged = False
        for pk in ids:
            try:
                replay = run_replay(
                    run=found[pk],
                    actor=None,
                    interface=AuditInterface.ADMIN,
                    rerun=options["rerun"] or None,
                    admit=False,
                )
            except Exception as exc:  # a DomainError: said, and the next ID is not tried
                raise CommandError(f"run {pk}: {exc}", returncode=BAD_ID) from exc
            replay = execute_replay(replay.pk)
            diverged |= self._report(pk, replay)
        if diverged:
            raise SystemExit(DIVERGED)

    def _report(self, source_id: int, replay: Run) -> bool:
        """Print the replay's outcome; True when it diverged."""
        head = f"run {source_id}: replay {replay.pk} {replay.status}"
        source = replay.origin_run
        # Its whole tree's: a team's child that diverged is where the replay parted.
        events = RunEvent.objects.filter(
            Q(run_id=replay.pk) | Q(run__root_id=replay.pk), type=EventType.REPLAY_DIVERGED
        ).order_by("run_id", "seq")
        divergences = [
            event.payload
            if event.run_id == replay.pk
            else {**event.payload, "message": f"run {event.run_id}: {event.payload['message']}"}
            for event in events
        ]
        if source is not None and source.status != replay.status:
            # Nothing it was told differed, yet it ended otherwise (its verdict, a budget).
            divergences.append(
                {"kind": "outcome", "message": f"it {replay.status}, its source {source.status}"}
            )
        if not divergences:
            self.stdout.write(f"{head}: no divergence")
            return False
        self.stdout.write(f"{head}: {len(divergences)} divergence(s)")
        for divergence in divergences:
            self.stdout.write(f"  {divergence['kind']}: {divergence['message']}")
            if divergence.get("diff"):
                self.stdout.write("    " + divergence["diff"].replace("\n", "\n    "))
        return True

"""`manage.py audit_export [--since ISO] [--run ID] [PATH|-]`: the audit log as JSON lines."""

from datetime import UTC, datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from agents_app.core.audit import export_lines
from agents_app.models import AuditEvent


def parse_since(value: str) -> datetime:
    """An ISO date or date-time; without an offset it is read as UTC."""
    try:
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value)
            moment = datetime.combine(day, time.min) if day else None
    except ValueError:
        moment = None
    if moment is None:
        raise CommandError(f"--since {value!r} is not an ISO date or date-time")
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


class Command(BaseCommand):
    help = "Write audit events as JSON lines, oldest first, one object per line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", default="-", help="A file, or - for stdout.")
        parser.add_argument(
            "--since", help="Only events at or after this ISO date or date-time (UTC if naive)."
        )
        parser.add_argument("--run", type=int, help="Only events of this run id.")

    def handle(self, *args: Any, path: str, since: str | None, run: int | None, **options: Any):
        events = AuditEvent.objects.all()
        if since:
            events = events.filter(created_at__gte=parse_since(since))
        if run is not None:
            events = events.filter(run_id=run)
        if path == "-":
            for line in export_lines(events):
                self.stdout.write(line, ending="")
            return
        count = 0
        with open(path, "w", encoding="utf-8") as file:
            for line in export_lines(events):
                file.write(line)
                count += 1
        self.stderr.write(f"Wrote {count} audit event(s) to {path}.")

"""Queue again the runs no worker holds; `go` runs this once a dead worker's leases expired."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from agents_app.runs.control import runs_recover


class Command(BaseCommand):
    help = (
        "Queue every active run whose lease has expired (or that has none) again, as a worker "
        "does when it starts: a run whose worker died is otherwise delivered again only after "
        "CELERY_VISIBILITY_TIMEOUT."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():  # the messages go out once the transaction commits
            recovered = runs_recover()
        if recovered:
            self.stdout.write(f"queued {len(recovered)} run(s) that no worker held: {recovered}")

"""What `go` does before it starts the servers, in one process (each Django start costs seconds):
migrate, collect static files, import mcp_config.json when present and changed, and make the
first superuser."""

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "migrate, collectstatic, mcp_config import --if-exists --if-changed and ensure_admin, "
        "in that order: what `go` runs before it starts the servers."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = options["verbosity"]
        call_command("migrate", interactive=False, verbosity=verbosity)
        call_command("collectstatic", interactive=False, verbosity=verbosity)
        call_command("mcp_config", "import", "--if-exists", "--if-changed")
        call_command("ensure_admin")

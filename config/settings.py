"""AgentDesk settings. Every value comes from the environment or `.env`; see .env.example."""

import os
import secrets
import sys
from pathlib import Path

import dj_database_url

from config.env import (
    BASE_DIR,
    embedded_redis_url_file,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_str,
    load_dotenv,
    worker_concurrency,
    worker_pool,
    worker_processes,
)
from config.local_model import default_threads, local_model_url, model_path

load_dotenv(BASE_DIR / ".env")

# var/ holds the SQLite database, the generated secret key and the embedded Valkey's data:
# only this user may read it.
VAR_DIR = BASE_DIR / env_str("VAR_DIR", "var")
VAR_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)

# Off unless asked for: the debug page shows settings and locals to whoever hits a 500.
DEBUG = env_bool("DEBUG", False)


def _private_file(path, content: str = "") -> None:
    """Create `path` (mode 0600) holding `content`, unless it exists; safe between processes."""
    if path.exists():
        return
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(content)
    try:
        os.link(staging, path)  # atomic: another process's key, if it came first, wins
    except FileExistsError:
        pass
    finally:
        staging.unlink()


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    # One machine: a key generated once into var/. Many machines must share SECRET_KEY
    # (`manage.py check --deploy` says so when it is unset).
    path = VAR_DIR / "secret_key"
    _private_file(path, secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
SECRET_KEY_GENERATED = not env_str("SECRET_KEY")
ALLOWED_HOSTS = [h.strip() for h in env_str("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o.strip() for o in env_str("CSRF_TRUSTED_ORIGINS").split(",") if o.strip()]

# daphne's app serves ASGI (websockets included) from `manage.py runserver`; it installs Twisted's
# reactor when imported, about 0.4 s of processor time that no other process needs (`go` and
# production start daphne itself), so every worker and command starts without it.
INSTALLED_APPS = [
    *(["daphne"] if sys.argv[1:2] == ["runserver"] else []),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.humanize",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "csp",
    "ninja",
    "agents_app",
    "tools_app",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "agents_app.web.context_processors.demo_model",
                "agents_app.web.context_processors.kill_switch",
                "agents_app.web.context_processors.approvals",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'agentdesk.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Values bound by the server and statements prepared once a connection has sent them a
    # few times: PostgreSQL then parses and plans a hot statement once per connection, and
    # psycopg converts each statement's text once per process (it caches server-bound
    # queries, not client-bound ones). DATABASE_PREPARE_THRESHOLD=-1 turns preparing off for
    # a pooler that cannot keep prepared statements (PgBouncer in transaction mode before 1.21).
    _threshold = env_int("DATABASE_PREPARE_THRESHOLD", 5, minimum=-1)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "server_side_binding": True,
            "prepare_threshold": None if _threshold < 0 else _threshold,
        }
    )
    # Cursors whose row count waits for a pipelined statement's answer (config/postgresql).
    DATABASES["default"]["ENGINE"] = "config.postgresql"
# A Celery worker's processes keep their connection across tasks this long (Django's
# CONN_MAX_AGE, for them alone: agents_app/worker/connections.py).
WORKER_DATABASE_CONN_MAX_AGE = env_int("WORKER_DATABASE_CONN_MAX_AGE", 300, minimum=0)
# How a worker runs its runs (config/env.py): `threads`, WORKER_CONCURRENCY runs per process
# (100 by default), each waiting on its model in a thread; or `prefork`, one per process.
# Read here too so that a bad value stops every process at its start, with the reason.
WORKER_POOL = worker_pool()
WORKER_CONCURRENCY = worker_concurrency()
WORKER_PROCESSES = worker_processes()
# On PostgreSQL, the most connections one worker process holds, whatever its concurrency: its
# runs take one from the process's pool for a transaction and give it back before they wait
# (agents_app/worker/connections.py), so PostgreSQL's default max_connections (100) serves
# several workers. A run that finds none free waits up to WORKER_DATABASE_POOL_WAIT seconds.
WORKER_DATABASE_CONNECTIONS = env_int("WORKER_DATABASE_CONNECTIONS", 20, minimum=2)
WORKER_DATABASE_POOL_WAIT = env_float("WORKER_DATABASE_POOL_WAIT", 120.0, minimum=1.0)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite creates its file (and the -wal and -shm files, which copy its mode) world-readable
    # under the usual umask: create it first, for this user only.
    if DATABASES["default"]["NAME"] != ":memory:":
        _private_file(Path(DATABASES["default"]["NAME"]))
    # The web process and the workers share one file: WAL lets readers run beside a writer,
    # IMMEDIATE takes the write lock at BEGIN so writers queue on the busy timeout instead of
    # failing with "database is locked" when a read transaction tries to upgrade.
    # The writers of one process (a worker's many runs) take turns in order (config/sqlite).
    DATABASES["default"]["ENGINE"] = "config.sqlite"
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": env_int("SQLITE_BUSY_TIMEOUT", 30, minimum=1),
    }
    # Tests run workers in other processes, so the test database must be a file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Files Django's storages write (collectstatic's copies under var/) are this user's only, as
# everything else under var/ (Django's default would be 0644).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"
CSRF_FAILURE_VIEW = "agents_app.web.errors.csrf_failure"

# --- HTTPS and security headers ------------------------------------------------
# Behind a TLS-terminating proxy, the header it sets to say the request came over HTTPS
# (e.g. X-Forwarded-Proto). Only set it when the proxy overwrites that header on every request.
_proxy_header = env_str("SECURE_PROXY_SSL_HEADER")
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
# Served over HTTPS (directly or through that proxy): cookies only over TLS, HSTS, and plain
# HTTP redirected. On by default once a proxy header is named.
HTTPS = env_bool("HTTPS", bool(_proxy_header))
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
X_FRAME_OPTIONS = "DENY"
# Every script is a file of ours ('self'): no inline script, no eval. Style attributes are
# allowed (progress bars, the admin's widgets); style elements are not.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}


# --- Redis: broker, channel layer ------------------------------------------
def _redis_url() -> str:
    url = env_str("REDIS_URL")
    if url:
        return url
    # `uv run go` starts an embedded Valkey and records where; other commands find it there.
    recorded = embedded_redis_url_file(VAR_DIR)
    if recorded.exists():
        return recorded.read_text().strip()
    return ""


REDIS_URL = _redis_url()

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {
                    "address": REDIS_URL or "redis://127.0.0.1:6379/0",
                    # A consumer waits for its next message in a blocking pop of up to 5 s
                    # (channels_redis). redis-py 8 gives up on any read after 5 s by default,
                    # so an idle socket's pop often lost the race: the consumer died of
                    # redis.exceptions.TimeoutError and its WebSocket closed with 1011. A longer
                    # read timeout kept a cancelled receive (a closing consumer, daphne
                    # stopping) going for up to that long. So none: the server answers every
                    # pop within 5 s, TCP keepalive notices a dead server, and a pooled
                    # connection idle for a while is pinged before it is used again.
                    "socket_timeout": None,
                    "socket_keepalive": True,
                    "health_check_interval": 30,
                }
            ],
            # Deployments (or test sessions) sharing one Redis keep their groups apart.
            "prefix": env_str("CHANNEL_PREFIX", "agentdesk"),
        },
    }
}

CELERY_BROKER_URL = REDIS_URL or "redis://127.0.0.1:6379/0"
CELERY_TASK_IGNORE_RESULT = True
# Workers consume this queue; separate deployments (or test sessions) sharing a Redis use their own.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "agentdesk")
# Remote control (the health check's worker ping) is a broadcast to every worker on the Redis
# that listens on this exchange; deployments (or test sessions) sharing a Redis use their own.
CELERY_CONTROL_EXCHANGE = env_str("CELERY_CONTROL_EXCHANGE", "celery")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A message not acknowledged within this many seconds is delivered again; the run lease
    # keeps a second delivery of a still-running run from executing it in parallel.
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1),
    "unacked_restore_interval": env_int("CELERY_RESTORE_INTERVAL", 10, minimum=1),
    "unacked_restore_throttle": 1,
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Celery's Django fixup closes every database connection around every task unless this is
# set; with it, the worker follows Django's rules instead (agents_app/worker/connections.py),
# and Celery reconnects after this many tasks.
CELERY_DB_REUSE_MAX = 1000

# --- LLM ----------------------------------------------------------------------
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_API_KEY = env_str("LLM_API_KEY")
LLM_MODEL = env_str("LLM_MODEL")
LLM_REQUEST_TIMEOUT = env_float("LLM_REQUEST_TIMEOUT", 120.0, minimum=0.1)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 5, minimum=0)
LLM_RETRY_BASE_DELAY = env_float("LLM_RETRY_BASE_DELAY", 1.0, minimum=0.0)
# The most requests in flight to one LLM server (its URL), over every worker: the rest wait
# their turn, however long (the wait is not the request's timeout). The embedded llama.cpp
# answers two at once (config/local_model.SLOTS): it gets no more than that.
LLM_MAX_IN_FLIGHT = env_int("LLM_MAX_IN_FLIGHT", 128, minimum=1)
# The most tokens an answer may have, per phase (max_tokens on every request). An answer cut
# off at its limit is asked for again once, then fails ANSWER_TOO_LONG.
LLM_MAX_TOKENS_PLAN = env_int("LLM_MAX_TOKENS_PLAN", 1536, minimum=16)
LLM_MAX_TOKENS_STEP = env_int("LLM_MAX_TOKENS_STEP", 2048, minimum=16)
LLM_MAX_TOKENS_VERIFY = env_int("LLM_MAX_TOKENS_VERIFY", 768, minimum=16)
# Seconds a working run may go without a token or an event before its page says it is waiting
# for the model (a CPU model can take a minute to read a long prompt); 0: never.
LLM_SILENCE_NOTICE_SECONDS = env_float("LLM_SILENCE_NOTICE_SECONDS", 10.0, minimum=0.0)
# Sampling temperature sent with every request; unset: the server's own default.
LLM_TEMPERATURE = (
    env_float("LLM_TEMPERATURE", 0.0, minimum=0.0) if env_str("LLM_TEMPERATURE") else None
)

# --- embedded local model -------------------------------------------------------
# A GGUF file that `go` serves with llama.cpp on 127.0.0.1:LOCAL_MODEL_PORT (config/local_model.py)
# and that every process uses as its LLM, unless LLM_BASE_URL names another server.
LOCAL_MODEL = env_str("LOCAL_MODEL").strip()
LOCAL_MODEL_CONTEXT = env_int("LOCAL_MODEL_CONTEXT", 4096, minimum=256)
LOCAL_MODEL_THREADS = env_int("LOCAL_MODEL_THREADS", default_threads(), minimum=1)
LOCAL_MODEL_PORT = env_int("LOCAL_MODEL_PORT", 8102, minimum=1)
# The embedded model is a small one on a CPU: unless told otherwise, it samples greedily (it
# wanders at llama.cpp's default temperature of 0.8) and short tasks take the fast path.
LOCAL_MODEL_IN_USE = bool(LOCAL_MODEL and not LLM_BASE_URL)
if LOCAL_MODEL_IN_USE:
    LLM_BASE_URL = local_model_url(LOCAL_MODEL_PORT)
    LLM_MODEL = LLM_MODEL or model_path(LOCAL_MODEL).stem
    LLM_TEMPERATURE = 0.0 if LLM_TEMPERATURE is None else LLM_TEMPERATURE

# --- Agent runs ---------------------------------------------------------------
AGENT_PLAN_TIMEOUT = env_float("AGENT_PLAN_TIMEOUT", 120.0, minimum=0.1)
AGENT_STEP_TIMEOUT = env_float("AGENT_STEP_TIMEOUT", 300.0, minimum=0.1)
AGENT_VERIFY_TIMEOUT = env_float("AGENT_VERIFY_TIMEOUT", 120.0, minimum=0.1)
AGENT_RUN_TIMEOUT = env_float("AGENT_RUN_TIMEOUT", 1800.0, minimum=1.0)
# A small local model on a CPU spends minutes on a replan and seldom recovers with one.
AGENT_MAX_REPLANS = env_int("AGENT_MAX_REPLANS", 0 if LOCAL_MODEL_IN_USE else 2, minimum=0)
AGENT_MAX_STEPS = env_int("AGENT_MAX_STEPS", 50, minimum=1)
AGENT_MAX_TOOL_ROUNDS = env_int("AGENT_MAX_TOOL_ROUNDS", 8, minimum=1)
# Failed or refused tool calls within one step shown to the model to correct before the next
# one fails the step (a failed step goes to the verifier and may be replanned). Small models
# often fix a wrong argument when told; with them a replan costs minutes.
AGENT_TOOL_ERROR_RETRIES = env_int(
    "AGENT_TOOL_ERROR_RETRIES", 1 if LOCAL_MODEL_IN_USE else 0, minimum=0
)
# A chat answer shows this many failed tool calls to the model before one ends the answer.
CHAT_TOOL_ERROR_RETRIES = env_int("CHAT_TOOL_ERROR_RETRIES", 3, minimum=0)
# Long conversations (conversations.condense): the context window of a connection without one;
# past CHAT_CONDENSE_AT of it an answer masks old tool outputs, then summarises the older turns,
# until under CHAT_CONDENSE_TO; the person's last CHAT_KEEP_TURNS messages stay verbatim.
CHAT_CONTEXT_WINDOW = env_int("CHAT_CONTEXT_WINDOW", 8192, minimum=256)
CHAT_CONDENSE_AT = env_float("CHAT_CONDENSE_AT", 0.8, minimum=0.1)
CHAT_CONDENSE_TO = env_float("CHAT_CONDENSE_TO", 0.6, minimum=0.1)
CHAT_KEEP_TURNS = env_int("CHAT_KEEP_TURNS", 4, minimum=1)
# A contract agent's attempt, unless the agent says otherwise: tool cycles (each judged
# against the contract), LLM tokens and seconds. Its log files go to AGENT_LOG_DIR.
CONTRACT_MAX_TURNS = env_int("CONTRACT_MAX_TURNS", 20, minimum=1)
CONTRACT_MAX_TOKENS = env_int("CONTRACT_MAX_TOKENS", 200_000, minimum=1)
CONTRACT_MAX_SECONDS = env_int("CONTRACT_MAX_SECONDS", 1800, minimum=1)
AGENT_LOG_DIR = BASE_DIR / env_str("AGENT_LOG_DIR", str(VAR_DIR / "agent-logs"))
# With at least this many tools, the model first names the capabilities a task needs and the
# planner sees only matching tools (seed 000's task analysis).
# 14: the ten builtin tools and a few of an MCP server's are offered whole, as the five builtins
# and the same MCP server were below the earlier 10.
AGENT_ANALYSIS_MIN_TOOLS = env_int("AGENT_ANALYSIS_MIN_TOOLS", 14, minimum=1)
# Tasks of at most this many characters run as one step with every tool and a short prompt,
# without a planner or verifier (0: none; a task's own `fast_path` option wins).
AGENT_FAST_PATH_MAX_CHARS = env_int(
    "AGENT_FAST_PATH_MAX_CHARS", 200 if LOCAL_MODEL_IN_USE else 0, minimum=0
)
# Teams (orchestration): how many subtasks a head node may make, how deep children may
# delegate again, how long a child's summary may be (tokens, about 4 characters each), how
# much of the head node's context its children's summaries may fill together, and how many
# times an iterative team refines its work.
TEAM_MAX_SUBTASKS = env_int("TEAM_MAX_SUBTASKS", 8, minimum=1)
TEAM_MAX_DEPTH = env_int("TEAM_MAX_DEPTH", 2, minimum=1)
TEAM_SUMMARY_TOKENS = env_int("TEAM_SUMMARY_TOKENS", 400, minimum=16)
TEAM_CONTEXT_TOKENS = env_int("TEAM_CONTEXT_TOKENS", 4000, minimum=64)
TEAM_MAX_ITERATIONS = env_int("TEAM_MAX_ITERATIONS", 2, minimum=0)
RUN_MAX_TOKENS = env_int("RUN_MAX_TOKENS", 200_000, minimum=1)
RUN_MAX_TOOL_CALLS = env_int("RUN_MAX_TOOL_CALLS", 100, minimum=1)
RUN_LEASE_SECONDS = env_float("RUN_LEASE_SECONDS", 30.0, minimum=1.0)
# A person's runs running at once over every worker (queued for a worker, planning, running,
# verifying); their further runs wait their turn, chat answers first (runs/admission.py). Past
# RUNS_QUEUED_PER_USER runs waiting, a new task, chat message or agent start is refused (429).
RUNS_RUNNING_PER_USER = env_int("RUNS_RUNNING_PER_USER", 50, minimum=1)
RUNS_QUEUED_PER_USER = env_int("RUNS_QUEUED_PER_USER", 1000, minimum=1)
WORKSPACE_ROOT = BASE_DIR / env_str("WORKSPACE_ROOT", str(VAR_DIR / "workspaces"))
# A run's files as its owner sees them (Files panel, /api/v1/runs/{id}/files): the largest
# download, the most files listed, the largest text preview, the largest "Download all" zip.
RUN_FILES_MAX_BYTES = env_int("RUN_FILES_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
RUN_FILES_MAX_ENTRIES = env_int("RUN_FILES_MAX_ENTRIES", 1000, minimum=1)
RUN_FILES_PREVIEW_BYTES = env_int("RUN_FILES_PREVIEW_BYTES", 256 * 1024, minimum=1)
RUN_FILES_ZIP_MAX_BYTES = env_int("RUN_FILES_ZIP_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
# "Download all" zips one person may have streaming at once, over every web process.
RUN_FILES_ZIPS_PER_USER = env_int("RUN_FILES_ZIPS_PER_USER", 2, minimum=1)
# A run's workspace journal (runs.journal): the bytes of contents one run may store (each
# distinct content once, under WORKSPACE_ROOT/.blobs) and the most entries its workspace may
# hold; past either the journal stops and the run is not forkable past that point.
WORKSPACE_JOURNAL_MAX_BYTES = env_int("WORKSPACE_JOURNAL_MAX_BYTES", 50 * 1024 * 1024, minimum=0)
WORKSPACE_JOURNAL_MAX_FILES = env_int("WORKSPACE_JOURNAL_MAX_FILES", 5000, minimum=1)

# --- Approvals ----------------------------------------------------------------------
# Seconds a pending approval waits before its strategy decides (0: it waits for a person).
APPROVAL_TIMEOUT = env_float("APPROVAL_TIMEOUT", 0.0, minimum=0.0)
# What an expired approval decides: deny (the model hears the call was refused), skip (the
# step), cancel (the run). A task can set both for itself.
APPROVAL_TIMEOUT_STRATEGY = env_choice(
    "APPROVAL_TIMEOUT_STRATEGY", "deny", choices=("deny", "skip", "cancel")
)
# Every worker decides overdue approvals this often (seconds; 0: only when a worker starts), a
# safety net under each approval's own timer message, which a broker can lose or hold late.
APPROVAL_SWEEP_INTERVAL = env_float("APPROVAL_SWEEP_INTERVAL", 60.0, minimum=0.0)
# Every worker queues again, this often (seconds; 0: never), the runs whose worker stopped
# renewing its lease (died, froze): otherwise their message returns only after
# CELERY_VISIBILITY_TIMEOUT, or when a worker starts.
LEASE_SWEEP_INTERVAL = env_float("LEASE_SWEEP_INTERVAL", 15.0, minimum=0.0)
# How many times a step is taken over after its worker stopped mid-step (crashed, killed,
# lost its lease) before the run fails with MAX_RETRIES_EXCEEDED (seed 001: resume elsewhere, 3).
RUN_MAX_TAKEOVERS = env_int("RUN_MAX_TAKEOVERS", 3, minimum=0)

# --- Builtin tools --------------------------------------------------------------
HTTP_TOOL_MAX_BYTES = env_int("HTTP_TOOL_MAX_BYTES", 1_000_000, minimum=1)
HTTP_TOOL_TIMEOUT = env_float("HTTP_TOOL_TIMEOUT", 15.0, minimum=0.1)
HTTP_TOOL_ALLOW_PRIVATE = env_bool("HTTP_TOOL_ALLOW_PRIVATE", False)
FILE_TOOL_MAX_BYTES = env_int("FILE_TOOL_MAX_BYTES", 1_000_000, minimum=1)
# The code tools (run_python, run_command, git, git_commit) run in bubblewrap
# (tools_app/sandbox/): the binary, the programs run_command may start (looked up in /usr/bin),
# the limits of one call, how many sandboxes may run at once over every process sharing
# SANDBOX_SLOT_DIR (one lock file per slot), how long a call waits for a free one (never past
# its wall time; Cancel and Stop end the wait), and how many files and directories of the
# workspace are handed to the sandbox's user before a call (a larger workspace is refused).
# Whether the code tools are offered at all: by default not to the embedded small model, which
# called git for every task once they were in its list (bench/real_model.py: 3 of 10 done).
SANDBOX_TOOLS = env_bool("SANDBOX_TOOLS", not LOCAL_MODEL_IN_USE)
# Whether start_micro_agent is offered: by default not to the embedded small model either, which
# answered "france" to "What is the capital of France?" once it was in its list.
MICRO_AGENT_TOOL = env_bool("MICRO_AGENT_TOOL", not LOCAL_MODEL_IN_USE)
SANDBOX_BWRAP = env_str("SANDBOX_BWRAP", "bwrap")
SANDBOX_COMMANDS = [
    c.strip() for c in env_str("SANDBOX_COMMANDS", "python3,make").split(",") if c.strip()
]
SANDBOX_WALL_SECONDS = env_float("SANDBOX_WALL_SECONDS", 60.0, minimum=0.1)
SANDBOX_CPU_SECONDS = env_int("SANDBOX_CPU_SECONDS", 30, minimum=1)
SANDBOX_MEMORY_MB = env_int("SANDBOX_MEMORY_MB", 1024, minimum=64)
SANDBOX_PROCESSES = env_int("SANDBOX_PROCESSES", 64, minimum=1)
SANDBOX_OUTPUT_BYTES = env_int("SANDBOX_OUTPUT_BYTES", 64 * 1024, minimum=1)
SANDBOX_FILE_MB = env_int("SANDBOX_FILE_MB", 64, minimum=1)
SANDBOX_MAX_RUNNING = env_int("SANDBOX_MAX_RUNNING", 4, minimum=1)
SANDBOX_SLOT_DIR = BASE_DIR / env_str("SANDBOX_SLOT_DIR", str(VAR_DIR / "sandbox-slots"))
SANDBOX_SLOT_WAIT_SECONDS = env_float("SANDBOX_SLOT_WAIT_SECONDS", 30.0, minimum=0.0)
SANDBOX_WORKSPACE_ENTRIES = env_int("SANDBOX_WORKSPACE_ENTRIES", 20_000, minimum=1)
MCP_CONFIG_PATH = BASE_DIR / env_str("MCP_CONFIG_PATH", "mcp_config.json")

# --- MCP servers ------------------------------------------------------------------
# How often a process re-reads the server list (admin changes take effect within this).
MCP_POLL_INTERVAL = env_float("MCP_POLL_INTERVAL", 5.0, minimum=0.1)
# How often each live session is pinged.
MCP_HEALTH_INTERVAL = env_float("MCP_HEALTH_INTERVAL", 30.0, minimum=0.1)
# Seconds before the first reconnect to a failed server (doubling up to 30); a tool call to
# it reconnects at once.
MCP_RECONNECT_DELAY = env_float("MCP_RECONNECT_DELAY", 0.5, minimum=0.0)
# How long a worker's first run waits for the servers to connect before planning.
MCP_STARTUP_WAIT = env_float("MCP_STARTUP_WAIT", 15.0, minimum=0.0)

# --- API ------------------------------------------------------------------------
TASK_MAX_CHARS = env_int("TASK_MAX_CHARS", 20_000, minimum=1)
CONTEXT_MAX_BYTES = env_int("CONTEXT_MAX_BYTES", 1_000_000, minimum=1)
API_MAX_WAIT = env_float("API_MAX_WAIT", 120.0, minimum=0.0)
# Seconds between the keepalive comments of an idle server-sent event stream: proxies and
# clients that drop a silent connection keep it, and a stream whose run ended unseen ends.
SSE_KEEPALIVE_SECONDS = env_float("SSE_KEEPALIVE_SECONDS", 15.0, minimum=0.1)
# Server-sent event streams one person may have open at once, over every web process; the next
# is answered 429 (agents_app/streaming/slots.py).
SSE_STREAMS_PER_USER = env_int("SSE_STREAMS_PER_USER", 20, minimum=1)

# --- Sign-in and API key throttling (agents_app/core/throttle.py) ----------------------------
# Failures counted in Redis per window of this many seconds: sign-ins per account and address,
# sign-ins per address across accounts, refused API keys per address (0: no limit).
AUTH_FAILURE_WINDOW_SECONDS = env_int("AUTH_FAILURE_WINDOW_SECONDS", 900, minimum=1)
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=0)
LOGIN_FAILURE_ADDRESS_LIMIT = env_int("LOGIN_FAILURE_ADDRESS_LIMIT", 50, minimum=0)
API_KEY_FAILURE_LIMIT = env_int("API_KEY_FAILURE_LIMIT", 20, minimum=0)
# How many proxies in front of AgentDesk append to X-Forwarded-For (0: the connection's own
# address is the client's; the header is ignored, since any client can write it).
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0, minimum=0)
THROTTLE_REDIS_PREFIX = env_str("CHANNEL_PREFIX", "agentdesk") + ":throttle"

# --- Webhooks -------------------------------------------------------------------------
# Seconds one delivery attempt may take (connect and answer).
WEBHOOK_TIMEOUT = env_float("WEBHOOK_TIMEOUT", 10.0, minimum=0.1)
# Attempts before a delivery is marked failed; attempt n+1 waits BASE_DELAY * 2**(n-1) s.
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6, minimum=1)
WEBHOOK_RETRY_BASE_DELAY = env_float("WEBHOOK_RETRY_BASE_DELAY", 5.0, minimum=0.0)
# Users configure webhooks, so loopback and private targets are refused unless this is on.
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)

# --- Metrics ---------------------------------------------------------------------------
# The token Prometheus sends to GET /metrics (`Authorization: Bearer <token>`). Empty: only
# staff signed in to the site may read it.
METRICS_TOKEN = env_str("METRICS_TOKEN")
# Where every worker adds up its Celery task counters in Redis (core.task_metrics): under the
# channel prefix, so deployments and test sessions sharing one Redis keep theirs apart.
METRICS_REDIS_PREFIX = env_str("CHANNEL_PREFIX", "agentdesk") + ":metrics"

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # No log line carries a secret, whichever logger wrote it (agents_app.core.secrecy).
    "filters": {"redact": {"()": "agents_app.core.secrecy.RedactingFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact"]}
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {"httpx": {"level": "WARNING"}, "httpcore": {"level": "WARNING"}},
}
# A context just over CONTEXT_MAX_BYTES must reach the API's own check (a clear 400), not
# Django's generic refusal; far larger bodies are refused before they are read.
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * CONTEXT_MAX_BYTES + 4 * TASK_MAX_CHARS

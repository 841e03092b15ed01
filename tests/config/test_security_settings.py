"""Production by default: DEBUG off unless set, a generated secret key and the SQLite file
readable by this user only, HTTPS settings from the environment, a clean deploy check. Each
test starts Django in a fresh process with only the environment it names (the two of the
production environment share one, `production`). A process that only reads settings imports
the settings module alone: django.setup() would import every app as well, a few seconds of
processor time that change no setting."""

import json
import os
import secrets
import stat
import subprocess
import sys

import pytest

from config.env import BASE_DIR

PRODUCTION = {
    "SECRET_KEY": secrets.token_urlsafe(50),
    "ALLOWED_HOSTS": "agentdesk.example.com",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
    "SECURE_HSTS_PRELOAD": "true",
}


def run_python(tmp_path, code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "VAR_DIR": str(tmp_path / "var"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


SETTINGS = "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
SETUP = SETTINGS + "import django; django.setup()\n"


def settings_of(tmp_path, *names, **env) -> dict:
    code = SETTINGS + (
        "from django.conf import settings; import json\n"
        f"print(json.dumps({{n: getattr(settings, n, None) for n in {list(names)!r}}}))"
    )
    result = run_python(tmp_path, code, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_debug_is_off_unless_asked_for(tmp_path):
    assert settings_of(tmp_path, "DEBUG") == {"DEBUG": False}
    assert settings_of(tmp_path, "DEBUG", DEBUG="true") == {"DEBUG": True}


def test_without_a_secret_key_one_is_generated_once_for_this_user_only(tmp_path):
    first = settings_of(tmp_path, "SECRET_KEY")["SECRET_KEY"]
    again = settings_of(tmp_path, "SECRET_KEY")["SECRET_KEY"]
    assert first == again and len(first) >= 50
    assert mode(tmp_path / "var" / "secret_key") == 0o600
    assert mode(tmp_path / "var") == 0o700


def test_the_sqlite_database_is_created_readable_by_this_user_only(tmp_path):
    result = run_python(
        tmp_path, SETTINGS + "from django.db import connection; connection.ensure_connection()"
    )
    assert result.returncode == 0, result.stderr
    assert mode(tmp_path / "var" / "agentdesk.sqlite3") == 0o600


# An API request over each scheme, on a migrated database of its own; with DEPLOY_CHECK set,
# first `manage.py check --deploy --fail-level WARNING` in the same process.
REQUESTS = (
    SETUP
    + """
import io, json, os
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import Client
from django.test.utils import setup_test_environment
found = {}
if os.environ.get("DEPLOY_CHECK"):
    report = io.StringIO()
    try:
        call_command("check", deploy=True, fail_level="WARNING", stdout=report, stderr=report)
        found["deploy_check"] = {"clean": True, "report": report.getvalue()}
    except SystemCheckError as error:
        found["deploy_check"] = {"clean": False, "report": report.getvalue() + str(error)}
call_command("migrate", verbosity=0)
setup_test_environment()
found["answers"] = []
for headers in json.loads(os.environ["REQUEST_HEADERS"]):
    response = Client(SERVER_NAME="agentdesk.example.com").get("/api/v1/runs", **headers)
    found["answers"].append({
        "status": response.status_code,
        "location": response.get("Location"),
        "hsts": response.get("Strict-Transport-Security"),
        "secure_cookies": [settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE],
    })
print(json.dumps(found))
"""
)


def request_over(tmp_path, *headers: dict, **env) -> dict:
    result = run_python(tmp_path, REQUESTS, REQUEST_HEADERS=json.dumps(headers), **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def production(tmp_path_factory) -> dict:
    """What a process in the production environment finds: the deploy check, and the answers
    to a request over TLS and to one over plain HTTP, both behind the TLS proxy."""
    return request_over(
        tmp_path_factory.mktemp("production"),
        {"HTTP_X_FORWARDED_PROTO": "https"},
        {"HTTP_X_FORWARDED_PROTO": "http"},
        DEPLOY_CHECK="1",
        **PRODUCTION,
    )


def test_behind_a_tls_proxy_cookies_are_secure_hsts_is_sent_and_http_is_redirected(production):
    over_tls, plain = production["answers"]
    assert over_tls["status"] == 401
    assert over_tls["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert over_tls["secure_cookies"] == [True, True]
    assert plain["status"] == 301
    assert plain["location"] == "https://agentdesk.example.com/api/v1/runs"


@pytest.mark.slow(reason="starts daphne with a production configuration in a subprocess")
def test_without_https_settings_nothing_insists_on_tls(tmp_path):
    [local] = request_over(tmp_path, {}, ALLOWED_HOSTS="agentdesk.example.com")["answers"]
    assert local["status"] == 401
    assert local["hsts"] is None
    assert local["secure_cookies"] == [False, False]


def test_the_deploy_check_is_clean_in_a_production_environment(production):
    check = production["deploy_check"]
    assert check["clean"], check["report"]
    assert "no issues" in check["report"]


def test_the_deploy_check_asks_for_a_shared_secret_key(tmp_path):
    env = {k: v for k, v in PRODUCTION.items() if k != "SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "VAR_DIR": str(tmp_path / "var"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "agentdesk.W001" in result.stdout + result.stderr

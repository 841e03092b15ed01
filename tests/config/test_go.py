"""`uv run go` starts the whole stack, keeps it running and stops all of it; `ensure_admin`
makes the first login.

A `go` takes over 20 s of processor time to start (migrations, static files, daphne, a Celery
worker, Valkey), and a loaded machine a minute. The tests that need one that is up, and leave
it up (a child they kill is started again), share one (`shared_go`); the signal tests take it
and stop it (`go_to_stop`). Tests that start `go` with settings of their own start their own
(`start_go`).
"""

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path

import pytest
from celery import Celery
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command

from config.celery import app as celery_app
from config.env import BASE_DIR, embedded_redis_url_file
from config.supervision import RESTART_FIRST_DELAY, RESTART_RESET_AFTER, Backoff
from tests.support.go import START_TIMEOUT, STOP_TIMEOUT, RunningGo, go_environment
from tests.support.local_model import smollm2_path
from tests.support.processes import free_port
from tests.support.script import asked, plan_reply, step, verdict
from tests.support.waiting import wait_for

WORKER = f"agentdesk@{socket.gethostname()}"  # the name `go` gives its worker (-n agentdesk@%h)

# `go` here always runs its embedded stack (its own SQLite file and Valkey), whatever
# DATABASE_URL says, so a pass against PostgreSQL would only repeat these minutes.
embedded_pass_only = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")),
    reason="the launcher test starts its own embedded stack: run in the embedded-defaults pass",
)


def _is_running(pid: int, start_time: str) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return stat[19] == start_time and stat[0] != "Z"


def _stop_leaving_nothing(go: RunningGo, stop_signal: int) -> None:
    """`stop_signal` stops `go` cleanly (exit code 0), and every process below it with it."""
    children = go.descendants()
    go.process.send_signal(stop_signal)
    assert go.process.wait(timeout=STOP_TIMEOUT) == 0, go.output
    assert [pid for pid, started in children if _is_running(pid, started)] == []


@pytest.fixture
def go_env(tmp_path: Path) -> dict[str, str]:
    return go_environment(tmp_path)


@pytest.fixture
def start_go(go_env: dict[str, str]) -> Iterator[Callable[[], RunningGo]]:
    launched: list[RunningGo] = []

    def start() -> RunningGo:
        launched.append(RunningGo(go_env))
        return launched[-1]

    yield start
    for go in launched:
        go.kill()


class SharedGo:
    """The `go` that the tests of this module share, started when a test first asks for it
    (`running`). A test that stops it takes it (`take`), and a test that fails throws it away
    (`discard`), as it may have left it broken: the next test that asks gets a new one, in the
    same directory, as a second `uv run go` finds the first one's database and static files
    (its migrations and collectstatic then have nothing to do: a quarter less processor time
    to start)."""

    def __init__(self, directory: Path, overrides: dict[str, str]) -> None:
        self.directory = directory
        self.overrides = overrides
        self.go: RunningGo | None = None
        self.launched: list[RunningGo] = []

    def running(self) -> RunningGo:
        if self.go is None:
            go = RunningGo(go_environment(self.directory, **self.overrides))
            self.launched.append(go)
            go.wait_for_output("AgentDesk is running at", START_TIMEOUT)
            self.go = go
        return self.go

    def take(self) -> RunningGo:
        go = self.running()
        self.go = None
        return go

    def discard(self) -> None:
        if self.go is not None:
            self.go.kill()
            self.go = None


@pytest.fixture(scope="module")
def module_go(llm_server, tmp_path_factory) -> Iterator[SharedGo]:
    """The module's shared `go`, with the scripted LLM and a lease of a few seconds, a little
    longer than a new worker takes to start: a dead worker's run is then taken over when its
    lease expires, not by the new worker's startup (nor, an hour later, by Redis). Its
    LOCAL_MODEL names no file: the explicit LLM_BASE_URL wins, so `go` neither checks nor
    starts it."""
    shared = SharedGo(
        tmp_path_factory.mktemp("go"),
        {
            "LLM_BASE_URL": llm_server.base_url,
            "LLM_MODEL": "scripted",
            "LOCAL_MODEL": "no/such/model.gguf",
            "RUN_LEASE_SECONDS": "8",
            "LLM_RETRY_BASE_DELAY": "0.05",
        },
    )
    yield shared
    try:
        if shared.go is not None:
            # No signal test took it after the tests that had `go` start a child again: its
            # clean stop covers those replacements here. Nothing of theirs is left behind.
            _stop_leaving_nothing(shared.go, signal.SIGTERM)
    finally:
        for go in shared.launched:
            go.kill()


@pytest.fixture
def shared_go(module_go: SharedGo, request) -> Iterator[RunningGo]:
    """The shared `go`, up, for a test that leaves it up: a child it kills must be running
    again, and answering, when the test ends."""
    failures = request.session.testsfailed
    yield module_go.running()
    if request.session.testsfailed > failures:
        module_go.discard()


@pytest.fixture
def go_to_stop(module_go: SharedGo) -> Iterator[RunningGo]:
    """The shared `go`, up, for a test that stops it: the next test that asks gets a new one."""
    go = module_go.take()
    yield go
    go.kill()


def _celery_ping(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "inspect", "ping", "--timeout=2",
         f"--destination={WORKER}"],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _worker_answers(go: RunningGo) -> bool:
    """Whether `go`'s worker answers a Celery ping through `go`'s Valkey, asked from this
    process: a `celery inspect ping` costs a Python process of its own each time. An app of
    its own: the project's would publish the ping to this process's broker, whatever
    connection it is given (kombu's pidbox takes a producer from the app's pool)."""
    url = embedded_redis_url_file(Path(go.env["VAR_DIR"])).read_text()
    app = Celery(broker=url, set_as_current=False)
    # `go` inherited this process's CELERY_CONTROL_EXCHANGE.
    app.conf.control_exchange = celery_app.conf.control_exchange
    try:
        return bool(app.control.ping([WORKER], timeout=2))
    finally:
        app.close()


def _child(go: RunningGo, needle: str) -> int:
    """The pid of the launcher's direct child whose command line holds `needle`."""
    children = Path(f"/proc/{go.process.pid}/task/{go.process.pid}/children").read_text().split()
    matching = [int(pid) for pid in children if needle in Path(f"/proc/{pid}/cmdline").read_text()]
    assert len(matching) == 1, (needle, matching)
    return matching[0]


def _api(port: str, key: str, method: str, path: str, body: dict | None = None) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _run_status(port: str, key: str, run_id: int) -> str:
    return _api(port, key, "GET", f"/api/v1/runs/{run_id}")["status"]


@pytest.mark.integration
@embedded_pass_only
@pytest.mark.slow(
    reason="starts the shared go (migrate, collectstatic, daphne, worker, Valkey) and waits out a killed worker's lease"
)
def test_a_killed_worker_is_replaced_and_its_run_in_flight_completes(
    shared_go: RunningGo, llm_server
) -> None:
    llm_server.reset()
    llm_server.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("say hello"))]},
            # The first attempt hangs until its worker is killed; the resumed one answers.
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [{"delay": 60, "content": "too late"}, {"content": "hello"}],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "said hello")]},
        ]
    )
    go, start = shared_go, len(shared_go.lines)
    assert "go: LLM_BASE_URL is set, so the local model " in go.output
    port, key = go.env["PORT"], _api_key(go.env)
    run_id = _api(port, key, "POST", "/api/v1/agent/task", {"task": "Say hello"})["run_id"]
    wait_for(lambda: asked(llm_server, "AGENTDESK:STEP 0"), 60, message="the step's request")
    worker = _child(go, "celery")

    os.kill(worker, signal.SIGKILL)

    go.wait_for_output("go: worker restarted (pid ", STOP_TIMEOUT, since=start)
    killed = f"go: worker (pid {worker}) was killed by SIGKILL (exit code -9)"
    assert killed in go.output_since(start)
    assert _child(go, "celery") != worker
    wait_for(
        lambda: _run_status(port, key, run_id) in ("succeeded", "failed"),
        60,
        0.5,
        f"run {run_id} to finish; `go` said:\n{go.output[-3000:]}",
    )
    assert _run_status(port, key, run_id) == "succeeded"
    # Ctrl-C's and SIGTERM's clean stop covers the replacement too: the signal test that takes
    # this `go`, or the end of the module, stops it and finds nothing left behind.


@pytest.mark.integration
@embedded_pass_only
def test_var_and_everything_under_it_are_private_after_a_first_go(shared_go: RunningGo) -> None:
    """After the first `go` in a new directory (and the run of the test before, when it ran):
    var/, the embedded Valkey's data, the secret key, the static files and the workspaces are
    this user's alone."""
    var = Path(shared_go.env["VAR_DIR"])
    paths = [var, *var.rglob("*")]
    assert len(paths) > 10  # Valkey's files, the secret key, the static files at least
    readable_by_others = [
        f"{path} {stat.filemode(mode)}"
        for path in paths
        if (mode := path.lstat().st_mode) & 0o077 and not stat.S_ISLNK(mode)
    ]
    assert readable_by_others == []


@pytest.mark.integration
@embedded_pass_only
def test_a_web_server_that_dies_is_started_again(shared_go: RunningGo) -> None:
    go, start = shared_go, len(shared_go.lines)
    web = _child(go, "daphne")

    os.kill(web, signal.SIGKILL)

    go.wait_for_output("go: web restarted (pid ", STOP_TIMEOUT, since=start)
    assert f"go: web (pid {web}) was killed by SIGKILL (exit code -9)" in go.output_since(start)
    login = f"http://127.0.0.1:{go.env['PORT']}/admin/login/"
    wait_for(lambda: _answers(login), 30, 0.2, "the new web server to answer")
    assert go.process.poll() is None


@pytest.mark.integration
@embedded_pass_only
def test_an_embedded_valkey_that_dies_is_started_again_on_its_address(
    shared_go: RunningGo,
) -> None:
    go, start = shared_go, len(shared_go.lines)
    url = embedded_redis_url_file(Path(go.env["VAR_DIR"])).read_text()
    valkey = _child(go, "valkey")

    os.kill(valkey, signal.SIGKILL)

    go.wait_for_output(f"go: embedded Valkey started again at {url}", STOP_TIMEOUT, since=start)
    assert "go: embedded Valkey was killed by SIGKILL (exit code -9)" in go.output_since(start)
    # Runs whose message it lost are queued again.
    go.wait_for_output("go: queueing again the runs no worker holds", STOP_TIMEOUT, since=start)
    # The worker, which has the address in REDIS_URL, finds it again.
    wait_for(lambda: _worker_answers(go), 60, 0.5, "the worker to answer")
    assert go.process.poll() is None
    assert "runs_recover` failed" not in go.output_since(start)


def _api_key(env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", "create_api_key", "admin"],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip


# After the tests above: SIGTERM, the first, stops the `go` they shared, so its clean stop
# covers the worker, web server and Valkey they had it start again; SIGINT gets a new one.
@pytest.mark.integration
@embedded_pass_only
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.slow(
    reason="a whole go (migrate, collectstatic, daphne, worker, Valkey) serves a run, then stops on the signal"
)
def test_it_serves_runs_a_worker_and_stops_everything_on_a_signal(
    go_to_stop: RunningGo, stop_signal: signal.Signals
) -> None:
    go = go_to_stop
    port = go.env["PORT"]
    assert (
        f"running at http://127.0.0.1:{port}/ (API docs: http://127.0.0.1:{port}/api/docs)"
        in go.output
    )

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/admin/login/", timeout=10) as response:
        assert response.status == 200

    # The worker answers through the embedded Valkey, found via the url file like manage.py
    # does. The worker may still be starting: this process asks until it answers, so that
    # `celery inspect ping`, a Python process of its own, normally runs once.
    url_file = embedded_redis_url_file(Path(go.env["VAR_DIR"]))
    assert url_file.read_text().startswith("redis://127.0.0.1:")
    wait_for(lambda: _worker_answers(go), 60, 0.5, "the worker to answer")
    deadline = time.monotonic() + 30
    while (ping := _celery_ping(go.env)).returncode != 0 and time.monotonic() < deadline:
        time.sleep(1)
    assert "pong" in ping.stdout, ping.stdout + ping.stderr

    assert len(go.descendants()) >= 3  # valkey, daphne, the worker (its runs are threads)
    _stop_leaving_nothing(go, stop_signal)
    assert not url_file.exists()


@pytest.mark.integration
@embedded_pass_only
@pytest.mark.slow(
    reason="a whole go with the llama.cpp server: SmolLM2 answers a task on one CPU thread"
)
def test_with_local_model_it_serves_the_gguf_and_a_task_gets_answers_from_it(
    start_go, go_env: dict[str, str]
) -> None:
    model_port = free_port()
    go_env.update(
        LOCAL_MODEL=str(smollm2_path()),
        LOCAL_MODEL_PORT=str(model_port),
        # A small context bounds what a 135M model that rambles can generate: its plan, after
        # the planning prompt's ~760 tokens, is cut off within about 10 s.
        LOCAL_MODEL_CONTEXT="1536",
        LOCAL_MODEL_THREADS="1",  # see tests/support/local_model.py
        LLM_BASE_URL="",  # nothing configured: the web side and the worker find it by themselves
        LLM_MODEL="",
        RUN_MAX_TOKENS="1",  # the first answer ends the run: the test needs only that one
    )
    go = start_go()
    go.wait_for_output("AgentDesk is running at", START_TIMEOUT)
    model = smollm2_path().stem
    assert f"go: local model {model} at http://127.0.0.1:{model_port}/v1" in go.output
    assert "local model: serving" in go.output  # its lines stand out
    port, key = go_env["PORT"], _api_key(go_env)

    run_id = _api(port, key, "POST", "/api/v1/agent/task", {"task": "Say hello"})["run_id"]

    wait_for(
        lambda: _run_status(port, key, run_id) in ("succeeded", "failed"),
        60,
        0.5,
        f"run {run_id} to finish; `go` said:\n{go.output[-3000:]}",
    )
    run = _api(port, key, "GET", f"/api/v1/runs/{run_id}")
    assert run["prompt_tokens"] > 0 and run["completion_tokens"] > 0, run
    events = _api(port, key, "GET", f"/api/v1/runs/{run_id}/events")["events"]
    assert [e["payload"]["model"] for e in events if e["type"] == "llm_usage"][:1] == [model]

    # It stops with the rest, after the worker.
    _stop_leaving_nothing(go, signal.SIGTERM)
    assert go.output.index("local model: stopped") > go.output.index("worker: Warm shutdown")


@embedded_pass_only
def test_a_missing_local_model_file_stops_go_with_its_path(
    start_go, go_env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "models" / "missing.gguf"
    go_env.update(LOCAL_MODEL=str(missing), LLM_BASE_URL="")

    go = start_go()

    assert go.process.wait(timeout=STOP_TIMEOUT) == 1
    assert f"go: LOCAL_MODEL names {missing}, which is not a file; stopping" in go.output
    assert "Traceback" not in go.output
    assert "embedded Valkey" not in go.output  # refused before anything started


def test_restarts_wait_longer_after_each_quick_death_and_start_over_after_a_long_run() -> None:
    backoff = Backoff()

    quick = [backoff.delay_after(ran_for=2.0) for _ in range(7)]
    after_a_long_run = backoff.delay_after(ran_for=RESTART_RESET_AFTER)

    assert quick == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert after_a_long_run == RESTART_FIRST_DELAY


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.django_db
def test_ensure_admin_prints_a_generated_password_once(monkeypatch) -> None:
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("ADMIN_USERNAME", raising=False)
    first, second = StringIO(), StringIO()

    call_command("ensure_admin", stdout=first)
    call_command("ensure_admin", stdout=second)

    password = re.search(r"password: (\S+)", first.getvalue()).group(1)
    assert authenticate(username="admin", password=password).is_superuser
    assert second.getvalue() == ""


@pytest.mark.django_db
def test_ensure_admin_uses_admin_password_without_printing_it(monkeypatch) -> None:
    monkeypatch.setenv("ADMIN_USERNAME", "boss")
    monkeypatch.setenv("ADMIN_PASSWORD", "a-long-chosen-password")
    out = StringIO()

    call_command("ensure_admin", stdout=out)

    assert authenticate(username="boss", password="a-long-chosen-password").is_superuser
    assert "a-long-chosen-password" not in out.getvalue()


@pytest.mark.django_db
def test_ensure_admin_leaves_an_existing_superuser_alone(monkeypatch) -> None:
    get_user_model().objects.create_superuser("root", "", "pw-root-1234")
    monkeypatch.setenv("ADMIN_PASSWORD", "ignored-password")

    call_command("ensure_admin", stdout=StringIO())

    assert list(get_user_model().objects.values_list("username", flat=True)) == ["root"]

import time

import pytest

from agents_app.models import Run
from tests.support.llm_server import ScriptedLLMServer
from tests.support.worker import Worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def llm_server():
    server = ScriptedLLMServer().start()
    yield server
    server.stop()


@pytest.fixture
def llm(llm_server, settings):
    """The scripted LLM, reset, and the web side configured to use it."""
    llm_server.reset()
    settings.LLM_BASE_URL = llm_server.base_url
    settings.LLM_MODEL = "scripted"
    return llm_server


@pytest.fixture
def start_worker(llm_server, tmp_path, transactional_db):
    """Start real Celery workers on demand; all are stopped after the test."""
    workers: list[Worker] = []

    def start(name: str = "w1", **env: str) -> Worker:
        env.setdefault("LLM_BASE_URL", llm_server.base_url)
        env.setdefault("LLM_MODEL", "scripted")
        worker = Worker(name, tmp_path, **env).start()
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, message: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {message or predicate}")


def wait_for_run(run_id: int, timeout: float = 60.0) -> Run:
    def finished():
        run = Run.objects.get(pk=run_id)
        return run if run.is_terminal else None

    return wait_for(finished, timeout, 0.2, f"run {run_id} to finish")

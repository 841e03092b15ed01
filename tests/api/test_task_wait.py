"""POST /api/v1/agent/task with `wait`: the AgentResult once the run ends, else 202 with links.

A background thread plays the worker: it waits for the submitted run to be committed and ends
it through the engine's own `finish`. That needs real commits, hence `transactional_db`.
"""

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection

from agents_app.models import AuditInterface, Run, RunStatus
from agents_app.runs import services
from tests.support.api import assert_error, submit
from tests.support.runs import end

pytestmark = pytest.mark.usefixtures("llm_configured")


class FakeWorker(threading.Thread):
    """Ends the first run of `owner` as soon as it is committed, with `action(run)`."""

    def __init__(self, owner, action: Callable[[Run], object]):
        super().__init__(daemon=True)
        self.owner = owner
        self.action = action
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                run = Run.objects.filter(owner=self.owner).first()
                if run is not None:
                    self.action(run)
                    return
                time.sleep(0.01)
            raise AssertionError("no run was submitted")
        except BaseException as exc:
            self.error = exc
        finally:
            connection.close()

    def finish(self) -> None:
        self.join(timeout=10)
        if self.error is not None:
            raise self.error


@pytest.fixture
def worker(owner):
    workers = []

    def start(action: Callable[[Run], object]) -> FakeWorker:
        w = FakeWorker(owner, action)
        w.start()
        workers.append(w)
        return w

    yield start
    for w in workers:
        w.finish()


# --- the wait ends before the run -------------------------------------------------------------


def test_a_wait_that_times_out_answers_202_with_the_links(owner_api, settings):
    settings.API_MAX_WAIT = 0.3
    started = time.monotonic()

    response = submit(owner_api, wait=True)

    assert time.monotonic() - started < 3
    assert response.status_code == 202
    body = response.json()
    run = Run.objects.get()
    assert body["run_id"] == run.pk
    assert body["status"] == "queued"
    assert body["links"]["events"] == f"/api/v1/runs/{run.pk}/events"


def test_a_longer_wait_timeout_is_capped_by_api_max_wait(owner_api, settings):
    settings.API_MAX_WAIT = 0.3
    started = time.monotonic()

    response = submit(owner_api, wait=True, wait_timeout=60)

    assert time.monotonic() - started < 3
    assert response.status_code == 202


def test_a_shorter_wait_timeout_ends_the_wait_early(owner_api, settings):
    settings.API_MAX_WAIT = 60
    started = time.monotonic()

    response = submit(owner_api, wait=True, wait_timeout=0.3)

    assert time.monotonic() - started < 3
    assert response.status_code == 202


def test_a_wait_timeout_without_wait_does_not_wait(owner_api, settings):
    settings.API_MAX_WAIT = 60
    started = time.monotonic()

    response = submit(owner_api, wait_timeout=30)

    assert time.monotonic() - started < 3
    assert response.status_code == 202


# --- the run ends during the wait -----------------------------------------------------------


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_run_that_succeeds_during_the_wait_answers_200_with_the_agent_result(
    owner_api, settings, worker
):
    settings.API_MAX_WAIT = 10
    worker(lambda run: end(run, RunStatus.SUCCEEDED, response="42 words"))

    response = submit(owner_api, task="Count the words", wait=True)

    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True
    result = body["result"]
    run = Run.objects.get()
    assert result["run_id"] == run.pk
    assert result["task_description"] == "Count the words"
    assert (result["status"], result["success"]) == ("succeeded", True)
    assert result["response"] == "42 words"
    assert result["final_error"] is None
    assert result["executed_steps"] == []
    assert result["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "tool_calls": 0}
    assert result["execution_time"] >= 0


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_run_that_fails_during_the_wait_answers_with_its_error_code_and_status(
    owner_api, settings, worker
):
    settings.API_MAX_WAIT = 10
    worker(lambda run: end(run, RunStatus.FAILED, "BUDGET_EXCEEDED", "Token budget spent"))

    response = submit(owner_api, wait=True)

    error = assert_error(response, 429, "BUDGET_EXCEEDED")
    run = Run.objects.get()
    assert error["message"] == "Token budget spent"
    assert error["details"] == {"run_id": run.pk}
    result = response.json()["result"]
    assert (result["status"], result["success"]) == ("failed", False)
    assert result["final_error"] == {"code": "BUDGET_EXCEEDED", "message": "Token budget spent"}


@pytest.mark.dialect
@pytest.mark.django_db(transaction=True)
def test_a_run_cancelled_during_the_wait_answers_409_with_the_agent_result(
    owner_api, settings, worker
):
    settings.API_MAX_WAIT = 10
    worker(lambda run: services.run_cancel(run=run, actor=run.owner, interface=AuditInterface.API))

    response = submit(owner_api, wait=True)

    error = assert_error(response, 409, "CANCELLED")
    assert error["details"] == {"run_id": Run.objects.get().pk}
    result = response.json()["result"]
    assert result["status"] == "cancelled"
    assert result["final_error"]["code"] == "CANCELLED"

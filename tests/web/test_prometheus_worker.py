"""The Celery task metrics of a real worker, another process, reach the web process's /metrics
through Redis (core.task_metrics)."""

import pytest

from agents_app.core.dispatch import TaskName, send
from tests.support.metrics import sample, scraped
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

TOKEN = "worker-metrics-token"
TASK = str(TaskName.EXPIRE_APPROVAL)


def test_a_task_a_worker_ran_is_counted_on_the_web_side(shared_worker, client, settings):
    settings.METRICS_TOKEN = TOKEN

    def scrape() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        return scraped(response.content.decode())

    def value(parsed, name, **labels) -> float:
        return sample(parsed, name, task=TASK, **labels) or 0

    before = scrape()
    # An approval that does not exist: the task finds nothing to decide and succeeds at once.
    send(TaskName.EXPIRE_APPROVAL, 10**12)

    def counted() -> bool:
        now = scrape()
        return value(now, "agentdesk_celery_task_runtime_seconds_count") > value(
            before, "agentdesk_celery_task_runtime_seconds_count"
        )

    assert wait_until(counted, timeout=30), shared_worker.log()[-3000:]
    after = scrape()
    for state in ("received", "succeeded"):
        assert value(after, "agentdesk_celery_tasks_total", state=state) == (
            value(before, "agentdesk_celery_tasks_total", state=state) + 1
        )
    assert value(after, "agentdesk_celery_tasks_total", state="failed") == value(
        before, "agentdesk_celery_tasks_total", state="failed"
    )

"""GET /metrics: Prometheus's text format, read by prometheus_client's parser; the profiles'
figures over every user's runs, the Celery task metrics recorded in Redis by the processes
that ran the tasks; a bearer token or a staff session, nothing open by default."""

import uuid

import pytest
import redis
from celery import shared_task
from django.conf import settings

import agents_app.tasks  # noqa: F401  (connects the task metrics' signal handlers, as workers do)
from agents_app.models import RunStatus
from tests.support.metrics import sample, scraped, shaped_run

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-metrics-token-for-tests"


@shared_task(name="tests.metrics.succeeds")
def succeeds(value: int) -> int:
    return value * 2


@shared_task(name="tests.metrics.fails")
def fails() -> None:
    raise ValueError("this task fails")


@shared_task(name="tests.metrics.retries_once", bind=True, max_retries=1)
def retries_once(self, attempts: list) -> str:
    attempts.append(len(attempts))
    if len(attempts) == 1:
        raise self.retry(countdown=0)
    return "done"


@pytest.fixture(autouse=True)
def own_task_counters(settings):
    """Counters of this test's own in Redis: the test session's are shared with its workers."""
    prefix = settings.METRICS_REDIS_PREFIX = f"test-metrics-{uuid.uuid4().hex}"
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)  # before a test points it away
    yield
    client.delete(*client.keys(f"{prefix}:*") or ["-"])


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape(client, **headers) -> dict:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    return scraped(response.content.decode())


# --- Who may read it ---------------------------------------------------------------------


def test_without_credentials_it_asks_for_the_token(client, token):
    response = client.get("/metrics")

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_the_token_lets_prometheus_read_it(client, token):
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    assert "agentdesk_profile_runs_total" in response.content.decode()


def test_a_wrong_token_is_refused(client, token):
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Basic {TOKEN}").status_code == 401


def test_with_no_token_set_a_bearer_header_opens_nothing(client, settings):
    settings.METRICS_TOKEN = ""

    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert client.get("/metrics").status_code == 401


def test_staff_signed_in_may_read_it_without_the_token(staff_session, settings):
    settings.METRICS_TOKEN = ""

    assert staff_session.get("/metrics").status_code == 200


def test_a_user_who_is_not_staff_may_not(owner_session, token):
    assert owner_session.get("/metrics").status_code == 403


def test_prometheus_may_ask_for_openmetrics(client, token):
    response = client.get(
        "/metrics",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_ACCEPT="application/openmetrics-text; version=1.0.0",
    )

    assert response["Content-Type"].startswith("application/openmetrics-text")
    assert response.content.decode().endswith("# EOF\n")


# --- The profiles' figures ---------------------------------------------------------------


@pytest.mark.dialect
def test_each_profiles_figures_over_every_users_runs(
    client, token, owner, outsider, seeded_profiles
):
    research = seeded_profiles["research_agent"]
    shaped_run(owner, research, seconds=10, prompt_tokens=100, completion_tokens=10)
    shaped_run(outsider, research, seconds=20, prompt_tokens=1)
    shaped_run(outsider, research, RunStatus.FAILED)
    shaped_run(owner, research, RunStatus.CANCELLED)
    shaped_run(owner, research, RunStatus.RUNNING)
    shaped_run(owner, None, RunStatus.FAILED)

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def research_value(name, **labels):
        return sample(parsed, name, profile="research_agent", **labels)

    assert research_value("agentdesk_profile_runs_total", outcome="succeeded") == 2
    assert research_value("agentdesk_profile_runs_total", outcome="failed") == 1
    assert research_value("agentdesk_profile_runs_total", outcome="cancelled") == 1
    assert research_value("agentdesk_profile_runs_active") == 1
    assert research_value("agentdesk_profile_tokens_total", type="prompt") == 101
    assert research_value("agentdesk_profile_tokens_total", type="completion") == 10
    assert research_value("agentdesk_profile_completion_seconds_count") == 2
    assert research_value("agentdesk_profile_completion_seconds_sum") == 30
    assert research_value("agentdesk_profile_average_completion_seconds") == 15
    assert research_value("agentdesk_profile_error_ratio") == pytest.approx(1 / 3)
    assert sample(parsed, "agentdesk_profile_error_ratio", profile="no profile") == 1
    # A profile without runs: zero counts, and no average or error rate to give.
    assert (
        sample(parsed, "agentdesk_profile_runs_total", profile="builder_agent", outcome="succeeded")
        == 0
    )
    assert sample(parsed, "agentdesk_profile_error_ratio", profile="builder_agent") is None


# --- Celery task metrics -----------------------------------------------------------------


@pytest.mark.dialect
def test_a_task_that_succeeds_is_counted_with_its_runtime(client, token):
    assert succeeds.apply(args=(21,)).get() == 42
    assert succeeds.apply(args=(1,)).get() == 2

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    task = "tests.metrics.succeeds"
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="succeeded") == 2
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="failed") is None
    assert sample(parsed, "agentdesk_celery_task_runtime_seconds_count", task=task) == 2
    assert sample(parsed, "agentdesk_celery_task_runtime_seconds_bucket", task=task, le="+Inf") == 2
    assert sample(parsed, "agentdesk_celery_task_runtime_seconds_sum", task=task) >= 0
    assert sample(parsed, "agentdesk_celery_task_metrics_available") == 1


@pytest.mark.dialect
def test_a_task_that_fails_is_counted_as_failed(client, token):
    assert fails.apply().failed()

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    task = "tests.metrics.fails"
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="failed") == 1
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="succeeded") is None
    assert sample(parsed, "agentdesk_celery_task_runtime_seconds_count", task=task) == 1


@pytest.mark.dialect
def test_a_retried_task_is_counted_as_retried_then_as_it_ended(client, token):
    attempts: list = []
    assert retries_once.apply(args=(attempts,)).get() == "done"

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    task = "tests.metrics.retries_once"
    assert attempts == [0, 1]
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="retried") == 1
    assert sample(parsed, "agentdesk_celery_tasks_total", task=task, state="succeeded") == 1
    # Both executions are timed, the retried one and the one that succeeded.
    assert sample(parsed, "agentdesk_celery_task_runtime_seconds_count", task=task) == 2


@pytest.mark.dialect
def test_the_runtime_buckets_are_cumulative(client, token):
    from agents_app.core.task_metrics import observe

    observe("tests.metrics.timed", 0.2)
    observe("tests.metrics.timed", 7.0)

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def bucket(le):
        return sample(
            parsed,
            "agentdesk_celery_task_runtime_seconds_bucket",
            task="tests.metrics.timed",
            le=le,
        )

    assert (bucket("0.1"), bucket("0.5"), bucket("5.0"), bucket("10.0"), bucket("+Inf")) == (
        0,
        1,
        1,
        2,
        2,
    )
    assert sample(
        parsed, "agentdesk_celery_task_runtime_seconds_sum", task="tests.metrics.timed"
    ) == pytest.approx(7.2)


def test_a_redis_out_of_reach_says_so_and_the_profiles_are_still_there(
    client, token, settings, seeded_profiles
):
    # Nothing listens on port 1: the connection is refused at once.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"

    parsed = scrape(client, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert sample(parsed, "agentdesk_celery_task_metrics_available") == 0
    assert sample(parsed, "agentdesk_profile_runs_active", profile="research_agent") == 0


def test_a_task_runs_when_its_metrics_cannot_be_recorded(settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"

    assert succeeds.apply(args=(2,)).get() == 4
    assert fails.apply().failed()


@pytest.mark.dialect
def test_the_counters_live_under_the_deployments_prefix(token):
    succeeds.apply(args=(1,)).get()

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    keys = sorted(key.decode() for key in client.keys(f"{settings.METRICS_REDIS_PREFIX}:*"))

    assert keys == [
        f"{settings.METRICS_REDIS_PREFIX}:celery:runtime",
        f"{settings.METRICS_REDIS_PREFIX}:celery:tasks",
    ]

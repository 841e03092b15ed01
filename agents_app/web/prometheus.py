"""GET /metrics: Prometheus's view of the site, in its text format (prometheus_client).

What it exposes, all computed when Prometheus scrapes, so any web process answers the same:
- each agent profile's figures over every run (`orchestration.metrics.site_profile_metrics`,
  two SQL queries): runs by outcome, active runs, tokens, completion time as a summary (its
  `_sum` / `_count` give the average over any window), the average and the error rate;
- the Celery task counters and runtimes every worker recorded in Redis (`core.task_metrics`).

Who may read it: a request with `Authorization: Bearer <METRICS_TOKEN>` (Prometheus), or staff
signed in to the site (a browser). With METRICS_TOKEN empty only staff may: nothing is open by
default. The figures are the whole site's, not one person's, which is why ordinary users may
not; they see their own on the metrics page.
"""

import hmac
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    SummaryMetricFamily,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from agents_app.core.task_metrics import TaskMetricsCollector
from agents_app.orchestration.metrics import site_profile_metrics
from agents_app.runs.admission import queue_counts


class ProfileMetricsCollector(Collector):
    """The per-profile figures over every run, read from the database at scrape time."""

    def collect(self) -> Iterator[Any]:
        figures = site_profile_metrics()
        runs = CounterMetricFamily(
            "agentdesk_profile_runs",
            "Finished runs of each agent profile, by outcome ('no profile': runs without one).",
            labels=["profile", "outcome"],
        )
        active = GaugeMetricFamily(
            "agentdesk_profile_runs_active",
            "Runs of each agent profile not finished yet (queued, working or parked).",
            labels=["profile"],
        )
        tokens = CounterMetricFamily(
            "agentdesk_profile_tokens",
            "LLM tokens the runs of each agent profile used, prompt and completion.",
            labels=["profile", "type"],
        )
        completion = SummaryMetricFamily(
            "agentdesk_profile_completion_seconds",
            "Wall time of each agent profile's succeeded runs, from start to end.",
            labels=["profile"],
        )
        average = GaugeMetricFamily(
            "agentdesk_profile_average_completion_seconds",
            "Average wall time of each agent profile's succeeded runs.",
            labels=["profile"],
        )
        error_ratio = GaugeMetricFamily(
            "agentdesk_profile_error_ratio",
            "Failed runs of each agent profile over its succeeded and failed ones.",
            labels=["profile"],
        )
        for row in figures:
            for outcome in ("succeeded", "failed", "cancelled"):
                runs.add_metric([row.name, outcome], getattr(row, outcome))
            active.add_metric([row.name], row.active)
            tokens.add_metric([row.name, "prompt"], row.prompt_tokens)
            tokens.add_metric([row.name, "completion"], row.completion_tokens)
            completion.add_metric([row.name], row.timed, row.completion_time.total_seconds())
            if row.average_completion_seconds is not None:
                average.add_metric([row.name], row.average_completion_seconds)
            if row.error_rate is not None:
                error_ratio.add_metric([row.name], row.error_rate)
        yield from (runs, active, tokens, completion, average, error_ratio)


class RunQueueCollector(Collector):
    """Runs holding a turn and runs waiting for one, over everyone (runs.admission)."""

    def collect(self) -> Iterator[Any]:
        counts = queue_counts()
        running = GaugeMetricFamily(
            "agentdesk_runs_running",
            "Runs queued for a worker, planning, running or verifying (not parked).",
            value=counts["running"],
        )
        waiting = GaugeMetricFamily(
            "agentdesk_runs_waiting_turn",
            "Runs waiting their turn behind their person's running ones (RUNS_RUNNING_PER_USER).",
            value=counts["waiting"],
        )
        yield from (running, waiting)


# Collectors without `describe` and no auto-describe: registering them runs no query.
REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(ProfileMetricsCollector())
REGISTRY.register(TaskMetricsCollector())
REGISTRY.register(RunQueueCollector())


def _bearer_ok(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The exposition, or 401 (no or a wrong token, not signed in) / 403 (signed in, not
    staff)."""
    if not _bearer_ok(request):
        user = request.user
        if not user.is_authenticated or "Authorization" in request.headers:
            response = HttpResponse("Unauthorized: send the metrics token.\n", status=401)
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            response["Content-Type"] = "text/plain; charset=utf-8"
            return response
        if not user.is_staff:
            return HttpResponse(
                "Forbidden: only staff may read the site's metrics.\n",
                status=403,
                content_type="text/plain; charset=utf-8",
            )
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    response = HttpResponse(encoder(REGISTRY), content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response

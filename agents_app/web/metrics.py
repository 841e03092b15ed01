"""The metrics page: each agent profile's runs by outcome, average completion time, tokens and
error rate (`orchestration.metrics`), as charts and as a table of the same figures.

A GET form holds the view (`?period=7d&scope=everyone`), so a URL is a link to it and it works
without JavaScript. The period counts runs created within it; staff may choose everyone's runs,
anyone else always reads their own (a `scope` they may not have is ignored, and said so). The
charts are drawn by static/agentdesk/metrics.js with Chart.js (vendored in
static/agentdesk/vendor/) from the figures the page carries as JSON (`json_script`: data, not
a script, so the Content-Security-Policy lets it be); the table is the page's own account of
them, for screen readers, phones and browsers without JavaScript.
"""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from agents_app.orchestration.metrics import ProfileMetrics, profile_metrics
from agents_app.templatetags.agentdesk import duration
from agents_app.web.views import HtmxHttpRequest


@dataclass(frozen=True)
class Period:
    value: str
    label: str
    length: timedelta | None


PERIODS = [
    Period("all", "All time", None),
    Period("30d", "Last 30 days", timedelta(days=30)),
    Period("7d", "Last 7 days", timedelta(days=7)),
    Period("24h", "Last 24 hours", timedelta(hours=24)),
]
SCOPES = [("mine", "My runs"), ("everyone", "Everyone's runs")]


def seconds_text(seconds: float | None) -> str:
    """An average completion time: tenths under ten seconds (chat answers take a few), else
    as the dashboard writes durations."""
    if seconds is not None and seconds < 10:
        return f"{seconds:.1f} s"
    return duration(seconds)


def percent_text(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio * 100:.1f} %"


def chart_data(figures: list[ProfileMetrics]) -> dict[str, Any]:
    """The figures as metrics.js draws them: one list per series, in the table's order."""
    return {
        "labels": [row.name for row in figures],
        "succeeded": [row.succeeded for row in figures],
        "failed": [row.failed for row in figures],
        "cancelled": [row.cancelled for row in figures],
        "average_seconds": [
            None
            if row.average_completion_seconds is None
            else round(row.average_completion_seconds, 3)
            for row in figures
        ],
        "prompt_tokens": [row.prompt_tokens for row in figures],
        "completion_tokens": [row.completion_tokens for row in figures],
        "error_percent": [
            None if row.error_rate is None else round(row.error_rate * 100, 1) for row in figures
        ],
    }


@login_required
@require_GET
def metrics_page(request: HtmxHttpRequest) -> HttpResponse:
    ignored: list[str] = []
    periods = {period.value: period for period in PERIODS}
    period = periods.get(request.GET.get("period", "all"))
    if period is None:
        ignored.append("Unknown period ignored: showing all time.")
        period = PERIODS[0]
    scope = request.GET.get("scope", "mine")
    if scope not in dict(SCOPES):
        ignored.append("Unknown scope ignored: showing your own runs.")
        scope = "mine"
    elif scope == "everyone" and not request.user.is_staff:
        ignored.append("Only staff may see everyone's runs: showing your own.")
        scope = "mine"
    since = timezone.now() - period.length if period.length else None
    figures = profile_metrics(user=request.user, everyone=scope == "everyone", since=since)
    rows = [
        {
            "figures": row,
            "average": seconds_text(row.average_completion_seconds),
            "error_rate": percent_text(row.error_rate),
        }
        for row in figures
    ]
    context = {
        "nav": "metrics",
        "rows": rows,
        "chart": chart_data(figures),
        "has_runs": any(row.runs for row in figures),
        "period": period.value,
        "periods": PERIODS,
        "scope": scope,
        "scopes": SCOPES if request.user.is_staff else [],
        "ignored": ignored,
    }
    return render(request, "agents/metrics.html", context)

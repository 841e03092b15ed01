"""The metrics page in a real browser, served as in production (DEBUG off, collectstatic):
Chart.js from static/ draws its four charts under the Content-Security-Policy (the `page`
fixture fails on any refusal or script error), beside the table of the same figures."""

import pytest

from agents_app.models import RunStatus
from tests.support.browser import PASSWORD, expect, log_in
from tests.support.metrics import shaped_run

pytestmark = pytest.mark.integration

CHARTS = ("chart-outcomes", "chart-time", "chart-tokens", "chart-errors")


def test_the_charts_are_drawn_beside_the_table(page, stack, owner, seeded_profiles, screenshot):
    research = seeded_profiles["research_agent"]
    shaped_run(owner, research, seconds=40, prompt_tokens=1200, completion_tokens=300)
    shaped_run(owner, research, seconds=80, prompt_tokens=900, completion_tokens=200)
    shaped_run(owner, research, RunStatus.FAILED, prompt_tokens=400)
    shaped_run(owner, seeded_profiles["builder_agent"], seconds=150, prompt_tokens=2500)
    shaped_run(owner, None, seconds=4, prompt_tokens=300, completion_tokens=80)
    shaped_run(owner, None, RunStatus.CANCELLED)

    log_in(page, "owner", PASSWORD)
    page.goto("/agent-metrics/")

    expect(page.locator("#metrics-charts")).to_be_visible()
    for canvas in CHARTS:
        # Chart.js keeps each chart it drew on its canvas; the canvas has room to show it.
        page.wait_for_function(
            "id => window.Chart && window.Chart.getChart(document.getElementById(id))", arg=canvas
        )
        box = page.locator(f"#{canvas}").bounding_box()
        assert box["width"] > 100 and box["height"] > 100
    outcomes = page.evaluate(
        "() => Chart.getChart(document.getElementById('chart-outcomes')).data.datasets"
        ".map(d => [d.label, d.data])"
    )
    labels = page.evaluate(
        "() => Chart.getChart(document.getElementById('chart-outcomes')).data.labels"
    )
    at = labels.index("research_agent")
    assert [(label, data[at]) for label, data in outcomes] == [
        ("Succeeded", 2),
        ("Failed", 1),
        ("Cancelled", 0),
    ]
    expect(page.locator("#metrics-table")).to_contain_text("research_agent")
    screenshot(page, "metrics.png")

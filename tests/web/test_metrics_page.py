"""The metrics page: the signed-in user's figures per profile as a table and as charts drawn by
a script served from static (Chart.js, vendored), a period, everyone's runs for staff."""

import json
from datetime import timedelta

import pytest
from django.contrib.staticfiles import finders
from django.utils import timezone

from agents_app.models import RunStatus
from tests.support.markup import by_id, elements
from tests.support.metrics import shaped_run


def table(html: str) -> dict[str, list[str]]:
    """The metrics table's rows: the profile's name → its cells' texts, in column order."""
    rows: dict[str, list[str]] = {}
    start = html.index('id="metrics-table"')
    body = html[html.index("<tbody>", start) : html.index("</tbody>", start)]
    for chunk in body.split("<tr")[1:]:
        name_cell = chunk[chunk.index("<th") : chunk.index("</th>")]
        name = name_cell.split(">", 1)[1].split("<", 1)[0].strip()
        cells = [part.split(">", 1)[1].split("</td>", 1)[0] for part in chunk.split("<td")[1:]]
        rows[name] = cells
    return rows


def chart_data(html: str) -> dict:
    start = html.index('<script id="metrics-data" type="application/json">')
    text = html[start:].split(">", 1)[1].split("</script>", 1)[0]
    return json.loads(text)


@pytest.fixture
def research(seeded_profiles):
    return seeded_profiles["research_agent"]


@pytest.mark.dialect
def test_the_table_shows_each_profiles_figures(owner, owner_session, research):
    shaped_run(owner, research, seconds=4, prompt_tokens=100, completion_tokens=20)
    shaped_run(owner, research, seconds=2)
    shaped_run(owner, research, RunStatus.FAILED)
    shaped_run(owner, research, RunStatus.CANCELLED)
    shaped_run(owner, None, seconds=90, prompt_tokens=5)

    response = owner_session.get("/agent-metrics/")

    assert response.status_code == 200
    rows = table(response.content.decode())
    # Runs, succeeded, failed, cancelled, active, average time, tokens, error rate.
    assert rows["research_agent"] == ["4", "2", "1", "1", "0", "3.0 s", "120", "33.3 %"]
    assert rows["no profile"] == ["1", "1", "0", "0", "0", "1 min 30 s", "5", "0.0 %"]
    assert rows["builder_agent"] == ["0", "0", "0", "0", "0", "—", "0", "—"]


@pytest.mark.dialect
def test_another_users_runs_are_not_counted(owner, outsider, owner_session, research):
    shaped_run(owner, research, seconds=1)
    shaped_run(outsider, research, RunStatus.FAILED, prompt_tokens=999)
    shaped_run(outsider, None)

    html = owner_session.get("/agent-metrics/").content.decode()

    assert table(html)["research_agent"][:4] == ["1", "1", "0", "0"]
    assert "no profile" not in table(html)
    assert chart_data(html)["failed"] == [0, 0, 0, 0]


def test_the_charts_are_drawn_by_scripts_served_from_static(owner, owner_session, research):
    shaped_run(owner, research, seconds=1)

    html = owner_session.get("/agent-metrics/").content.decode()

    scripts = [
        attrs["src"] for tag, attrs in elements(html) if tag == "script" and attrs.get("src")
    ]
    assert "/static/agentdesk/vendor/chart.umd.min.js" in scripts
    assert "/static/agentdesk/metrics.js" in scripts
    assert scripts.index("/static/agentdesk/vendor/chart.umd.min.js") < scripts.index(
        "/static/agentdesk/metrics.js"
    )
    for canvas in ("chart-outcomes", "chart-time", "chart-tokens", "chart-errors"):
        assert by_id(html, canvas)["role"] == "img"
    # No script on the page but files of ours: the figures are JSON data, not code.
    inline = [a for tag, a in elements(html) if tag == "script" and not a.get("src")]
    assert inline == [{"id": "metrics-data", "type": "application/json"}]


def test_the_vendored_chart_library_is_there_with_its_licence():
    path = finders.find("agentdesk/vendor/chart.umd.min.js")

    assert path is not None
    with open(path, encoding="utf-8") as library:
        head = library.read(200)
    assert "Chart.js v4" in head and "Released under the MIT License" in head
    assert finders.find("agentdesk/vendor/chart.js.LICENSE.md") is not None


def test_the_chart_data_follows_the_tables_order(owner, owner_session, research, seeded_profiles):
    shaped_run(owner, research, seconds=3, prompt_tokens=10, completion_tokens=2)
    shaped_run(owner, research, RunStatus.FAILED)
    shaped_run(owner, None)

    data = chart_data(owner_session.get("/agent-metrics/").content.decode())

    assert data["labels"] == [*sorted(seeded_profiles), "no profile"]
    at = data["labels"].index("research_agent")
    assert (data["succeeded"][at], data["failed"][at]) == (1, 1)
    assert (data["prompt_tokens"][at], data["completion_tokens"][at]) == (10, 2)
    assert data["average_seconds"][at] == 3.0
    assert data["error_percent"][at] == 50.0
    assert data["average_seconds"][data["labels"].index("builder_agent")] is None


def test_without_runs_there_are_no_charts_but_the_table(owner_session, seeded_profiles):
    html = owner_session.get("/agent-metrics/").content.decode()

    assert 'id="metrics-empty"' in html
    assert 'id="metrics-charts"' not in html and 'id="metrics-data"' not in html
    assert set(table(html)) == set(seeded_profiles)


@pytest.mark.dialect
def test_the_period_keeps_the_runs_created_within_it(owner, owner_session, research):
    shaped_run(owner, research, created_at=timezone.now() - timedelta(days=10))
    shaped_run(owner, research, RunStatus.FAILED, created_at=timezone.now() - timedelta(hours=1))

    recent = table(owner_session.get("/agent-metrics/?period=7d").content.decode())
    always = table(owner_session.get("/agent-metrics/?period=all").content.decode())

    assert recent["research_agent"][:3] == ["1", "0", "1"]
    assert always["research_agent"][:3] == ["2", "1", "1"]


def test_an_unknown_period_shows_all_time_and_says_so(owner, owner_session, research):
    shaped_run(owner, research, created_at=timezone.now() - timedelta(days=400))

    html = owner_session.get("/agent-metrics/?period=bogus").content.decode()

    assert "Unknown period ignored" in html
    assert table(html)["research_agent"][0] == "1"


@pytest.mark.dialect
def test_staff_may_choose_everyones_runs(owner, staff, staff_session, research):
    shaped_run(owner, research, seconds=1)

    own = staff_session.get("/agent-metrics/").content.decode()
    everyone = staff_session.get("/agent-metrics/?scope=everyone").content.decode()

    assert table(own)["research_agent"][0] == "0"
    assert table(everyone)["research_agent"][0] == "1"
    assert 'id="metrics-scope"' in everyone


def test_a_user_who_is_not_staff_asking_for_everyone_sees_their_own(
    owner, outsider, outsider_session, research
):
    shaped_run(owner, research, seconds=1)

    html = outsider_session.get("/agent-metrics/?scope=everyone").content.decode()

    assert table(html)["research_agent"][0] == "0"
    assert "Only staff may see everyone" in html
    assert 'id="metrics-scope"' not in html


def test_the_page_is_for_signed_in_users(client):
    response = client.get("/agent-metrics/")

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_navigation_links_the_page(owner_session):
    html = owner_session.get("/agent-metrics/").content.decode()

    links = [a for tag, a in elements(html) if tag == "a" and a.get("href") == "/agent-metrics/"]
    assert links == [{"href": "/agent-metrics/", "aria-current": "page"}]
    assert "/agent-metrics/" in owner_session.get("/").content.decode()

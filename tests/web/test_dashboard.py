"""The dashboard: the user's own runs with live status badges."""

from agents_app.models import RunStatus
from tests.support.markup import by_id, ids
from tests.support.runs import add_plan, complete_step, make_run


def test_the_dashboard_lists_only_the_users_own_runs(owner, outsider, owner_session):
    mine = make_run(owner, "Mine to do")
    theirs = make_run(outsider, "Theirs to do")

    html = owner_session.get("/").content.decode()

    assert f"run-row-{mine.pk}" in ids(html)
    assert f"run-row-{theirs.pk}" not in ids(html)
    assert "Mine to do" in html
    assert "Theirs to do" not in html


def test_each_row_has_a_status_badge_and_links_the_run(owner, owner_session):
    run = make_run(owner)

    html = owner_session.get("/").content.decode()

    assert 'id="runs"' in html
    assert '<span class="badge" data-status="queued">queued</span>' in html
    assert f'href="/runs/{run.pk}/"' in html


def test_a_row_shows_the_progress_of_the_latest_plan(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["One", "Two", "Three", "Four"])
    complete_step(run, plan, 0)

    html = owner_session.get("/").content.decode()

    assert "25%" in html
    assert 'data-status="running"' in html


def test_the_dashboard_connects_to_the_users_live_feed(owner_session):
    html = owner_session.get("/").content.decode()

    live = by_id(html, "dashboard-live")
    assert live["hx-ext"] == "ws"
    assert live["ws-connect"] == "/ws/dashboard/"


def test_an_empty_dashboard_invites_a_first_task(owner_session):
    html = owner_session.get("/").content.decode()

    assert "No runs yet" in html
    assert 'href="/tasks/new/"' in html


def test_an_htmx_request_gets_the_table_alone(owner, owner_session):
    make_run(owner)

    response = owner_session.get("/", headers={"HX-Request": "true"})

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="runs-panel">')
    assert "<html" not in html


def test_the_dashboard_reads_a_page_of_runs_in_a_few_queries(
    owner, owner_session, django_assert_max_num_queries
):
    for n in range(5):
        run = make_run(owner, f"Task {n}")
        add_plan(run, ["A", "B"])
    with django_assert_max_num_queries(8):
        response = owner_session.get("/")
    assert response.content.decode().count('id="run-row-') == 5
    assert RunStatus.RUNNING in response.content.decode()

"""The dashboard: the user's own runs with live status badges, searched, filtered, sorted and
paged from the URL."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents_app.models import Run, RunStatus
from tests.support.markup import by_id, elements, ids
from tests.support.runs import add_plan, complete_step, make_run

START = timezone.now() - timedelta(days=1)


def shaped(owner, text, *, minute=0, status=None, seconds=None, tokens=0):
    """A run of `owner` created `minute` minutes after START, in `status`, that ran `seconds`
    (None: not started) and used `tokens`, written as the columns the list reads."""
    run = make_run(owner, text)
    fields = {"created_at": START + timedelta(minutes=minute), "prompt_tokens": tokens}
    if status:
        fields["status"] = status
    if seconds is not None:
        fields["started_at"] = START + timedelta(minutes=minute)
        fields["finished_at"] = fields["started_at"] + timedelta(seconds=seconds)
    Run.objects.filter(pk=run.pk).update(**fields)
    return run


def rows(response) -> list[int]:
    """The run ids of the table's rows, in page order."""
    html = response.content.decode()
    return [int(i.removeprefix("run-row-")) for i in ids(html) if i.startswith("run-row-")]


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
    assert html.lstrip().startswith('<section id="runs-panel"')
    assert "<html" not in html


# --- search, filter, sort ---------------------------------------------------------------------


@pytest.mark.dialect
def test_a_search_keeps_the_runs_whose_task_text_contains_it_in_any_case(owner, owner_session):
    invoice = make_run(owner, "Download the INVOICES from the portal")
    make_run(owner, "Summarise the report")

    assert rows(owner_session.get("/", {"q": "invoices"})) == [invoice.pk]


def test_a_search_that_matches_nothing_says_so_and_offers_every_run(owner, owner_session):
    make_run(owner, "Summarise the report")

    html = owner_session.get("/", {"q": "zebra"}).content.decode()

    assert "No runs match" in html
    assert "0 runs matching “zebra”" in html


@pytest.mark.dialect
@pytest.mark.parametrize(
    "status, expected",
    [
        ("", ["queued", "running", "waiting", "paused", "succeeded", "failed", "cancelled"]),
        ("active", ["queued", "running"]),
        ("waiting", ["waiting", "paused"]),
        ("succeeded", ["succeeded"]),
        ("failed", ["failed"]),
        ("cancelled", ["cancelled"]),
        ("running", ["running"]),
    ],
)
def test_the_status_filter_keeps_the_runs_of_that_status_or_group(
    owner, owner_session, status, expected
):
    texts = {
        "queued": RunStatus.QUEUED,
        "running": RunStatus.RUNNING,
        "waiting": RunStatus.WAITING_APPROVAL,
        "paused": RunStatus.PAUSED,
        "succeeded": RunStatus.SUCCEEDED,
        "failed": RunStatus.FAILED,
        "cancelled": RunStatus.CANCELLED,
    }
    made = {
        text: shaped(owner, text, minute=-n, status=s).pk
        for n, (text, s) in enumerate(texts.items())
    }

    assert rows(owner_session.get("/", {"status": status})) == [made[t] for t in expected]


@pytest.mark.dialect
def test_search_and_status_combine(owner, owner_session):
    shaped(owner, "Fetch the invoices", status=RunStatus.SUCCEEDED)
    wanted = shaped(owner, "Fetch the invoices again", status=RunStatus.FAILED)
    shaped(owner, "Write the report", status=RunStatus.FAILED)

    assert rows(owner_session.get("/", {"q": "invoices", "status": "failed"})) == [wanted.pk]


@pytest.mark.dialect
@pytest.mark.parametrize(
    "sort, expected",
    [
        ("newest", ["late", "middle", "early", "idle"]),
        ("oldest", ["idle", "early", "middle", "late"]),
        ("longest", ["middle", "early", "late", "idle"]),
        ("shortest", ["late", "early", "middle", "idle"]),
        ("most_tokens", ["early", "late", "middle", "idle"]),
        ("fewest_tokens", ["idle", "middle", "late", "early"]),
    ],
)
def test_each_sort_orders_the_runs_in_the_database(owner, owner_session, sort, expected):
    made = {
        "idle": shaped(owner, "idle", minute=0),  # never started: no duration, sorts last
        "early": shaped(owner, "early", minute=1, seconds=60, tokens=900),
        "middle": shaped(owner, "middle", minute=2, seconds=3600, tokens=20),
        "late": shaped(owner, "late", minute=3, seconds=5, tokens=300),
    }

    assert rows(owner_session.get("/", {"sort": sort})) == [made[n].pk for n in expected]


def test_a_row_shows_the_runs_duration_and_tokens(owner, owner_session):
    shaped(owner, "Long one", seconds=125, tokens=12345)

    html = owner_session.get("/").content.decode()

    assert "2 min 05 s" in html
    assert "12,345" in html


def test_a_column_header_sorts_by_it_and_a_second_click_reverses(owner, owner_session):
    html = owner_session.get("/").content.decode()
    links = {a.get("href") for tag, a in elements(html) if tag == "a"}
    assert {"/?sort=longest", "/?sort=most_tokens", "/?sort=oldest"} <= links

    html = owner_session.get("/", {"sort": "longest"}).content.decode()
    headers = [a for tag, a in elements(html) if tag == "th" and a.get("aria-sort")]
    assert headers == [{"aria-sort": "descending"}]
    assert "/?sort=shortest" in {a.get("href") for tag, a in elements(html) if tag == "a"}


def test_the_form_shows_the_query_the_list_answers(owner, owner_session):
    html = owner_session.get(
        "/", {"q": "report", "status": "failed", "sort": "oldest"}
    ).content.decode()

    assert by_id(html, "runs-q")["value"] == "report"
    assert '<option value="failed" selected>' in html
    assert '<option value="oldest" selected>' in html
    form = by_id(html, "runs-filter")
    assert form["method"] == "get"
    assert form["hx-push-url"] == "true"


@pytest.mark.parametrize(
    "query, note",
    [
        ({"status": "bogus"}, "Unknown status “bogus”"),
        ({"sort": "sideways"}, "Unknown order “sideways”"),
        ({"q": "a\x00b"}, "The search was ignored"),
    ],
)
def test_a_junk_control_falls_back_to_the_default_and_says_so(owner, owner_session, query, note):
    run = make_run(owner, "Anything")

    response = owner_session.get("/", query)

    assert response.status_code == 200
    assert rows(response) == [run.pk]
    assert note in response.content.decode()


# --- pages ------------------------------------------------------------------------------------


@pytest.fixture
def thirty_runs(owner):
    """30 runs of the owner, newest last: page 1 holds 25, page 2 the oldest 5."""
    return [shaped(owner, f"Task {n}", minute=n).pk for n in range(30)]


@pytest.mark.dialect
def test_a_page_holds_25_runs_and_says_how_many_there_are(owner_session, thirty_runs):
    response = owner_session.get("/")

    assert rows(response) == thirty_runs[::-1][:25]
    html = response.content.decode()
    assert "1–25 of 30 runs" in html
    assert 'href="/?page=2"' in html


@pytest.mark.dialect
def test_the_second_page_holds_the_rest(owner_session, thirty_runs):
    response = owner_session.get("/", {"page": "2"})

    assert rows(response) == thirty_runs[::-1][25:]
    assert "26–30 of 30 runs" in response.content.decode()


@pytest.mark.dialect
@pytest.mark.parametrize(
    "page, shown, note",
    [
        ("0", 1, "There is no page 0: showing page 1."),
        ("-3", 1, "There is no page -3: showing page 1."),
        ("3", 2, "There is no page 3: showing the last page, 2."),
        ("99999999999999999999999", 2, "showing the last page, 2."),
        ("two", 1, "“two” is no page number: showing page 1."),
    ],
)
def test_a_page_out_of_range_or_junk_shows_the_nearest_page(
    owner_session, thirty_runs, page, shown, note
):
    response = owner_session.get("/", {"page": page})

    assert response.status_code == 200
    expected = thirty_runs[::-1][:25] if shown == 1 else thirty_runs[::-1][25:]
    assert rows(response) == expected
    assert note in response.content.decode()


def test_page_links_keep_the_search_filter_and_sort(owner, owner_session):
    for n in range(26):
        shaped(owner, f"Report {n}", minute=n, status=RunStatus.FAILED)

    html = owner_session.get(
        "/", {"q": "report", "status": "failed", "sort": "oldest"}
    ).content.decode()

    assert 'href="/?q=report&amp;status=failed&amp;sort=oldest&amp;page=2"' in html


@pytest.mark.dialect
def test_a_filter_counts_only_the_runs_it_keeps(owner, owner_session):
    for n in range(3):
        shaped(owner, f"Done {n}", status=RunStatus.SUCCEEDED)
    shaped(owner, "Broken", status=RunStatus.FAILED)

    assert "1–3 of 3 runs" in owner_session.get("/", {"status": "succeeded"}).content.decode()


# --- whose runs -------------------------------------------------------------------------------


def test_a_search_finds_only_the_users_own_runs(owner, outsider, owner_session):
    mine = make_run(owner, "Fetch the invoices")
    make_run(outsider, "Fetch the invoices too")

    response = owner_session.get("/", {"q": "invoices", "sort": "most_tokens"})

    assert rows(response) == [mine.pk]
    assert "1–1 of 1 run" in response.content.decode()


def test_staff_see_only_their_own_runs_on_the_dashboard(owner, staff, client):
    make_run(owner, "The owner's")
    theirs = make_run(staff, "Staff's own")
    client.force_login(staff)

    assert rows(client.get("/", {"status": "active"})) == [theirs.pk]


# --- live rows ----------------------------------------------------------------------------------


def test_the_panel_tells_live_updates_the_newest_run_it_knew(owner, outsider, owner_session):
    make_run(owner)
    newest = make_run(owner)
    make_run(outsider)  # a larger id, but not the owner's

    panel = by_id(owner_session.get("/", {"page": "1"}).content.decode(), "runs-panel")

    assert panel["data-latest-run"] == str(newest.pk)
    assert panel["data-live-prepend"] == "true"


@pytest.mark.parametrize(
    "query", [{"q": "x"}, {"status": "failed"}, {"sort": "oldest"}, {"page": "2"}]
)
def test_a_filtered_sorted_or_later_page_offers_a_refresh_instead_of_new_rows(
    owner_session, thirty_runs, query
):
    html = owner_session.get("/", query).content.decode()

    assert by_id(html, "runs-panel")["data-live-prepend"] == "false"
    notice = by_id(html, "runs-new")
    assert "hidden" in notice


def test_a_history_restore_gets_the_whole_page(owner, owner_session):
    make_run(owner)

    html = owner_session.get(
        "/", {"q": "thing"}, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    ).content.decode()

    assert "<html" in html
    assert by_id(html, "runs-q")["value"] == "thing"


# --- cost ----------------------------------------------------------------------------------------


@pytest.mark.dialect
def test_a_page_of_25_runs_costs_as_many_queries_as_a_page_of_one(
    owner, owner_session, django_assert_max_num_queries
):
    for n in range(30):
        run = shaped(owner, f"Task {n}", minute=n, seconds=n, tokens=n)
        add_plan(run, ["A", "B"])
    # session, user, count, page of runs with tasks, their steps, the newest id, the runs
    # running and waiting their turn (one query), and the header's kill switch, YOLO +
    # approvals count, MCP servers
    with django_assert_max_num_queries(10):
        response = owner_session.get("/", {"q": "task", "status": "active", "sort": "longest"})
    assert len(rows(response)) == 25
    assert RunStatus.RUNNING in response.content.decode()


# --- htmx -----------------------------------------------------------------------------------------


def test_the_form_asking_gets_the_table_without_the_form(owner, owner_session):
    make_run(owner, "Fetch the invoices")

    response = owner_session.get(
        "/",
        {"q": "invoices", "status": "", "sort": "newest"},
        headers={"HX-Request": "true", "HX-Trigger": "runs-filter"},
    )

    assert "runs-filter" not in ids(response.content.decode())
    assert response["HX-Push-Url"] == "/?q=invoices"


def test_a_link_asking_gets_the_form_out_of_band_to_match(owner, owner_session):
    response = owner_session.get(
        "/", {"sort": "longest", "page": "1"}, headers={"HX-Request": "true"}
    )

    html = response.content.decode()
    assert by_id(html, "runs-filter")["hx-swap-oob"] == "true"
    assert '<option value="longest" selected>' in html
    assert response["HX-Push-Url"] == "/?sort=longest"

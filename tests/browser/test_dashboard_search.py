"""The dashboard's controls in a real browser: typing a search narrows the table without a full
page load, the URL follows, the back button brings the wider list back, and a run started
while a filtered view is open shows a refresh notice instead of a row that may not belong."""

from datetime import timedelta

import httpx
import pytest
from django.db import transaction
from django.utils import timezone

from agents_app.models import Run, RunStatus
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, verdict

pytestmark = pytest.mark.integration

TASKS = [
    ("Download the invoices from the vendor portal", RunStatus.FAILED),
    ("Summarise the quarterly report", RunStatus.SUCCEEDED),
    ("Translate the handbook into German", RunStatus.CANCELLED),
    ("Check the invoices against the ledger", RunStatus.SUCCEEDED),
]


@pytest.fixture
def runs(owner):
    """The owner's runs, the first one oldest, written as the list reads them. In a transaction
    because make_run locks the task row, which PostgreSQL refuses in autocommit."""
    start = timezone.now() - timedelta(hours=2)
    made = []
    with transaction.atomic():
        for n, (text, status) in enumerate(TASKS):
            run = make_run(owner, text)
            Run.objects.filter(pk=run.pk).update(
                status=status,
                created_at=start + timedelta(minutes=n),
                started_at=start + timedelta(minutes=n),
                finished_at=start + timedelta(minutes=n, seconds=30 * (n + 1)),
                prompt_tokens=1000 * (n + 1),
            )
            made.append(run.pk)
    return made


def row_ids(page) -> list[str]:
    return page.locator("#runs tbody tr").evaluate_all("rows => rows.map(r => r.id)")


def test_typing_a_search_narrows_the_table_without_a_page_load(
    page, stack, owner, runs, screenshot
):
    log_in(page, "owner", PASSWORD)
    expect(page.locator("#runs tbody tr")).to_have_count(4)
    page.evaluate("window.loadedOnce = 'yes'")

    page.locator("#runs-q").press_sequentially("invoices")

    expect(page.locator("#runs tbody tr")).to_have_count(2)
    assert row_ids(page) == [f"run-row-{runs[3]}", f"run-row-{runs[0]}"]
    expect(page.locator("#runs-count")).to_contain_text("of 2 runs matching “invoices”")
    page.wait_for_url("**/?q=invoices")
    assert page.evaluate("window.loadedOnce") == "yes"  # no full page load

    page.select_option("#runs-status", "failed")

    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator(f"#run-row-{runs[0]}")).to_contain_text("Download the invoices")
    page.wait_for_url("**/?q=invoices&status=failed")
    assert page.evaluate("window.loadedOnce") == "yes"
    screenshot(page, "dashboard-search.png")

    # Back: the list as it was, with the form saying so.
    page.go_back()
    page.wait_for_url("**/?q=invoices")
    expect(page.locator("#runs tbody tr")).to_have_count(2)
    expect(page.locator("#runs-status")).to_have_value("")
    expect(page.locator("#runs-q")).to_have_value("invoices")


def test_a_column_header_sorts_the_table_in_place(page, stack, owner, runs):
    log_in(page, "owner", PASSWORD)
    expect(page.locator("#runs tbody tr")).to_have_count(4)
    page.evaluate("window.loadedOnce = 'yes'")

    page.get_by_role("link", name="Duration").click()

    page.wait_for_url("**/?sort=longest")
    expect(page.locator("#runs tbody tr").first).to_have_id(f"run-row-{runs[3]}")
    expect(page.locator("#runs-sort")).to_have_value("longest")
    assert row_ids(page) == [f"run-row-{pk}" for pk in reversed(runs)]
    assert page.evaluate("window.loadedOnce") == "yes"


def test_a_new_run_on_a_filtered_view_offers_a_refresh(page, stack, owner, runs, api_key_for):
    stack.llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Write the haiku"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "written"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "a haiku")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/?status=failed")
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#dashboard-live .live-indicator")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )
    expect(page.locator("#runs-new")).to_be_hidden()

    response = httpx.post(
        f"{stack.url}/api/v1/agent/task",
        headers={"Authorization": api_key_for(owner).decode()},
        json={"task": "Write a haiku about queues"},
    )
    assert response.status_code == 202, response.text

    expect(page.locator("#runs-new")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#runs tbody tr")).to_have_count(1)  # no row that may not belong
    page.locator("#runs-new a").click()
    expect(page.locator("#runs-new")).to_be_hidden()
    page.wait_for_url("**/?status=failed")

"""The run page's "Waiting for the model" line: rendered with what silence.js needs to count on
its own (the setting, how long the run has been quiet), never for a run that has ended."""

from datetime import timedelta

import pytest
from django.db.models import F

from agents_app.models import RunEvent, RunStatus
from tests.support.markup import by_id, ids
from tests.support.runs import add_plan, make_run, succeed, to_status


def page(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_working_run_s_page_carries_the_setting_and_how_long_it_has_been_quiet(
    owner, owner_session, settings
):
    settings.LLM_SILENCE_NOTICE_SECONDS = 7
    run = to_status(make_run(owner, "Plan it"), RunStatus.PLANNING)
    # The run's latest event (the start of planning) was 42 s ago.
    RunEvent.objects.filter(run=run).update(created_at=F("created_at") - timedelta(seconds=42))

    html = page(owner_session, run)

    notice = by_id(html, "stream-silence")
    assert notice["data-after"] == "7" and "hidden" in notice
    assert 42 <= float(notice["data-quiet-for"]) < 52
    assert "agentdesk/silence.js" in html


@pytest.mark.parametrize("seconds", [0, 10])
def test_an_ended_run_or_a_setting_of_0_has_no_notice(owner, owner_session, settings, seconds):
    settings.LLM_SILENCE_NOTICE_SECONDS = seconds
    run = make_run(owner, "Plan it")
    add_plan(run, ["Think"])
    if seconds:
        run = succeed(run, "done")

    assert "stream-silence" not in ids(page(owner_session, run))

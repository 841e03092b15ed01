"""POST /api/v1/runs/{id}/pause and /resume, and the page's Pause and Resume buttons: a
queued run pauses at once and stays paused until resumed; a finished run cannot be paused,
one that was not paused cannot be resumed, another person's run is not found."""

from agents_app.models import AuditEvent
from tests.support.api import assert_error, post_json
from tests.support.runs import end, make_run


def test_a_queued_run_pauses_at_once_and_resumes_queued(owner, owner_api):
    run = make_run(owner)

    paused = post_json(owner_api, f"/api/v1/runs/{run.pk}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    resumed = post_json(owner_api, f"/api/v1/runs/{run.pk}/resume")

    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    run.refresh_from_db()
    assert not run.pause_requested and run.resume_status == ""
    actions = AuditEvent.objects.filter(run=run, action__in=["run.pause", "run.resume"])
    assert list(actions.order_by("id").values_list("action", "interface")) == [
        ("run.pause", "api"),
        ("run.resume", "api"),
    ]


def test_a_finished_run_cannot_be_paused_nor_a_running_one_resumed(owner, owner_api):
    done = end(make_run(owner), "succeeded", response="ok")
    assert_error(post_json(owner_api, f"/api/v1/runs/{done.pk}/pause"), 409, "CONFLICT")
    queued = make_run(owner)
    assert_error(post_json(owner_api, f"/api/v1/runs/{queued.pk}/resume"), 409, "CONFLICT")


def test_another_persons_run_is_not_found(owner, outsider_api):
    run = make_run(owner)
    assert_error(post_json(outsider_api, f"/api/v1/runs/{run.pk}/pause"), 404, "NOT_FOUND")
    assert_error(post_json(outsider_api, f"/api/v1/runs/{run.pk}/resume"), 404, "NOT_FOUND")
    run.refresh_from_db()
    assert run.status == "queued" and not run.pause_requested


def test_the_page_pauses_and_resumes_with_its_buttons(owner, owner_session):
    run = make_run(owner)
    page = owner_session.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="pause-run"' in page and 'id="resume-run"' not in page

    paused = owner_session.post(f"/runs/{run.pk}/pause/", HTTP_HX_REQUEST="true")
    assert paused.status_code == 200
    assert 'id="resume-run"' in paused.content.decode()
    run.refresh_from_db()
    assert run.status == "paused"

    resumed = owner_session.post(f"/runs/{run.pk}/resume/", HTTP_HX_REQUEST="true")
    assert 'id="pause-run"' in resumed.content.decode()
    run.refresh_from_db()
    assert run.status == "queued"

"""The new-task form: task_submit behind it, errors shown on the form with nothing lost."""

from django.test import Client

from agents_app.models import Run, RunEvent, Task
from tests.support.markup import by_id


def test_the_form_has_the_task_and_context_fields(owner_session):
    html = owner_session.get("/tasks/new/").content.decode()

    form = by_id(html, "task-form")
    assert form["method"] == "post"
    assert '<textarea name="task"' in html
    assert '<textarea name="context"' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_submitting_a_task_creates_the_run_and_opens_its_page(owner, owner_session, llm_configured):
    response = owner_session.post(
        "/tasks/new/", {"task": "Write a haiku", "context": '{"mood": "calm"}'}
    )

    run = Run.objects.get(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{run.pk}/"
    assert run.task.text == "Write a haiku"
    assert run.task.context == {"mood": "calm"}
    assert run.status == "queued"
    assert list(RunEvent.objects.filter(run=run).values_list("type", flat=True)) == ["run_queued"]


def test_budgets_given_on_the_form_reach_the_run(owner, owner_session, llm_configured):
    owner_session.post("/tasks/new/", {"task": "Go", "max_tokens": "500", "max_tool_calls": "3"})

    run = Run.objects.get(owner=owner)
    assert (run.max_tokens, run.max_tool_calls) == (500, 3)


def test_an_htmx_submit_is_sent_to_the_run_page(owner, owner_session, llm_configured):
    response = owner_session.post(
        "/tasks/new/", {"task": "Write a haiku"}, headers={"HX-Request": "true"}
    )

    run = Run.objects.get(owner=owner)
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/runs/{run.pk}/"


def test_an_empty_task_is_refused_with_the_services_message_and_the_context_kept(
    owner_session, llm_configured
):
    response = owner_session.post("/tasks/new/", {"task": "   ", "context": '{"keep": "me"}'})

    html = response.content.decode()
    assert response.status_code == 400
    assert "The task text is empty" in html
    assert "{&quot;keep&quot;: &quot;me&quot;}" in html
    assert Task.objects.count() == 0


def test_a_task_too_long_is_refused_and_its_text_kept(owner_session, llm_configured, settings):
    settings.TASK_MAX_CHARS = 10

    response = owner_session.post("/tasks/new/", {"task": "A task longer than ten"})

    html = response.content.decode()
    assert response.status_code == 400
    assert "at most 10 are allowed" in html
    assert ">\nA task longer than ten</textarea>" in html


def test_without_an_llm_the_form_says_so_and_keeps_the_text(owner_session, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    response = owner_session.post("/tasks/new/", {"task": "Plan my week"})

    html = response.content.decode()
    assert response.status_code == 503
    assert "No LLM is configured: set LLM_BASE_URL and LLM_MODEL" in html
    assert 'data-code="LLM_NOT_CONFIGURED"' in html
    assert ">\nPlan my week</textarea>" in html
    assert Task.objects.count() == 0


def test_an_htmx_submit_with_an_error_gets_the_form_alone(owner_session, settings):
    settings.LLM_BASE_URL = ""

    response = owner_session.post(
        "/tasks/new/", {"task": "Plan my week"}, headers={"HX-Request": "true"}
    )

    html = response.content.decode()
    assert response.status_code == 503
    assert html.lstrip().startswith('<form id="task-form"')
    assert "No LLM is configured" in html
    assert ">\nPlan my week</textarea>" in html


def test_context_that_is_not_json_is_refused_and_both_texts_kept(owner_session, llm_configured):
    response = owner_session.post("/tasks/new/", {"task": "Go on", "context": "{not json"})

    html = response.content.decode()
    assert response.status_code == 400
    assert "The context is not valid JSON" in html
    assert ">\nGo on</textarea>" in html
    assert ">\n{not json</textarea>" in html
    assert Task.objects.count() == 0


def test_context_that_is_not_an_object_is_refused_by_the_service(owner_session, llm_configured):
    response = owner_session.post("/tasks/new/", {"task": "Go on", "context": "[1, 2]"})

    assert response.status_code == 400
    assert "The context must be a JSON object" in response.content.decode()


def test_the_form_needs_the_csrf_token(owner, llm_configured):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    assert client.post("/tasks/new/", {"task": "Go"}).status_code == 403
    assert Task.objects.count() == 0

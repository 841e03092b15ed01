"""POST /api/v1/agent/task: a task in, a queued run out."""

import json

import pytest
import redis
from django.conf import settings

from agents_app.models import Run, RunEvent, Task
from config.celery import app as celery_app
from tests.support.api import assert_error, post_json, submit

URL = "/api/v1/agent/task"

pytestmark = pytest.mark.usefixtures("llm_configured")


def assert_nothing_created():
    assert not Task.objects.exists()
    assert not Run.objects.exists()


def test_it_accepts_a_task_with_202_and_the_run_links(owner_api):
    response = submit(owner_api)

    assert response.status_code == 202
    body = response.json()
    run = Run.objects.get()
    assert body == {
        "success": True,
        "run_id": run.pk,
        "status": "queued",
        "links": {
            "self": f"/api/v1/runs/{run.pk}",
            "events": f"/api/v1/runs/{run.pk}/events",
            "cancel": f"/api/v1/runs/{run.pk}/cancel",
            "restart": f"/api/v1/runs/{run.pk}/restart",
            "websocket": f"/ws/api/runs/{run.pk}/",
        },
    }


def test_it_saves_the_task_with_its_context_and_a_first_run(owner, owner_api):
    submit(owner_api, task="Count the words", context={"file": "notes.md", "lines": [1, 2]})

    task = Task.objects.get()
    assert task.owner == owner
    assert task.text == "Count the words"
    assert task.context == {"file": "notes.md", "lines": [1, 2]}
    run = Run.objects.get()
    assert run.task == task
    assert run.owner == owner
    assert run.attempt == 1
    assert run.status == "queued"
    assert not run.cancel_requested


def test_it_saves_an_empty_context_when_none_is_given(owner_api):
    submit(owner_api, context=None)

    assert Task.objects.get().context == {}


def test_it_takes_the_budgets_from_settings(owner_api, settings):
    settings.RUN_MAX_TOKENS = 1234
    settings.RUN_MAX_TOOL_CALLS = 7

    submit(owner_api)

    run = Run.objects.get()
    assert (run.max_tokens, run.max_tool_calls) == (1234, 7)
    assert (run.task.max_tokens, run.task.max_tool_calls) == (None, None)


def test_it_overrides_the_budgets_with_max_tokens_and_max_tool_calls(owner_api):
    submit(owner_api, max_tokens=500, max_tool_calls=3)

    run = Run.objects.get()
    assert (run.max_tokens, run.max_tool_calls) == (500, 3)
    assert (run.task.max_tokens, run.task.max_tool_calls) == (500, 3)


def test_it_records_the_run_queued_event(owner_api):
    submit(owner_api, task="Count the words")

    event = RunEvent.objects.get()
    assert (event.seq, event.type) == (1, "run_queued")
    assert event.payload == {"task": "Count the words", "attempt": 1}
    assert Run.objects.get().event_seq == 1


@pytest.fixture
def broker_queue():
    """The Redis list the workers read, as (client, key): the real queue, nothing mocked."""
    return redis.Redis.from_url(settings.CELERY_BROKER_URL), celery_app.conf.task_default_queue


@pytest.mark.dialect
def test_it_enqueues_exactly_one_execution_once_committed(
    owner_api, broker_queue, django_capture_on_commit_callbacks
):
    broker, queue = broker_queue
    queued_before = broker.llen(queue)

    with django_capture_on_commit_callbacks(execute=True):
        response = submit(owner_api)

    assert broker.llen(queue) == queued_before + 1
    message = json.loads(broker.lpop(queue))
    assert message["headers"]["task"] == "agents_app.tasks.execute_run"
    assert message["headers"]["argsrepr"] == f"({response.json()['run_id']},)"


@pytest.mark.dialect
def test_it_enqueues_nothing_before_the_transaction_commits(
    owner_api, broker_queue, django_capture_on_commit_callbacks
):
    broker, queue = broker_queue
    queued_before = broker.llen(queue)

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submit(owner_api)

    assert callbacks
    assert broker.llen(queue) == queued_before


def test_it_gives_each_persona_its_own_run(owner, outsider, owner_api, outsider_api):
    mine = submit(owner_api).json()["run_id"]
    theirs = submit(outsider_api).json()["run_id"]

    assert Run.objects.get(pk=mine).owner == owner
    assert Run.objects.get(pk=theirs).owner == outsider


def test_it_refuses_an_anonymous_client(anonymous_client):
    response = submit(anonymous_client)

    assert_error(response, 401, "UNAUTHORIZED")
    assert_nothing_created()


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \n"])
def test_it_refuses_an_empty_or_blank_task(owner_api, text):
    response = submit(owner_api, task=text)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    # The schema refuses it (minLength 1, a non-blank pattern), so OpenAPI says so too; in
    # the README's words, not pydantic's ("String should match pattern '\\S'").
    assert error["message"] == "The task text is empty"
    assert error["details"] == {
        "errors": [{"field": "task", "message": "is empty"}],
        "field": "task",
    }
    assert_nothing_created()


def test_it_refuses_a_body_without_a_task(owner_api):
    response = post_json(owner_api, URL, {"context": {}})

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["errors"] == [{"field": "task", "message": "Field required"}]
    assert "task" in error["message"]


@pytest.mark.dialect
def test_it_refuses_a_task_over_task_max_chars(owner_api, settings):
    too_long = "x" * (settings.TASK_MAX_CHARS + 1)

    response = submit(owner_api, task=too_long)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert str(settings.TASK_MAX_CHARS) in error["message"]
    assert error["details"] == {
        "field": "task",
        "length": settings.TASK_MAX_CHARS + 1,
        "max_length": settings.TASK_MAX_CHARS,
    }
    assert_nothing_created()


@pytest.mark.dialect
def test_it_accepts_a_task_of_exactly_task_max_chars(owner_api, settings):
    response = submit(owner_api, task="x" * settings.TASK_MAX_CHARS)

    assert response.status_code == 202


@pytest.mark.parametrize("text", [5, None, ["a list"], {"an": "object"}, True])
def test_it_refuses_a_task_that_is_not_a_string(owner_api, text):
    response = submit(owner_api, task=text)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == ["task"]
    assert_nothing_created()


@pytest.mark.parametrize("context", [["a", "list"], "a string", 42, True])
def test_it_refuses_a_context_that_is_not_an_object(owner_api, context):
    response = submit(owner_api, context=context)

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == ["context"]
    assert "context" in error["message"]
    assert_nothing_created()


def test_it_refuses_a_context_over_context_max_bytes(owner_api, settings):
    # '{"blob": "' + blob + '"}' is 12 bytes more than the blob.
    blob = "x" * (settings.CONTEXT_MAX_BYTES - 12 + 1)
    body = json.dumps({"task": "Read it", "context": {"blob": blob}})
    assert len(body) < settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    response = owner_api.post(URL, data=body, content_type="application/json")

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert str(settings.CONTEXT_MAX_BYTES) in error["message"]
    assert error["details"] == {
        "field": "context",
        "size": settings.CONTEXT_MAX_BYTES + 1,
        "max_size": settings.CONTEXT_MAX_BYTES,
    }
    assert_nothing_created()


def test_it_accepts_a_context_of_exactly_context_max_bytes(owner_api, settings):
    blob = "x" * (settings.CONTEXT_MAX_BYTES - 12)

    response = submit(owner_api, context={"blob": blob})

    assert response.status_code == 202
    assert len(Task.objects.get().context["blob"]) == len(blob)


def test_it_counts_the_context_in_utf8_bytes_not_characters(owner_api, settings):
    settings.CONTEXT_MAX_BYTES = 20
    # 5 characters, 10 bytes: with the 12 bytes around it, 22 bytes.
    response = submit(owner_api, context={"blob": "ééééé"})

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["details"]["size"] == 22


@pytest.mark.parametrize("body", ["[1, 2]", '"just text"', "42"])
def test_it_refuses_a_body_that_is_not_a_json_object(owner_api, body):
    response = owner_api.post(URL, data=body, content_type="application/json")

    assert_error(response, 400, "VALIDATION_ERROR")
    assert_nothing_created()


def test_it_refuses_a_body_that_is_not_json(owner_api):
    response = owner_api.post(URL, data="{task: oops", content_type="application/json")

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["message"] == "The request body is not valid JSON"
    assert error["details"]["error"]
    assert_nothing_created()


@pytest.mark.dialect
@pytest.mark.parametrize(
    "field, value",
    [
        ("max_tokens", 0),
        ("max_tokens", -5),
        ("max_tool_calls", 0),
        ("wait_timeout", 0),
        ("max_tokens", "lots"),
        ("wait", "perhaps"),
    ],
)
def test_it_refuses_a_budget_or_wait_option_out_of_range(owner_api, field, value):
    response = submit(owner_api, **{field: value})

    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert [e["field"] for e in error["details"]["errors"]] == [field]
    assert field in error["message"]
    assert_nothing_created()


def test_it_answers_503_when_no_llm_is_configured(owner_api, settings):
    settings.LLM_BASE_URL = ""

    response = submit(owner_api)

    error = assert_error(response, 503, "LLM_NOT_CONFIGURED")
    assert "LLM_BASE_URL" in error["message"]
    assert error["details"] == {"missing": ["LLM_BASE_URL"]}
    assert_nothing_created()
    assert not RunEvent.objects.exists()


def test_it_names_every_missing_llm_setting(owner_api, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""

    response = submit(owner_api)

    error = assert_error(response, 503, "LLM_NOT_CONFIGURED")
    assert error["details"] == {"missing": ["LLM_BASE_URL", "LLM_MODEL"]}
    assert_nothing_created()


def test_it_enqueues_nothing_when_no_llm_is_configured(
    owner_api, settings, django_capture_on_commit_callbacks
):
    settings.LLM_MODEL = ""

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = submit(owner_api)

    assert response.status_code == 503
    assert callbacks == []


def test_it_reports_invalid_input_before_a_missing_llm(owner_api, settings):
    settings.LLM_BASE_URL = ""

    response = submit(owner_api, task="  ")

    assert_error(response, 400, "VALIDATION_ERROR")

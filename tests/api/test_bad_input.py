"""Bad input over REST is a 400 VALIDATION_ERROR naming the field, never a 500 from deep in the
database driver, and the same on SQLite and PostgreSQL: integers fit their columns, text is
valid UTF-8 without NUL (PostgreSQL refuses NUL), JSON has no NaN, booleans are booleans."""

import pytest
from django.test import Client

from agents_app.models import Run, Task, Webhook
from tests.support.api import assert_error, post_json, put_json, submit

TASK = "/api/v1/agent/task"
BIGINT_OVERFLOW = 2**63  # SQLite's driver: OverflowError
INTEGER_OVERFLOW = 2**31  # a PositiveIntegerField on PostgreSQL: out of range


def raw_post(client, path: str, body: str):
    """POST a body as written: json.dumps would escape what the test needs to send raw."""
    return client.post(path, data=body, content_type="application/json")


def fields(error: dict) -> list[str]:
    return [problem["field"] for problem in error["details"]["errors"]]


@pytest.mark.dialect
@pytest.mark.parametrize("field", ["max_tokens", "max_tool_calls"])
@pytest.mark.parametrize("value", [BIGINT_OVERFLOW, INTEGER_OVERFLOW])
def test_a_budget_beyond_its_column_is_a_400_naming_it(owner_api, llm_configured, field, value):
    error = assert_error(submit(owner_api, **{field: value}), 400, "VALIDATION_ERROR")

    assert fields(error) == [field]
    assert not Task.objects.exists()


@pytest.mark.dialect
@pytest.mark.parametrize(
    "path, body, field",
    [
        (TASK, r'{"task": "Sum\ud800marise"}', "task"),
        (TASK, r'{"task": "Go", "context": {"\ud800": 1}}', "context"),
        (TASK, r'{"task": "Go", "context": {"notes": ["\udfff"]}}', "context"),
        ("/api/v1/webhooks", r'{"url": "https://example.com/\ud800"}', "url"),
        ("/api/v1/approval-rules", r'{"tool": "se\ud800nd"}', "tool"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field(owner_api, llm_configured, path, body, field):
    error = assert_error(raw_post(owner_api, path, body), 400, "VALIDATION_ERROR")

    assert fields(error) == [field]


@pytest.mark.dialect
@pytest.mark.parametrize(
    "path, body, field",
    [
        (TASK, {"task": "Sum\x00marise"}, "task"),
        (TASK, {"task": "Go", "context": {"notes": "a\x00b"}}, "context"),
        (TASK, {"task": "Go", "context": {"a\x00": 1}}, "context"),
        ("/api/v1/webhooks", {"url": "https://example.com/\x00"}, "url"),
        ("/api/v1/approval-rules", {"tool": "se\x00nd"}, "tool"),
    ],
)
def test_a_nul_character_is_a_400_as_postgresql_would_refuse_it(
    owner_api, llm_configured, path, body, field
):
    error = assert_error(post_json(owner_api, path, body), 400, "VALIDATION_ERROR")

    assert fields(error) == [field]
    assert not Task.objects.exists() and not Webhook.objects.exists()


@pytest.mark.dialect
@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_number_json_does_not_have_is_a_400(owner_api, llm_configured, constant):
    body = f'{{"task": "Go", "context": {{"x": {constant}}}}}'

    error = assert_error(raw_post(owner_api, TASK, body), 400, "VALIDATION_ERROR")

    assert constant in error["details"]["error"]


@pytest.mark.dialect
@pytest.mark.parametrize(
    "query, field",
    [
        (f"/api/v1/runs?page={BIGINT_OVERFLOW}", "page"),
        (f"/api/v1/runs?page={2**62}", "page"),  # fits, but page × page_size does not
        (f"/api/v1/approvals?page={2**62}", "page"),
        (f"/api/v1/approvals?run_id={BIGINT_OVERFLOW}", "run_id"),
    ],
)
def test_a_huge_page_or_id_in_a_query_is_a_400(owner_api, query, field):
    error = assert_error(owner_api.get(query), 400, "VALIDATION_ERROR")

    assert fields(error) == [field]


@pytest.mark.dialect
def test_a_huge_after_on_the_event_log_is_a_400(owner, owner_api):
    run = Run.objects.create(
        task=Task.objects.create(owner=owner, text="Go"),
        owner=owner,
        max_tokens=1,
        max_tool_calls=1,
    )

    response = owner_api.get(f"/api/v1/runs/{run.pk}/events?after={BIGINT_OVERFLOW}")

    assert fields(assert_error(response, 400, "VALIDATION_ERROR")) == ["after"]


@pytest.mark.parametrize("value", [0, 1, "true"])
def test_yolo_must_be_a_json_boolean(owner_api, value):
    error = assert_error(
        put_json(owner_api, "/api/v1/preferences", {"yolo": value}), 400, "VALIDATION_ERROR"
    )

    assert fields(error) == ["yolo"]


@pytest.mark.parametrize("body", [{"wait": 1}, {"approve_plan": 0}, {"max_tokens": True}])
def test_a_task_takes_json_booleans_and_integers_only(owner_api, llm_configured, body):
    assert_error(submit(owner_api, **body), 400, "VALIDATION_ERROR")
    assert not Task.objects.exists()


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_an_unknown_path_answers_the_json_404_to_every_method(owner_api, method):
    error = assert_error(getattr(owner_api, method)("/api/v1/nope"), 404, "NOT_FOUND")

    assert "/api/v1/nope" in error["message"]


def test_an_unknown_path_answers_the_json_404_to_a_logged_in_browser_too(owner):
    # Logged in, no CSRF token: the same JSON 404, not Django's HTML CSRF page.
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)

    assert_error(browser.post("/api/v1/nope"), 404, "NOT_FOUND")

"""Bad input on the pages is the form again with its message, never a 500 from the database
driver: budgets fit their columns, ids in a bulk approval fit bigint."""

import pytest

from agents_app.models import Approval, ApprovalStatus, Task
from tests.support.approvals import decide_url, pending

pytestmark = pytest.mark.dialect


@pytest.mark.parametrize("field", ["max_tokens", "max_tool_calls", "approval_timeout"])
@pytest.mark.parametrize("value", [2**63, 2**31])
def test_a_budget_beyond_its_column_is_refused_on_the_form(
    owner_session, llm_configured, field, value
):
    response = owner_session.post("/tasks/new/", {"task": "Write a haiku", field: str(value)})

    html = response.content.decode()
    assert response.status_code == 400
    assert "Ensure this value is less than or equal to 2147483647" in html
    assert ">\nWrite a haiku</textarea>" in html
    assert not Task.objects.exists()


@pytest.mark.parametrize("listed", [str(2**63), "²", "12" * 40])
def test_a_bulk_approval_of_an_impossible_id_approves_nothing(owner, owner_session, listed):
    waiting = pending(owner, tool="send")

    response = owner_session.post("/approvals/bulk/", {"tool": "send", "approval": [listed]})

    assert response.status_code == 302
    # Not dropped and so widened to every pending call of the tool: it matches none.
    assert Approval.objects.get(pk=waiting.pk).status == ApprovalStatus.PENDING


@pytest.mark.parametrize(
    "context", ['{"notes": "a\\u0000b"}', '{"a\\u0000": 1}', '{"x": NaN}', '{"x": [Infinity]}']
)
def test_a_context_no_database_can_store_is_refused_on_the_form(
    owner_session, llm_configured, context
):
    response = owner_session.post("/tasks/new/", {"task": "Write a haiku", "context": context})

    html = response.content.decode()
    assert response.status_code == 400
    assert "The context cannot be stored" in html
    assert ">\nWrite a haiku</textarea>" in html
    assert not Task.objects.exists()


@pytest.mark.parametrize("arguments", ['{"to": "ann", "text": "a\\u0000"}', '{"to": NaN}'])
def test_modified_arguments_no_database_can_store_are_refused(owner, owner_session, arguments):
    waiting = pending(owner, tool="send")

    response = owner_session.post(
        decide_url(waiting), {"decision": "modify", "arguments": arguments}
    )

    assert response.status_code == 400
    assert "The arguments cannot be stored" in response.content.decode()
    assert Approval.objects.get(pk=waiting.pk).status == ApprovalStatus.PENDING

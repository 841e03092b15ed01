"""Bad input on the pages is the form again with its message, never a 500 from the database
driver: budgets fit their columns, ids in a bulk approval fit bigint."""

import pytest

from agents_app.models import Approval, ApprovalStatus, Task
from tests.support.approvals import pending


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

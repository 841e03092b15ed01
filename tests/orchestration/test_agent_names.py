"""How a tree's messages name its runs (their recipes say): the head node by its profile and
"(head)", a child by its profile, a child whose profile staff removed by its run."""

import pytest

from agents_app.models import AgentMessage
from tests.support.teams import child_succeeds, start_team

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("queued_runs")]


def test_a_child_whose_profile_was_removed_is_named_by_its_run_in_the_messages(
    owner, seeded_profiles
):
    head, (child,) = start_team(
        owner, [("Research the existing parsers", seeded_profiles["research_agent"])]
    )
    seeded_profiles["research_agent"].delete()

    child_succeeds(child, "Three parsers exist.")

    result = AgentMessage.objects.get(sender=child, type="task_result")
    assert (result.from_agent, result.to_agent) == (f"run #{child.pk}", "head_node (head)")

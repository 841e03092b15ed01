"""How a tree's messages name its runs (their recipes say): the head node by its profile and
"(head)", a child by its profile, a child whose profile staff removed by its run."""

import pytest

from agents_app.models import AgentMessage, AgentProfile, AgentRole
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


def test_a_head_node_without_a_profile_is_named_head_node_in_the_messages(owner, seeded_profiles):
    # Staff removed every orchestrator profile: the head node runs as none.
    AgentProfile.objects.filter(role=AgentRole.ORCHESTRATOR).delete()
    head, (child,) = start_team(
        owner, [("Research the existing parsers", seeded_profiles["research_agent"])]
    )
    assert head.profile_id is None

    child_succeeds(child, "Three parsers exist.")

    messages = AgentMessage.objects.filter(
        root=head, type__in=["task_assignment", "task_result"]
    ).order_by("id")
    assert [(m.type, m.from_agent, m.to_agent) for m in messages] == [
        ("task_assignment", "head node", "research_agent"),
        ("task_result", "research_agent", "head node"),
    ]

"""A head node delivered while a child of its still works (woken by another's end, resumed)
has nothing to start: it parks in waiting_children and lets its lease go."""

import pytest

from agents_app.models import RunStatus
from agents_app.worker.execution import execute_run
from tests.support.runs import to_status
from tests.support.scripted_provider import ScriptedProvider
from tests.support.teams import start_team
from tests.support.tools import make_registry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("queued_runs")]


def test_a_head_node_delivered_while_its_child_works_parks_until_the_child_ends(
    owner, seeded_profiles
):
    head, (child,) = start_team(
        owner, [("Research the existing parsers", seeded_profiles["research_agent"])]
    )
    to_status(child, RunStatus.PLANNING, RunStatus.RUNNING)
    to_status(head, RunStatus.RUNNING)

    execute_run(head.pk, provider=ScriptedProvider([]), registry=make_registry())

    head.refresh_from_db()
    assert (head.status, head.lease_owner) == (RunStatus.WAITING_CHILDREN, "")

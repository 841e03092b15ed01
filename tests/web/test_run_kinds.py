"""Runs where they belong (issue 32, finding 2): the dashboard lists tasks and team runs; a
kind filter shows any other kind on demand; every run page says its kind, links to its
conversation or agent, and offers only the actions that make sense for its kind."""

import pytest

from agents_app.contracts.services import agent_create
from agents_app.conversations.services import conversation_create, message_post
from agents_app.core.errors import DomainError
from agents_app.models import Conversation, Run
from agents_app.runs.services import run_restart
from tests.support.api import assert_error
from tests.support.markup import by_id, elements
from tests.support.runs import add_plan, make_run, succeed

pytestmark = pytest.mark.django_db


def of_kind(owner, text, kind):
    run = make_run(owner, text)
    Run.objects.filter(pk=run.pk).update(kind=kind)
    return Run.objects.get(pk=run.pk)


def rows(session, query="") -> list[int]:
    html = session.get(f"/{query}").content.decode()
    return [
        int(attrs["id"].removeprefix("run-row-"))
        for tag, attrs in elements(html)
        if tag == "tr" and attrs.get("id", "").startswith("run-row-")
    ]


def test_the_dashboard_lists_tasks_and_teams_and_shows_other_kinds_on_demand(owner, owner_session):
    task = of_kind(owner, "Write the report", "task")
    team = of_kind(owner, "Plan the offsite", "team")
    chat = of_kind(owner, "Say hello in French", "chat")
    child = of_kind(owner, "A task", "child")
    attempt = of_kind(owner, "Keep the inbox empty", "contract")

    assert set(rows(owner_session)) == {task.pk, team.pk}
    assert set(rows(owner_session, "?kind=all")) == {
        task.pk,
        team.pk,
        chat.pk,
        child.pk,
        attempt.pk,
    }
    assert rows(owner_session, "?kind=chat") == [chat.pk]
    assert rows(owner_session, "?kind=chat&q=french") == [chat.pk]
    assert rows(owner_session, "?kind=child&q=french") == []
    html = owner_session.get("/?kind=all").content.decode()
    tags = {a["data-kind"] for t, a in elements(html) if a.get("class") == "kind-tag"}
    assert tags == {"task", "team", "chat", "child", "contract"}
    assert by_id(html, "runs-panel")["data-kinds"] == "all"
    # The default view's live rows skip a kind it does not list (static/agentdesk/live.js).
    assert by_id(owner_session.get("/").content.decode(), "runs-panel")["data-kinds"] == "task,team"


def test_an_unknown_kind_on_the_dashboard_is_ignored_and_said(owner, owner_session):
    task = of_kind(owner, "Write the report", "task")
    of_kind(owner, "Say hello", "chat")

    html = owner_session.get("/?kind=bogus").content.decode()

    assert "Unknown kind “bogus”: showing tasks and teams." in html
    assert rows(owner_session, "?kind=bogus") == [task.pk]


def run_page(session, run) -> str:
    response = session.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_chat_answers_page_says_so_links_its_conversation_and_offers_no_restart(
    owner, owner_session, llm
):
    chat = conversation_create(owner=owner, interface="web", title="Trip to Lisbon")
    _, run = message_post(conversation=chat, actor=owner, interface="web", text="Hello")

    html = run_page(owner_session, run)
    assert by_id(html, "run-kind")["data-kind"] == "chat"
    assert "chat answer" in html and "· attempt" not in html
    link = by_id(html, "run-home-link")
    assert link["href"] == f"/chat/{chat.pk}/"
    assert "Trip to Lisbon" in html
    assert "cancel-run" in html and "pause-run" not in html

    succeed(add_plan(Run.objects.get(pk=run.pk), ["Answer"]).run, "Bonjour")
    finished = run_page(owner_session, run)
    assert "restart-run" not in finished


def test_a_tasks_page_offers_restart_once_finished_and_links_nowhere_else(owner, owner_session):
    run = succeed(add_plan(make_run(owner, "Write it"), ["One"]).run, "done")

    html = run_page(owner_session, run)

    assert by_id(html, "run-kind")["data-kind"] == "task"
    assert "restart-run" in html and "run-home-link" not in html


def test_an_attempts_page_links_its_contract_agent(owner, owner_session, llm):
    agent = agent_create(owner=owner, interface="web", name="Inbox keeper", contract="Keep it")
    attempt = of_kind(owner, "Keep it", "contract")
    conversation = Conversation.objects.create(owner=owner, agent=agent)
    Run.objects.filter(pk=attempt.pk).update(conversation=conversation)

    html = run_page(owner_session, attempt)

    assert by_id(html, "run-home-link")["href"] == f"/chat/agents/{agent.pk}/"
    assert "Inbox keeper" in html


@pytest.mark.parametrize("kind", ["chat", "contract", "child", "micro"])
def test_a_run_of_a_kind_that_is_not_restarted_on_its_own_is_refused_over_rest(
    owner, owner_api, kind
):
    run = of_kind(owner, "Do it", kind)
    Run.objects.filter(pk=run.pk).update(status="succeeded")

    response = owner_api.post(f"/api/v1/runs/{run.pk}/restart")

    error = assert_error(response, 409, "CONFLICT")
    assert "not restarted on its own" in error["message"] and error["details"] == {"kind": kind}
    assert Run.objects.count() == 1
    with pytest.raises(DomainError) as refused:
        run_restart(run=run, actor=owner, interface="web")
    assert refused.value.code == "CONFLICT"

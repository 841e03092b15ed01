"""Contract agent tabs on the chat page: [+ Agent] opens a tab with the contract, the model and
the budgets; Start, Stop and Restart with CSRF; the status badge with its reason; the output
(the chat rows' renderer, with the evaluations and a log that could not be written); earlier
attempts and each attempt's log as a download; another user's agent is a 404 everywhere.

No worker runs here: a started attempt stays queued (running), unless a test drives it in this
process with execute_run and a scripted provider."""

import re
from html import unescape

import pytest
from django.test import Client

from agents_app.contracts.logs import log_path
from agents_app.contracts.services import agent_create, agent_start, agent_stop
from agents_app.models import (
    AuditEvent,
    ContractAgent,
    Conversation,
    KillSwitch,
    LLMConnection,
    Run,
    RunEvent,
    RunStatus,
)
from agents_app.worker.execution import execute_run
from tests.support.chat import add_rows
from tests.support.script import json_reply, tool_call
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("llm_configured")]

CONTRACT = "Review all Python files for security issues. Focus on SQL injection and XSS."
BUDGETS = {"max_turns": "", "max_tokens": "", "max_seconds": ""}


@pytest.fixture(autouse=True)
def logs(settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    return settings.AGENT_LOG_DIR


@pytest.fixture
def agent(owner):
    return agent_create(owner=owner, interface="web", contract=CONTRACT)


def started(agent, owner) -> Run:
    return agent_start(agent=agent, actor=owner, interface="web")


def evaluation(met, reason, *evidence):
    return json_reply({"met": met, "reason": reason, "evidence": list(evidence)})


def complete(run: Run) -> Run:
    """The attempt in this process: it echoes `a`, is not done, echoes `b`, judges it met."""
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    evaluation(False, "b is not echoed yet", 1),
                    evaluation(True, "a and b were echoed", 1, 2),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [
                    {**tool_call("echo", text="a"), "content": "Echoing **a**."},
                    tool_call("echo", text="b"),
                ],
            },
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))
    return Run.objects.get(pk=run.pk)


def ended(run: Run, code: str, message: str) -> None:
    """The attempt as the worker leaves one that ended with `code`."""
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, error_code=code, error_message=message
    )


def page(session, agent) -> str:
    response = session.get(f"/chat/agents/{agent.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def badge(html: str) -> tuple[str, str]:
    """The status badge's text and the reason beside it (the first one shown)."""
    match = re.search(
        r'class="badge agent-status"[^>]*>([^<]*)</span>(?: <span class="agent-reason">([^<]*))?',
        html,
    )
    assert match, "no status badge"
    return match.group(1), unescape(match.group(2) or "")


def post(session, path, data=None):
    return session.post(path, data or {})


# --- [+ Agent] and Start ----------------------------------------------------------------------


def test_the_agent_pages_ask_for_a_login(client, agent):
    for path in ("/chat/agents/new/", f"/chat/agents/{agent.pk}/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_chat_header_offers_a_new_agent_next_to_a_new_chat(owner_session):
    html = owner_session.get("/chat/").content.decode()
    assert "+ Chat</summary>" in html
    assert '<a class="button agent-new" href="/chat/agents/new/">+ Agent</a>' in html


def test_plus_agent_opens_a_tab_agent_n_with_the_contract_the_default_model_and_the_budgets(
    owner, owner_session, settings
):
    agent_create(owner=owner, interface="web", contract="An earlier one.")
    LLMConnection.objects.create(name="Other", base_url="http://other.test/v1", model="m2")

    html = owner_session.get("/chat/agents/new/").content.decode()

    assert re.search(r'id="agent-tab-new"[^>]*><span[^>]*>◆</span><span[^>]*>Agent-2<', html)
    assert '<textarea id="agent-contract-new" name="contract"' in html
    form = html.split('class="agent-form"')[1]
    options = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', form)
    assert options[0][0] == "" and options[0][1] == " selected" and "default" in options[0][2]
    assert any("Other (m2)" in label for _, _, label in options)
    for field, setting in (
        ("max_turns", settings.CONTRACT_MAX_TURNS),
        ("max_tokens", settings.CONTRACT_MAX_TOKENS),
        ("max_seconds", settings.CONTRACT_MAX_SECONDS),
    ):
        assert f'name="{field}" min="1" value="" placeholder="{setting}"' in form
    assert ">Start</button>" in html
    assert badge(html) == ("Ready", "")


def test_start_in_a_new_tab_creates_and_starts_the_agent_and_shows_it_running(
    owner, owner_session, settings
):
    response = post(
        owner_session,
        "/chat/agents/start/",
        {
            "contract": CONTRACT,
            "connection": "",
            "max_turns": "3",
            "max_tokens": "",
            "max_seconds": "60",
        },
    )

    agent = ContractAgent.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/chat/agents/{agent.pk}/"
    assert (agent.name, agent.owner, agent.max_turns, agent.max_tokens, agent.max_seconds) == (
        "Agent-1",
        owner,
        3,
        None,
        60,
    )
    run = Run.objects.get()
    assert (run.kind, run.status, run.task.max_tokens) == (
        "contract",
        "queued",
        settings.CONTRACT_MAX_TOKENS,
    )
    assert AuditEvent.objects.filter(action="agent.start", interface="web").count() == 1

    html = page(owner_session, agent)
    assert badge(html) == ("Running", "")
    assert 'class="agent-stop"' in html and ">Restart</button>" not in html
    # The contract shortened, the whole of it a click away.
    assert "Review all Python files for security issues. Focus on SQL i…</summary>" in html
    assert f'<pre class="agent-contract-full">{CONTRACT}</pre>' in html
    assert f'data-socket="/ws/conversations/{run.conversation_id}/"' in html
    # Among the chat tabs, with the running dot.
    assert re.search(
        rf'class="chat-tab agent-tab" data-agent="{agent.pk}" data-running="true" data-active', html
    )


def test_an_empty_contract_is_refused_in_the_new_tab_with_what_was_typed_kept(owner_session):
    response = post(
        owner_session,
        "/chat/agents/start/",
        {"contract": "  ", "connection": "", **BUDGETS, "max_turns": "4"},
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-code="VALIDATION_ERROR"' in html and "The contract is empty" in html
    assert 'name="max_turns" min="1" value="4"' in html
    assert 'id="agent-tab-new"' in html
    assert not ContractAgent.objects.exists()


def test_a_budget_that_is_not_a_whole_number_is_refused(owner_session):
    response = post(
        owner_session,
        "/chat/agents/start/",
        {"contract": CONTRACT, "connection": "", **BUDGETS, "max_tokens": "-5"},
    )

    assert response.status_code == 400
    assert "max tokens is a whole number" in response.content.decode()
    assert not ContractAgent.objects.exists()


def test_under_the_kill_switch_start_is_refused_with_503_and_the_agent_waits_ready(owner_session):
    KillSwitch.objects.update_or_create(pk=1, defaults={"engaged": True, "reason": "drill"})

    response = post(
        owner_session, "/chat/agents/start/", {"contract": CONTRACT, "connection": "", **BUDGETS}
    )

    assert response.status_code == 503
    html = response.content.decode()
    assert 'data-code="SERVICE_UNAVAILABLE"' in html
    assert badge(html) == ("Ready", "")
    assert ">Start</button>" in html
    assert ContractAgent.objects.count() == 1 and not Run.objects.exists()


def test_a_ready_agent_starts_with_its_contract_as_edited(owner, owner_session, agent):
    response = post(
        owner_session,
        f"/chat/agents/{agent.pk}/start/",
        {"contract": "Echo a.", "connection": "", **BUDGETS},
    )

    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.contract == "Echo a."
    assert Run.objects.get().task.text == "Echo a."


@pytest.mark.dialect
def test_start_while_an_attempt_runs_is_a_409_shown_in_the_tab(owner, owner_session, agent):
    started(agent, owner)

    response = post(owner_session, f"/chat/agents/{agent.pk}/start/")

    assert response.status_code == 409
    html = response.content.decode()
    assert 'data-code="CONFLICT"' in html and "Agent-1 is running" in html
    assert Run.objects.count() == 1


def test_the_forms_need_the_csrf_token(owner, agent):
    session = Client(enforce_csrf_checks=True)
    session.force_login(owner)
    for path in (
        "/chat/agents/start/",
        f"/chat/agents/{agent.pk}/start/",
        f"/chat/agents/{agent.pk}/stop/",
        f"/chat/agents/{agent.pk}/close/",
    ):
        assert session.post(path, {"contract": CONTRACT}).status_code == 403, path
    assert not Run.objects.exists()
    assert ContractAgent.objects.get().is_open


# --- Stop, the statuses and their reasons -----------------------------------------------------


def test_stop_cancels_the_attempt_and_the_badge_says_stopped_by_the_person(
    owner, owner_session, agent
):
    started(agent, owner)

    response = post(owner_session, f"/chat/agents/{agent.pk}/stop/")

    assert response.status_code == 302
    assert Run.objects.get().status == RunStatus.CANCELLED  # queued: it ends at once
    html = page(owner_session, agent)
    assert badge(html) == ("Stopped", "stopped by the person")
    assert ">Restart</button>" in html and 'class="agent-stop"' not in html


def test_stop_while_the_model_answers_says_it_is_stopping_until_the_attempt_ends(
    owner, owner_session, agent
):
    run = started(agent, owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, lease_owner="worker-1")

    post(owner_session, f"/chat/agents/{agent.pk}/stop/")

    assert Run.objects.get().cancel_requested
    html = page(owner_session, agent)
    assert badge(html) == ("Running", "stopping: the request in flight finishes first")
    # What is left to press cuts the request in flight.
    assert ">Stop now</button>" in html and ">Stop</button>" not in html


def test_stop_now_asks_the_worker_to_cut_the_request_in_flight(owner, owner_session, agent):
    run = started(agent, owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, lease_owner="worker-1")
    assert ">Stop</button>" in page(owner_session, agent)

    post(owner_session, f"/chat/agents/{agent.pk}/stop/")
    post(owner_session, f"/chat/agents/{agent.pk}/stop/", {"now": "1"})

    assert Run.objects.get().cancel_requested
    cancels = RunEvent.objects.filter(run=run, type="cancel_requested").order_by("seq")
    assert [e.payload for e in cancels] == [{}, {"now": True}]


def test_stop_when_nothing_runs_is_a_409(owner_session, agent):
    response = post(owner_session, f"/chat/agents/{agent.pk}/stop/")

    assert response.status_code == 409
    assert "is not running (ready)" in response.content.decode()


@pytest.mark.parametrize(
    ("code", "message", "label", "reason"),
    [
        (
            "BUDGET_EXCEEDED",
            "turns: the attempt used 2 of its 2 cycles",
            "Stopped",
            "budget exhausted: turns: the attempt used 2 of its 2 cycles",
        ),
        (
            "BUDGET_EXCEEDED",
            "tokens: 5000 used of 4000",
            "Stopped",
            "budget exhausted: tokens: 5000 used of 4000",
        ),
        ("EXECUTION_TIMEOUT", "60 s", "Stopped", "budget exhausted (time): 60 s"),
        ("AGENT_STUCK", "the same call 4 times", "Stopped", "stuck: the same call 4 times"),
        ("LLM_UNAVAILABLE", "connection refused", "Failed", "LLM_UNAVAILABLE: connection refused"),
    ],
)
def test_an_attempt_that_ended_shows_its_status_and_why(
    owner, owner_session, agent, code, message, label, reason
):
    ended(started(agent, owner), code, message)

    html = page(owner_session, agent)

    assert badge(html) == (label, reason)
    assert ">Restart</button>" in html


def test_a_completed_attempt_shows_its_output_its_evaluations_and_restart(
    owner, owner_session, agent
):
    run = complete(started(agent, owner))
    assert run.status == RunStatus.SUCCEEDED

    html = page(owner_session, agent)

    assert badge(html) == ("Completed", "a and b were echoed")
    output = html.split('class="chat-rows agent-output"')[1].split("</ol>")[0]
    # The chat rows' renderer: the contract, the answer in Markdown, the calls cut as in a chat.
    assert '<div class="chat-answer markdown"><p>Echoing <strong>a</strong>.</p>' in output
    assert output.count('class="chat-call"') == 2
    assert 'echo({"text": "a"})' in unescape(output)
    # Each evaluation after its cycle's rows, in order.
    notes = re.findall(r'<li class="agent-note"[^>]*data-met="(\w+)"[^>]*>([^<]*)</li>', output)
    assert [(met, unescape(text)) for met, text in notes] == [
        ("false", "Evaluation after cycle 1: not met — b is not echoed yet"),
        ("true", "Evaluation after cycle 2: met — a and b were echoed"),
    ]
    shown = unescape(output)
    assert shown.index('echo({"text": "a"})') < shown.index("cycle 1: not met")
    assert shown.index("cycle 1: not met") < shown.index('echo({"text": "b"})')
    assert ">Restart</button>" in html
    assert f'<textarea id="agent-contract-{agent.pk}" name="contract"' in html
    assert f'href="/chat/agents/{agent.pk}/attempts/1/log" download>Download log</a>' in html


def test_a_failed_attempt_that_could_not_write_its_log_says_so_in_the_output(
    owner, owner_session, agent, settings, tmp_path
):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    settings.AGENT_LOG_DIR = blocker / "logs"
    complete(started(agent, owner))

    html = page(owner_session, agent)

    note = re.search(
        r'<li class="agent-note"[^>]*data-kind="log_failed" role="alert">([^<]*)', html
    )
    assert note and "The log file could not be written" in note.group(1)
    response = owner_session.get(f"/chat/agents/{agent.pk}/attempts/1/log")
    assert response.status_code == 200 and "X-Log-Write-Error" in response
    assert "[evaluation] contract met: a and b were echoed" in response.content.decode()


# --- Restart, earlier attempts, logs ----------------------------------------------------------


@pytest.mark.dialect
def test_restart_starts_a_new_attempt_with_the_edited_contract_and_lists_the_earlier_one(
    owner, owner_session, agent
):
    complete(started(agent, owner))

    response = post(
        owner_session,
        f"/chat/agents/{agent.pk}/start/",
        {"contract": "Echo c.", "connection": "", **BUDGETS, "max_turns": "2"},
    )

    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.contract, agent.max_turns) == ("Echo c.", 2)
    second = Run.objects.order_by("-id").first()
    assert (second.task.text, second.task.context["attempt"]) == ("Echo c.", 2)
    assert (
        AuditEvent.objects.filter(action="agent.start").order_by("id").last().details["restart"]
        is True
    )
    html = page(owner_session, agent)
    assert badge(html) == ("Running", "")
    earlier = html.split('class="agent-earlier"')[1]
    assert re.search(
        r'Attempt 1: <span class="badge small" data-status="completed">Completed', earlier
    )
    assert f'href="/chat/agents/{agent.pk}/attempts/1/log"' in earlier
    assert f'href="/chat/agents/{agent.pk}/attempts/2/log" download>Download log' in html


def test_a_restart_with_an_empty_contract_is_refused_and_starts_nothing(
    owner, owner_session, agent
):
    run = started(agent, owner)
    agent_stop(agent=agent, actor=owner, interface="web")

    response = post(
        owner_session,
        f"/chat/agents/{agent.pk}/start/",
        {"contract": "", "connection": "", **BUDGETS},
    )

    assert response.status_code == 400
    assert "The contract is empty" in response.content.decode()
    assert list(Run.objects.all()) == [run]
    assert ContractAgent.objects.get().contract == CONTRACT


def test_the_log_is_a_plain_text_download_named_like_the_file(owner, owner_session, agent):
    run = complete(started(agent, owner))

    response = owner_session.get(f"/chat/agents/{agent.pk}/attempts/1/log")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{log_path(run).name}"'
    text = response.content.decode()
    assert f"[contract] {CONTRACT}" in text
    assert "[evaluation] contract not met: b is not echoed yet" in text
    assert text == log_path(run).read_text()


def test_an_attempt_that_does_not_exist_has_no_log(owner, owner_session, agent):
    started(agent, owner)
    assert owner_session.get(f"/chat/agents/{agent.pk}/attempts/2/log").status_code == 404


def test_another_users_agent_is_a_404_on_every_view(owner, agent, outsider_session):
    started(agent, owner)
    base = f"/chat/agents/{agent.pk}"
    for path in (f"{base}/", f"{base}/output", f"{base}/attempts/1/log"):
        assert outsider_session.get(path).status_code == 404, path
    for path in (f"{base}/start/", f"{base}/stop/", f"{base}/close/", f"{base}/reopen/"):
        assert outsider_session.post(path, {"contract": "Mine now."}).status_code == 404, path
    assert Run.objects.get().status == RunStatus.QUEUED
    assert ContractAgent.objects.get().contract == CONTRACT


# --- the live output and the tabs -------------------------------------------------------------


@pytest.mark.dialect
def test_the_output_fragment_has_the_rows_and_evaluations_after_the_seqs_given(
    owner, owner_session, agent
):
    run = complete(started(agent, owner))
    whole = owner_session.get(f"/chat/agents/{agent.pk}/output").content.decode()
    assert 'data-status="completed"' in whole and f'data-run="{run.pk}"' in whole
    last_seq = int(re.search(r'data-last-seq="(\d+)"', whole).group(1))
    last_event = int(re.search(r'data-last-event="(\d+)"', whole).group(1))
    assert whole.count('class="agent-note"') == 2

    rest = owner_session.get(
        f"/chat/agents/{agent.pk}/output?after={last_seq}&events={last_event}"
    ).content.decode()
    assert "<li" not in rest
    assert f'data-last-seq="{last_seq}"' in rest and f'data-last-event="{last_event}"' in rest

    add_rows(run.conversation, [("assistant", "One more **line**.", {})], run=run)
    more = owner_session.get(
        f"/chat/agents/{agent.pk}/output?after={last_seq}&events={last_event}"
    ).content.decode()
    assert more.count("<li") == 1 and "One more <strong>line</strong>." in more


@pytest.mark.dialect
def test_a_long_output_is_read_in_a_fixed_number_of_queries(
    owner, owner_session, agent, django_assert_max_num_queries
):
    run = started(agent, owner)
    for number in range(30):
        call = {"call_id": f"c{number}", "wire_name": "echo", "arguments": {"n": number}}
        add_rows(
            run.conversation,
            [
                ("tool_call", "", call),
                ("tool_result", "ok", {**call, "ok": True}),
                ("assistant", f"answer {number}", {}),
            ],
            run=run,
        )
    # The same whatever the rows: the page's reads, the header's, the session's.
    with django_assert_max_num_queries(20):
        response = owner_session.get(f"/chat/agents/{agent.pk}/")
    assert response.content.decode().count('class="chat-call"') == 30
    with django_assert_max_num_queries(8):
        owner_session.get(f"/chat/agents/{agent.pk}/output?after=0")


def test_an_agent_tab_closed_goes_to_the_history_and_reopens(owner, owner_session, agent):
    assert f'id="agent-tab-{agent.pk}"' in owner_session.get("/chat/").content.decode()

    response = post(owner_session, f"/chat/agents/{agent.pk}/close/")

    assert response.status_code == 302 and response["Location"] == "/chat/"
    assert not ContractAgent.objects.get().is_open
    html = owner_session.get("/chat/").content.decode()
    assert f'id="agent-tab-{agent.pk}"' not in html
    assert "History: 1 closed agent" in html
    assert f'action="/chat/agents/{agent.pk}/reopen/"' in html
    assert "This agent's tab is closed" in page(owner_session, agent)

    post(owner_session, f"/chat/agents/{agent.pk}/reopen/")
    assert ContractAgent.objects.get().is_open


def test_agent_tabs_sit_among_the_chat_tabs_and_the_attempts_are_no_chat_tabs(
    owner, owner_session, agent
):
    from agents_app.conversations.services import conversation_create

    chat = conversation_create(owner=owner, interface="web", title="Trip planning")
    started(agent, owner)

    html = owner_session.get(f"/chat/{chat.pk}/").content.decode()

    tabs = re.findall(r'id="(chat-tab-\d+|agent-tab-\d+)"', html)
    assert tabs == [f"chat-tab-{chat.pk}", f"agent-tab-{agent.pk}"]
    assert Conversation.objects.filter(agent=agent, is_open=False).count() == 1

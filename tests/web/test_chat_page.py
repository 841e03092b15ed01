"""The chat page: a tab per open conversation with its transcript and input; sending with CSRF
and the double-texting modes; Stop; tabs closed and reopened; and how each kind of row is
shown (calls cut at 80 characters, reasoning apart from the answer, Markdown sanitised)."""

import json
from html import unescape

import pytest
from django.test import Client

from agents_app.conversations.condense import context_usage
from agents_app.conversations.selectors import answer_running, transcript
from agents_app.conversations.services import conversation_create, message_post
from agents_app.models import Approval, AuditEvent, Conversation, ConversationEntry, Run, RunStatus
from tests.support.chat import add_rows, class_blocks
from tests.support.markup import ids
from tests.support.tools import SendTool

pytestmark = pytest.mark.django_db(transaction=True)

HTMX = {"HX-Request": "true"}


@pytest.fixture
def chat(owner, llm):
    return conversation_create(owner=owner, interface="web", title="Trip planning")


def answering(chat, owner, text="Plan a trip") -> Run:
    """A message with its answer started (not run: no worker here)."""
    _, run = message_post(conversation=chat, actor=owner, interface="web", text=text)
    return run


def page(session, chat) -> str:
    response = session.get(f"/chat/{chat.pk}/")
    assert response.status_code == 200
    return response.content.decode()


# --- the page ---------------------------------------------------------------------------------


def test_the_chat_page_asks_for_a_login(client):
    response = client.get("/chat/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_header_links_to_the_chat(owner_session):
    html = owner_session.get("/").content.decode()
    assert '<a href="/chat/">Chat</a>' in html


def test_each_open_conversation_is_a_tab_and_the_first_one_is_shown(owner, owner_session, llm):
    first = conversation_create(owner=owner, interface="web", title="First")
    second = conversation_create(owner=owner, interface="web", title="Second")
    closed = conversation_create(owner=owner, interface="web", title="Old one")
    Conversation.objects.filter(pk=closed.pk).update(is_open=False)

    html = owner_session.get("/chat/").content.decode()

    page_ids = ids(html)
    assert f"chat-tab-{first.pk}" in page_ids and f"chat-tab-{second.pk}" in page_ids
    assert f"chat-tab-{closed.pk}" not in page_ids
    assert f"chat-panel-{first.pk}" in page_ids and f"chat-panel-{second.pk}" not in page_ids
    assert f'data-socket="/ws/conversations/{first.pk}/"' in html
    assert "History: 1 closed conversation" in html


def test_with_no_conversation_the_page_offers_to_start_one(owner_session):
    html = owner_session.get("/chat/").content.decode()
    assert "No conversation is open" in html
    assert 'action="/chat/new/"' in html


def test_a_tab_alone_is_served_for_the_script_that_switches_tabs(owner_session, chat):
    html = owner_session.get(f"/chat/{chat.pk}/?panel=1").content.decode()
    assert html.lstrip().startswith(f'<section class="chat-panel card" id="chat-panel-{chat.pk}"')
    assert "<html" not in html


def test_another_users_conversation_is_the_404_page_everywhere(chat, outsider_session):
    base = f"/chat/{chat.pk}"
    for url in (f"{base}/", f"{base}/entries?after=0", f"{base}/?panel=1"):
        assert outsider_session.get(url).status_code == 404, url
    for url in ("send/", "stop/", "settings/", "close/", "reopen/"):
        response = outsider_session.post(f"{base}/{url}", {"text": "hi"})
        assert response.status_code == 404, url
    assert not ConversationEntry.objects.filter(conversation=chat).exists()
    chat.refresh_from_db()
    assert chat.is_open


def test_plus_chat_opens_a_conversation_on_the_default_connection_with_the_mode_chosen(
    owner, owner_session, llm
):
    form = owner_session.get("/chat/").content.decode()
    assert '<option value="">' in form  # the default connection, preselected as the first

    response = owner_session.post("/chat/new/", {"connection": "", "double_texting": "steer"})

    conversation = Conversation.objects.get(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == f"/chat/{conversation.pk}/"
    assert (conversation.connection, conversation.double_texting) == (None, "steer")
    assert conversation.is_open


def test_plus_chat_with_an_unknown_connection_shows_the_error(owner_session, llm):
    response = owner_session.post("/chat/new/", {"connection": "nope", "double_texting": "enqueue"})
    assert response.status_code == 400
    assert 'class="error-box"' in response.content.decode()
    assert not Conversation.objects.exists()


def test_closing_a_tab_keeps_the_conversation_for_the_history_and_reopening_brings_it_back(
    owner_session, chat
):
    response = owner_session.post(f"/chat/{chat.pk}/close/")
    assert (response.status_code, response["Location"]) == (302, "/chat/")
    chat.refresh_from_db()
    assert not chat.is_open
    html = owner_session.get("/chat/").content.decode()
    assert f"chat-tab-{chat.pk}" not in ids(html)
    assert f'action="/chat/{chat.pk}/reopen/"' in html

    response = owner_session.post(f"/chat/{chat.pk}/reopen/")

    assert response["Location"] == f"/chat/{chat.pk}/"
    chat.refresh_from_db()
    assert chat.is_open


def test_the_double_texting_mode_is_changed_per_conversation(owner_session, chat):
    response = owner_session.post(
        f"/chat/{chat.pk}/settings/", {"double_texting": "reject", "connection": ""}, headers=HTMX
    )
    assert response.status_code == 200
    assert "Saved." in response.content.decode()
    chat.refresh_from_db()
    assert chat.double_texting == "reject"

    response = owner_session.post(
        f"/chat/{chat.pk}/settings/", {"double_texting": "shout", "connection": ""}, headers=HTMX
    )
    assert response.status_code == 400
    assert "Unknown double_texting" in response.content.decode()


# --- sending and stopping -----------------------------------------------------------------------


def test_a_message_sent_starts_its_answer_and_the_input_comes_back_empty(owner_session, chat):
    response = owner_session.post(f"/chat/{chat.pk}/send/", {"text": "Plan a trip"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith(f'<form class="chat-composer" id="chat-composer-{chat.pk}"')
    assert "Plan a trip" not in html
    [entry] = transcript(chat)
    assert (entry.kind, entry.text) == ("user", "Plan a trip")
    assert entry.run.kind == "chat"
    assert AuditEvent.objects.filter(action="conversation.message", interface="web").exists()


def test_without_javascript_a_message_sent_comes_back_to_the_page(owner_session, chat):
    response = owner_session.post(f"/chat/{chat.pk}/send/", {"text": "Plan a trip"})
    assert (response.status_code, response["Location"]) == (302, f"/chat/{chat.pk}/")


@pytest.mark.dialect
def test_under_reject_a_message_sent_mid_answer_is_refused_with_409_and_the_text_kept(
    owner, owner_session, chat
):
    answering(chat, owner)
    chat.double_texting = "reject"
    chat.save()

    response = owner_session.post(
        f"/chat/{chat.pk}/send/", {"text": "And book the hotel"}, headers=HTMX
    )

    html = response.content.decode()
    assert response.status_code == 409
    assert "An answer is still running" in html and 'data-code="CONFLICT"' in html
    assert ">And book the hotel</textarea>" in html
    assert ConversationEntry.objects.filter(conversation=chat).count() == 1

    # Without htmx: the whole page, with the same message and the text kept.
    response = owner_session.post(f"/chat/{chat.pk}/send/", {"text": "And book the hotel"})
    assert response.status_code == 409
    assert ">And book the hotel</textarea>" in response.content.decode()


def test_an_empty_message_is_refused_with_the_reason(owner_session, chat):
    response = owner_session.post(f"/chat/{chat.pk}/send/", {"text": "  "}, headers=HTMX)
    assert response.status_code == 400
    assert "text must be a non-empty string" in response.content.decode()


def test_sending_without_the_csrf_token_is_refused(owner, chat):
    session = Client(enforce_csrf_checks=True)
    session.force_login(owner)

    response = session.post(f"/chat/{chat.pk}/send/", {"text": "Plan a trip"})

    assert response.status_code == 403
    assert not ConversationEntry.objects.filter(conversation=chat).exists()


def test_the_page_carries_the_csrf_token_for_its_forms(owner_session, chat):
    html = page(owner_session, chat)
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


@pytest.mark.dialect
def test_stop_stops_the_running_answer_and_holds_the_message_waiting(owner, owner_session, chat):
    run = answering(chat, owner)
    message_post(conversation=chat, actor=owner, interface="web", text="Then the hotel")
    assert 'class="danger">Stop' in page(owner_session, chat).replace("\n", "")

    response = owner_session.post(f"/chat/{chat.pk}/stop/", headers=HTMX)

    assert response.status_code == 204
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED or run.cancel_requested
    held = ConversationEntry.objects.get(conversation=chat, text="Then the hotel")
    assert held.data["held"] == "stopped before it was answered"


# --- how rows are shown -------------------------------------------------------------------------


def test_a_tool_call_shows_its_arguments_cut_at_80_characters_and_the_whole_call_with_its_result(
    owner, owner_session, chat
):
    run = answering(chat, owner)
    arguments = {"path": "notes/" + "a" * 100 + ".md"}
    add_rows(
        chat,
        [
            ("tool_call", "", {"call_id": "c1", "wire_name": "read_file", "arguments": arguments}),
            (
                "tool_result",
                '{"content": "the notes"}',
                {"call_id": "c1", "wire_name": "read_file", "ok": True},
            ),
        ],
        run=run,
    )

    html = page(owner_session, chat)

    text = json.dumps(arguments)
    [short] = class_blocks(html, "code", "chat-call-short")
    assert unescape(short) == f"read_file({text[:80]}…)"
    [full] = class_blocks(html, "pre", "chat-call-full")
    assert unescape(full) == f"read_file({text})"
    [result] = class_blocks(html, "pre", "chat-result-text")
    assert "the notes" in result
    # The result sits inside its call, not as a row of its own.
    assert 'data-result-for="c1"' not in html


def test_a_short_call_is_shown_whole_without_an_ellipsis(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(
        chat,
        [("tool_call", "", {"call_id": "c1", "wire_name": "echo", "arguments": {"text": "hi"}})],
        run=run,
    )
    [short] = class_blocks(page(owner_session, chat), "code", "chat-call-short")
    assert unescape(short) == 'echo({"text": "hi"})'


def test_reasoning_is_a_collapsible_panel_of_its_own_never_inside_the_answer(
    owner, owner_session, chat
):
    run = answering(chat, owner)
    add_rows(
        chat,
        [
            ("reasoning", "Stored thinking.", {}),
            ("assistant", "<think>Inline thinking.</think>The answer.", {}),
        ],
        run=run,
    )

    html = page(owner_session, chat)

    [answer] = class_blocks(html, "div", "chat-answer")
    assert "The answer." in answer
    assert "thinking" not in answer and "think>" not in answer
    panels = class_blocks(html, "details", "chat-reasoning")
    assert len(panels) == 2
    assert "Stored thinking." in panels[0] and "Inline thinking." in panels[1]


def test_markdown_in_an_answer_is_rendered_and_a_script_in_it_is_not(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(
        chat,
        [("assistant", "**Done.** <script>alert('x')</script> [link](javascript:alert(1))", {})],
        run=run,
    )

    [answer] = class_blocks(page(owner_session, chat), "div", "chat-answer")

    assert "<strong>Done.</strong>" in answer
    assert "<script" not in answer and 'href="javascript' not in answer
    assert "&lt;script&gt;" in answer  # shown as text, never run


def test_a_person_s_text_is_escaped(owner, owner_session, chat):
    answering(chat, owner, text="<img src=x onerror=alert(1)>")
    html = page(owner_session, chat)
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_a_steered_message_says_the_step_it_was_delivered_at(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(
        chat, [("user", "Only trains, please", {})], run=run, mode="steer", delivered_at_turn=1
    )
    [note] = class_blocks(page(owner_session, chat), "p", "chat-note")
    assert note == "delivered at step 2"


def test_a_message_waiting_for_the_running_answer_is_shown_as_queued(owner, owner_session, chat):
    answering(chat, owner)
    message_post(conversation=chat, actor=owner, interface="web", text="Then the hotel")

    html = page(owner_session, chat)

    [waiting] = class_blocks(html, "ol", "chat-waiting")
    assert "Then the hotel" in waiting
    assert "queued: answered when the running answer ends" in waiting


def test_a_message_held_by_stop_says_it_was_not_answered(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(
        chat, [("user", "Then the hotel", {"held": "stopped before it was answered"})], run=None
    )
    Run.objects.filter(pk=run.pk).update(status=RunStatus.CANCELLED)

    html = page(owner_session, chat)

    assert '<p class="chat-note" data-held>stopped before it was answered</p>' in html
    assert "The answer was stopped." in html


def test_an_approval_the_answer_waits_for_is_shown_inline_with_approve_and_deny(
    owner, owner_session, chat
):
    run = answering(chat, owner)
    approval = Approval.objects.create(
        run=run,
        owner=owner,
        tool="send",
        arguments={"to": "ann", "text": "x" * 100},
        input_schema=SendTool.spec.input_schema,
    )

    html = page(owner_session, chat)

    [card] = class_blocks(html, "div", "chat-approvals")
    assert f'hx-post="/approvals/{approval.pk}/decide/"' in card
    assert 'value="approve"' in card and 'value="deny"' in card
    [short, _full] = class_blocks(card, "code", "chat-call-short") + class_blocks(
        card, "pre", "chat-call-full"
    )
    assert unescape(short).endswith("…)") and len(unescape(short)) == len("send(") + 80 + 2


def test_a_condensation_is_a_visible_expandable_marker(owner, owner_session, chat):
    add_rows(
        chat,
        [("condensation", "We planned Lisbon.", {"first_seq": 1, "last_seq": 9, "summary": True})],
    )
    [marker] = class_blocks(page(owner_session, chat), "details", "chat-condensation")
    assert "Earlier conversation condensed (rows 1–9)" in marker
    assert "We planned Lisbon." in marker


def test_a_failed_answer_shows_its_error_after_its_rows_and_the_input_stays(
    owner, owner_session, chat
):
    run = answering(chat, owner)
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED,
        error_code="LLM_UNAVAILABLE",
        error_message="The LLM did not answer",
    )

    html = page(owner_session, chat)

    assert f'id="chat-{chat.pk}-end-{run.pk}"' in html
    assert "The answer failed: The LLM did not answer" in html
    assert 'data-code="LLM_UNAVAILABLE"' in html
    assert html.index("Plan a trip") < html.index("The answer failed")
    assert f'<textarea id="chat-text-{chat.pk}"' in html
    assert answer_running(chat) is None


# --- the rows after a seq, for the live tab -----------------------------------------------------


@pytest.mark.dialect
def test_the_rows_after_a_seq_come_as_html_with_the_answer_running(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(chat, [("assistant", "First *part*.", {})], run=run)

    response = owner_session.get(f"/chat/{chat.pk}/entries?after=1")

    html = response.content.decode()
    assert response.status_code == 200
    assert f'data-last-seq="2" data-running="{run.pk}"' in html
    assert "<em>part</em>" in html
    assert "Plan a trip" not in html  # seq 1 is not after 1


@pytest.mark.dialect
def test_a_result_whose_call_came_earlier_names_its_call(owner, owner_session, chat):
    run = answering(chat, owner)
    add_rows(
        chat, [("tool_call", "", {"call_id": "c9", "wire_name": "echo", "arguments": {}})], run=run
    )
    add_rows(
        chat, [("tool_result", "ok", {"call_id": "c9", "wire_name": "echo", "ok": True})], run=run
    )

    html = owner_session.get(f"/chat/{chat.pk}/entries?after=2").content.decode()

    assert 'data-result-for="c9"' in html


@pytest.mark.dialect
def test_a_bad_after_reads_from_the_start(owner_session, chat, owner):
    answering(chat, owner)
    html = owner_session.get(f"/chat/{chat.pk}/entries?after=-3").content.decode()
    assert "Plan a trip" in html


def test_an_answer_that_ended_is_no_longer_running_in_the_rows_after(owner, owner_session, chat):
    run = answering(chat, owner)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)
    html = owner_session.get(f"/chat/{chat.pk}/entries?after=0").content.decode()
    assert 'data-running=""' in html


@pytest.mark.dialect
def test_the_rows_after_a_seq_include_an_answer_that_failed_meanwhile(owner, owner_session, chat):
    run = answering(chat, owner)
    before = owner_session.get(f"/chat/{chat.pk}/entries?after=1").content.decode()
    assert "chat-end" not in before.split('class="chat-ends"')[1].split("</ol>")[0]
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, error_code="LLM_TIMEOUT", error_message="The LLM took too long"
    )

    html = owner_session.get(f"/chat/{chat.pk}/entries?after=1").content.decode()

    [ends] = class_blocks(html, "ol", "chat-ends")
    assert f'id="chat-{chat.pk}-end-{run.pk}" data-run="{run.pk}" data-failed' in ends
    assert "The answer failed: The LLM took too long" in ends


@pytest.mark.dialect
def test_a_long_transcript_is_read_in_a_fixed_number_of_queries(
    owner, owner_session, chat, django_assert_max_num_queries
):
    run = answering(chat, owner)
    for number in range(30):
        call = {"call_id": f"c{number}", "wire_name": "echo", "arguments": {"n": number}}
        add_rows(
            chat,
            [
                ("reasoning", "thinking", {}),
                ("tool_call", "", call),
                ("tool_result", "ok", {**call, "ok": True}),
                ("assistant", f"answer {number}", {}),
            ],
            run=run,
        )
    # The same whatever the rows: the page's own reads (the agent tabs and their history: two),
    # the header's, the session's.
    with django_assert_max_num_queries(21):
        response = owner_session.get(f"/chat/{chat.pk}/")
    assert response.content.decode().count('class="chat-call"') == 30
    with django_assert_max_num_queries(12):
        owner_session.get(f"/chat/{chat.pk}/entries?after=0")


def test_a_closed_conversation_opened_from_the_history_offers_to_reopen_it(owner_session, chat):
    owner_session.post(f"/chat/{chat.pk}/close/")

    html = page(owner_session, chat)

    assert "This conversation is closed; its history is kept." in html
    assert f"chat-panel-{chat.pk}" in ids(html) and f"chat-tab-{chat.pk}" not in ids(html)
    assert f'action="/chat/{chat.pk}/reopen/"' in html


def test_the_tab_shows_how_much_of_the_model_s_context_the_conversation_uses(
    owner, owner_session, chat
):
    answering(chat, owner)
    usage = context_usage(chat)

    html = page(owner_session, chat)

    [shown] = class_blocks(html, "p", "chat-context")
    assert shown == f"Context: {usage['used']} of {usage['window']} tokens ({usage['percent']}%)"
    assert usage["used"] > 0

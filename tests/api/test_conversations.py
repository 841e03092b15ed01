"""/api/v1/conversations: create, list, read and change a conversation, send messages with a
double-texting mode, read the transcript after a seq, stop. No worker runs here: an answer
started stays queued, so a second message meets a running answer."""

import json

import pytest

from agents_app.models import (
    AuditEvent,
    Conversation,
    ConversationEntry,
    KillSwitch,
    LLMConnection,
    Run,
)
from tests.support.api import assert_error, post_json

URL = "/api/v1/conversations"

pytestmark = pytest.mark.usefixtures("llm_configured")


def create(client, **body):
    response = post_json(client, URL, body)
    assert response.status_code == 201, response.content
    return response.json()


def send(client, conversation_id, text="Hello", **body):
    return post_json(client, f"{URL}/{conversation_id}/messages", {"text": text, **body})


def patch_json(client, path, body):
    return client.patch(path, data=json.dumps(body), content_type="application/json")


def fields(error: dict) -> list[str]:
    return [problem["field"] for problem in error["details"]["errors"]]


def test_a_conversation_is_created_with_its_settings_and_no_transcript(owner, owner_api):
    hosted = LLMConnection.objects.create(name="hosted", base_url="https://h.example/v1", model="m")

    body = create(
        owner_api,
        title="Trip",
        connection="hosted",
        double_texting="steer",
        instructions="Answer in French.",
    )

    conversation = Conversation.objects.get()
    assert conversation.owner == owner
    assert body == {
        "id": conversation.pk,
        "title": "Trip",
        "connection": {"id": hosted.pk, "name": "hosted", "model": "m"},
        "double_texting": "steer",
        "instructions": "Answer in French.",
        "is_open": True,
        "entry_seq": 0,
        "running_answer": None,
        "waiting": [],
        "created_at": body["created_at"],
        "updated_at": body["updated_at"],
    }
    assert AuditEvent.objects.filter(action="conversation.create").count() == 1


def test_a_conversation_created_with_nothing_follows_the_default_connection(owner_api):
    body = create(owner_api)

    assert (body["title"], body["connection"], body["double_texting"]) == ("", None, "enqueue")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"double_texting": "shout"}, "double_texting"),
        ({"title": "x" * 201}, "title"),
        ({"title": 5}, "title"),
        ({"instructions": "a\x00b"}, "instructions"),
        ({"colour": "blue"}, "colour"),
        ({"connection": 0}, "connection"),
    ],
)
def test_a_bad_field_on_create_is_a_400_naming_it_and_creates_nothing(owner_api, body, field):
    error = assert_error(post_json(owner_api, URL, body), 400, "VALIDATION_ERROR")

    assert field in fields(error)[0]
    assert not Conversation.objects.exists()


def test_an_unknown_connection_is_a_400_naming_the_field(owner_api):
    error = assert_error(post_json(owner_api, URL, {"connection": "nope"}), 400, "VALIDATION_ERROR")

    assert error["details"]["field"] == "connection"
    assert not Conversation.objects.exists()


def test_creating_a_conversation_without_an_llm_configured_is_a_503(owner_api, settings):
    settings.LLM_BASE_URL = ""

    error = assert_error(post_json(owner_api, URL, {}), 503, "LLM_NOT_CONFIGURED")

    assert error["details"] == {"missing": ["LLM_BASE_URL"]}
    assert not Conversation.objects.exists()


@pytest.mark.dialect
def test_the_list_is_yours_only_most_recently_active_first_and_paged(
    owner_api, outsider_api, django_assert_max_num_queries
):
    first = create(owner_api, title="first")
    second = create(owner_api, title="second")
    create(outsider_api, title="not yours")
    send(owner_api, first["id"], "bring it up")  # first is now the most recently active

    with django_assert_max_num_queries(8):  # the same for a page of 1 or of 100
        body = owner_api.get(URL).json()
    page_two = owner_api.get(f"{URL}?page=2&page_size=1").json()

    assert body["count"] == 2
    assert [c["title"] for c in body["results"]] == ["first", "second"]
    assert body["results"][0]["running_answer"]["status"] == "queued"
    assert [c["id"] for c in page_two["results"]] == [second["id"]]
    assert (page_two["page"], page_two["page_size"]) == (2, 1)


def test_a_session_reads_the_same_conversations_as_a_key(owner_api, owner_session):
    made = create(owner_api, title="both")

    assert owner_session.get(f"{URL}/{made['id']}").json()["title"] == "both"


def test_without_a_key_or_session_it_is_a_401(anonymous_client):
    assert_error(anonymous_client.get(URL), 401, "UNAUTHORIZED")


@pytest.mark.dialect
def test_the_first_message_is_answered_at_once_and_placed_in_the_transcript(owner_api):
    chat = create(owner_api)

    response = send(owner_api, chat["id"], "What is 2+2?")

    assert response.status_code == 201
    body = response.json()
    run = Run.objects.get()
    assert (run.kind, run.conversation_id, run.status) == ("chat", chat["id"], "queued")
    assert (body["outcome"], body["run_id"]) == ("answered", run.pk)
    assert body["entry"]["seq"] == 1 and body["entry"]["run_id"] == run.pk
    assert (body["entry"]["kind"], body["entry"]["text"]) == ("user", "What is 2+2?")
    assert body["entry"]["mode"] == "enqueue"
    # The conversation takes its title from its first message when it had none.
    assert owner_api.get(f"{URL}/{chat['id']}").json()["title"] == "What is 2+2?"


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("x" * 60, "x" * 60),
        ("Plan   a\nweek in Lisbon", "Plan a week in Lisbon"),
        (
            "Summarise the three longest files in the workspace, then write a report on them",
            "Summarise the three longest files in the workspace, then…",
        ),
        ("y" * 61, "y" * 59 + "…"),
    ],
)
def test_a_title_taken_from_a_long_first_message_ends_with_an_ellipsis(owner_api, text, title):
    chat = create(owner_api)
    send(owner_api, chat["id"], text)

    assert owner_api.get(f"{URL}/{chat['id']}").json()["title"] == title
    assert len(title) <= 60


@pytest.mark.dialect
def test_a_message_sent_while_an_answer_runs_is_queued_and_shown_waiting(owner_api):
    chat = create(owner_api)
    first = send(owner_api, chat["id"], "one").json()

    body = send(owner_api, chat["id"], "two").json()

    assert (body["outcome"], body["run_id"], body["entry"]["seq"]) == ("queued", None, None)
    shown = owner_api.get(f"{URL}/{chat['id']}").json()
    assert shown["running_answer"] == {"run_id": first["run_id"], "status": "queued"}
    assert [e["text"] for e in shown["waiting"]] == ["two"]


@pytest.mark.dialect
def test_a_steered_message_says_so(owner_api):
    chat = create(owner_api)
    send(owner_api, chat["id"], "one")

    body = send(owner_api, chat["id"], "also this", mode="steer").json()

    assert (body["outcome"], body["entry"]["mode"]) == ("steered", "steer")


@pytest.mark.dialect
def test_under_reject_a_message_during_an_answer_is_a_409_and_nothing_is_stored(owner_api):
    chat = create(owner_api, double_texting="reject")
    send(owner_api, chat["id"], "one")

    error = assert_error(send(owner_api, chat["id"], "two"), 409, "CONFLICT")

    assert error["details"]["mode"] == "reject"
    assert list(ConversationEntry.objects.values_list("text", flat=True)) == ["one"]


def test_the_mode_sent_with_a_message_overrides_the_conversations(owner_api):
    chat = create(owner_api)  # enqueue
    send(owner_api, chat["id"], "one")

    assert_error(send(owner_api, chat["id"], "two", mode="reject"), 409, "CONFLICT")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "hi", "mode": "whisper"}, "mode"),
        ({"text": "hi", "urgent": True}, "urgent"),
        ({"mode": "steer"}, "text"),
        ({"text": ["hi"]}, "text"),
    ],
)
def test_a_bad_message_is_a_400_naming_the_field_and_stores_nothing(owner_api, body, field):
    chat = create(owner_api)

    response = post_json(owner_api, f"{URL}/{chat['id']}/messages", body)

    assert fields(assert_error(response, 400, "VALIDATION_ERROR")) == [field]
    assert not ConversationEntry.objects.exists() and not Run.objects.exists()


def test_a_message_while_the_kill_switch_is_engaged_is_a_503(owner_api):
    chat = create(owner_api)
    KillSwitch.objects.update_or_create(pk=1, defaults={"engaged": True, "reason": "drill"})

    assert_error(send(owner_api, chat["id"]), 503, "SERVICE_UNAVAILABLE")
    assert not ConversationEntry.objects.exists()


@pytest.mark.dialect
def test_the_transcript_is_read_after_a_seq_in_pages(owner_api):
    chat = create(owner_api)
    send(owner_api, chat["id"], "one")
    conversation = Conversation.objects.get()
    ConversationEntry.objects.bulk_create(
        ConversationEntry(conversation=conversation, seq=seq, kind="assistant", text=f"a{seq}")
        for seq in (2, 3, 4)
    )

    first = owner_api.get(f"{URL}/{chat['id']}/entries?after=1&limit=2").json()
    rest = owner_api.get(f"{URL}/{chat['id']}/entries?after={first['last_seq']}").json()

    assert [e["seq"] for e in first["entries"]] == [2, 3]
    assert (first["last_seq"], first["has_more"]) == (3, True)
    assert [e["text"] for e in rest["entries"]] == ["a4"]
    assert (rest["last_seq"], rest["has_more"]) == (4, False)
    assert rest["running_answer"]["status"] == "queued" and rest["waiting"] == []


@pytest.mark.dialect
@pytest.mark.parametrize("query", ["after=-1", "after=x", "limit=0", "limit=1001", "after=2**70"])
def test_a_bad_after_or_limit_is_a_400(owner_api, query):
    chat = create(owner_api)

    response = owner_api.get(f"{URL}/{chat['id']}/entries?{query.replace('2**70', str(2**70))}")

    assert_error(response, 400, "VALIDATION_ERROR")


@pytest.mark.dialect
def test_stop_cancels_the_running_answer_and_places_what_waited_unanswered(owner_api):
    chat = create(owner_api)
    first = send(owner_api, chat["id"], "one").json()
    send(owner_api, chat["id"], "two")

    body = post_json(owner_api, f"{URL}/{chat['id']}/stop").json()

    assert body["stopped_run_id"] == first["run_id"]
    assert Run.objects.get(pk=first["run_id"]).status == "cancelled"
    assert body["conversation"]["running_answer"] is None
    assert body["conversation"]["waiting"] == []
    entries = owner_api.get(f"{URL}/{chat['id']}/entries").json()["entries"]
    assert [(e["text"], e["data"].get("held")) for e in entries] == [
        ("one", None),
        ("two", "stopped before it was answered"),
    ]
    assert Run.objects.count() == 1  # nothing answered "two"


@pytest.mark.dialect
def test_stop_with_nothing_running_is_no_error(owner_api):
    chat = create(owner_api)

    body = post_json(owner_api, f"{URL}/{chat['id']}/stop").json()

    assert body["stopped_run_id"] is None


def test_patch_changes_only_the_fields_sent(owner_api):
    chat = create(owner_api, title="Old", instructions="Be brief.")

    response = patch_json(
        owner_api, f"{URL}/{chat['id']}", {"title": "New", "is_open": False, "connection": None}
    )

    body = response.json()
    assert response.status_code == 200
    assert (body["title"], body["is_open"], body["instructions"]) == ("New", False, "Be brief.")
    assert body["double_texting"] == "enqueue"
    change = AuditEvent.objects.get(action="conversation.update")
    assert (change.interface, change.target) == ("api", str(chat["id"]))
    assert change.details == {"fields": ["connection", "is_open", "title"]}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"title": None}, "title"),
        ({"is_open": "no"}, "is_open"),
        ({"double_texting": None}, "double_texting"),
        ({"entry_seq": 9}, "entry_seq"),
    ],
)
def test_a_bad_change_is_a_400_and_changes_nothing(owner_api, body, field):
    chat = create(owner_api, title="Kept")

    error = assert_error(
        patch_json(owner_api, f"{URL}/{chat['id']}", body), 400, "VALIDATION_ERROR"
    )

    assert fields(error) == [field]
    assert Conversation.objects.get().title == "Kept"


@pytest.mark.parametrize(
    "method, suffix, body",
    [
        ("get", "", None),
        ("patch", "", {"title": "mine now"}),
        ("post", "/messages", {"text": "hi"}),
        ("get", "/entries", None),
        ("post", "/stop", None),
    ],
)
def test_another_users_conversation_is_not_found_everywhere(
    owner_api, outsider_api, method, suffix, body
):
    chat = create(owner_api, title="Private")
    send(owner_api, chat["id"], "secret")
    path = f"{URL}/{chat['id']}{suffix}"

    if method == "get":
        response = outsider_api.get(path)
    elif method == "patch":
        response = patch_json(outsider_api, path, body)
    else:
        response = post_json(outsider_api, path, body)

    assert_error(response, 404, "NOT_FOUND")
    assert Conversation.objects.get().title == "Private"
    assert ConversationEntry.objects.count() == 1
    assert Run.objects.get().status == "queued"


@pytest.mark.parametrize("conversation_id", ["abc", "-1", "1.5", str(2**70)])
def test_a_junk_or_missing_id_is_a_404_in_the_envelope(owner_api, conversation_id):
    assert_error(owner_api.get(f"{URL}/{conversation_id}"), 404, "NOT_FOUND")
    assert_error(
        post_json(owner_api, f"{URL}/{conversation_id}/messages", {"text": "hi"}), 404, "NOT_FOUND"
    )

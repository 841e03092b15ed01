"""Long conversations: past CHAT_CONDENSE_AT of the window an answer masks old tool outputs,
then summarises the older turns; pinned parts stay verbatim, a call keeps its result, the rows
stay in the database. Driven in-process with a scripted provider and a small window."""

import copy

import pytest
from django.db import transaction

from agents_app.conversations.condense import chat_context, context_usage, estimate_tokens
from agents_app.conversations.services import conversation_create, message_post
from agents_app.conversations.transcript import SUMMARY_HEADING, chat_messages, place, replay
from agents_app.engine.prompts import chat_system
from agents_app.engine.untrusted import as_data
from agents_app.models import ConversationEntry, LLMConnection, Run, RunEvent
from agents_app.worker.execution import execute_run
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import make_registry
from tests.support.transcripts import RecordingHooks, exchange


def shown(summary: str) -> str:
    """A summary as a chat answer sends it: a model's retelling of tool output, as data."""
    return f"{SUMMARY_HEADING}\n{as_data(summary, 'conversation summary')}"


pytestmark = pytest.mark.django_db(transaction=True)

WINDOW = 1000
OUTPUT = "x" * 1200  # about 300 tokens: a long tool output
SUMMARY = "The person asked for the weather in Oslo and Bergen: DONE (rain, sun)."


@pytest.fixture
def small_window(settings):
    settings.CHAT_CONTEXT_WINDOW = WINDOW
    settings.CHAT_CONDENSE_AT = 0.8
    settings.CHAT_CONDENSE_TO = 0.6
    settings.CHAT_KEEP_TURNS = 2


@pytest.fixture
def chat(owner, llm, small_window):
    return conversation_create(
        owner=owner, interface="api", instructions="Always answer in French."
    )


def summariser(*replies):
    return {"match": "AGENTDESK:CONDENSE", "replies": list(replies)}


def ask(chat, owner, text):
    _, run = message_post(conversation=chat, actor=owner, interface="api", text=text)
    assert run is not None
    return run


def condensations(chat):
    return list(ConversationEntry.objects.filter(conversation=chat, kind="condensation"))


def snapshot(chat):
    return [
        (e.pk, e.seq, e.kind, e.text, copy.deepcopy(e.data))
        for e in ConversationEntry.objects.filter(conversation=chat).exclude(kind="condensation")
    ]


def assert_pairs_whole(messages):
    """Every call has its result right after its assistant message, every result its call."""
    for index, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        following = [m.get("tool_call_id") for m in messages[index + 1 : index + 1 + len(calls)]]
        assert following == calls, f"message {index}: calls {calls}, then {following}"
        if message["role"] == "tool":
            before = messages[index - 1]
            assert before["role"] in ("assistant", "tool"), f"result {index} without its call"


def test_a_short_conversation_is_sent_as_it_is(owner, chat):
    exchange(chat, "hello", answer="bonjour")
    run = ask(chat, owner, "how are you?")
    provider = ScriptedProvider([])
    assert chat_context(run, provider, RecordingHooks()) == chat_messages(run)
    assert provider.requests == [] and condensations(chat) == []


def test_past_the_threshold_old_tool_outputs_are_masked_first_without_a_model_call(
    owner, chat, settings
):
    settings.CHAT_KEEP_TURNS = 1
    old = [
        exchange(
            chat, f"weather {city}?", calls=(("weather", {"city": city}, OUTPUT),), answer="ok"
        )
        for city in ("Oslo", "Bergen", "Tromso", "Bodo")
    ]
    run = ask(chat, owner, "and Alta?")
    before = chat_messages(run)
    assert estimate_tokens(before) > 0.8 * WINDOW
    provider = ScriptedProvider([])

    messages = chat_context(run, provider, RecordingHooks())

    assert provider.requests == []  # masking alone was enough
    (mark,) = condensations(chat)
    oldest_results = [rows[2].seq for rows in old]
    # Oldest first, and only as many as needed to get under CHAT_CONDENSE_TO.
    assert mark.data["masked"] == oldest_results[:3]
    assert (mark.data["first_seq"], mark.data["last_seq"]) == (oldest_results[0], oldest_results[2])
    assert mark.text.startswith("Masked 3 old tool outputs (3600 characters)")
    assert estimate_tokens(messages) <= 0.6 * WINDOW
    results = [m["content"] for m in messages if m["role"] == "tool"]
    note = "[output of weather masked: 1200 chars; see the transcript]"
    assert results == [note, note, note, OUTPUT]
    assert_pairs_whole(messages)


def test_when_masking_is_not_enough_the_older_turns_are_summarised_by_the_model(owner, chat):
    for city in ("Oslo", "Bergen"):
        exchange(chat, f"weather {city}? " + "please " * 150, answer="Il pleut. " * 40)
    exchange(chat, "weather Tromso?", calls=(("weather", {"city": "Tromso"}, "snow"),), answer="ok")
    run = ask(chat, owner, "and Alta?")
    before = chat_messages(run)
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    messages = chat_context(run, provider, RecordingHooks())

    (request,) = provider.requests
    asked = request.messages[1]["content"]
    assert "Person: weather Oslo?" in asked and "Assistant: Il pleut." in asked
    assert "DONE" in request.messages[0]["content"]  # done requests are recorded as done
    (mark,) = condensations(chat)
    assert (mark.text, mark.data["summary"]) == (SUMMARY, True)
    tromso = ConversationEntry.objects.get(conversation=chat, text="weather Tromso?")
    assert (mark.data["first_seq"], mark.data["last_seq"]) == (1, tromso.seq - 1)
    # The system message, the summary where the older turns were, the recent turns verbatim.
    assert messages[0] == before[0]
    assert messages[1] == {"role": "user", "content": shown(SUMMARY)}
    recent = next(i for i, m in enumerate(before) if m.get("content") == "weather Tromso?")
    assert messages[2:] == before[recent:]
    assert estimate_tokens(messages) <= 0.8 * WINDOW
    assert_pairs_whole(messages)


def test_masking_then_summary_keep_every_call_with_its_result(owner, chat):
    for n in range(5):
        exchange(
            chat,
            f"job {n} " + "detail " * 60,
            calls=(("fetch", {"n": n}, OUTPUT), ("store", {"n": n}, "stored")),
            answer=f"job {n} done",
        )
    run = ask(chat, owner, "next job")
    before = chat_messages(run)
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    messages = chat_context(run, provider, RecordingHooks())

    masked, summary = condensations(chat)
    assert masked.data["masked"] and (summary.text, summary.data["summary"]) == (SUMMARY, True)
    assert len(provider.requests) == 1
    # The summariser reads the older turns as masked.
    asked = provider.requests[0].messages[1]["content"]
    assert asked.count("[output of fetch masked: 1200 chars") == len(masked.data["masked"])
    assert_pairs_whole(messages)
    assert_pairs_whole(provider.requests[0].messages)
    call_ids = [c["id"] for m in messages for c in m.get("tool_calls") or ()]
    result_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert call_ids == result_ids and call_ids  # the kept turn still has its calls
    # The recent turns (the last exchange, its long output too) are sent verbatim.
    recent = next(i for i, m in enumerate(before) if (m["content"] or "").startswith("job 4 "))
    assert messages[2:] == before[recent:]
    assert OUTPUT in [m["content"] for m in messages]


def test_a_later_summary_takes_in_the_earlier_one_and_replaces_it(owner, chat, settings):
    for n in range(3):
        exchange(chat, f"q{n} " + "word " * 150, answer=f"a{n}")
    first_run = ask(chat, owner, "q3 " + "word " * 150)
    provider = ScriptedProvider(
        [summariser({"content": "S1: q0 and q1 DONE."}, {"content": "S2: q0 to q3 DONE."})]
    )
    chat_context(first_run, provider, RecordingHooks())
    Run.objects.filter(pk=first_run.pk).update(status="succeeded")  # answered meanwhile
    for n in range(4, 6):
        exchange(chat, f"q{n} " + "word " * 150, answer=f"a{n}")
    run = ask(chat, owner, "last")

    messages = chat_context(run, provider, RecordingHooks())

    assert (
        "Summary of what came before:\nS1: q0 and q1 DONE."
        in (provider.requests[1].messages[1]["content"])
    )
    first, second = condensations(chat)
    assert (first.data["first_seq"], second.data["first_seq"]) == (1, 1)
    assert second.data["last_seq"] > first.data["last_seq"]
    summaries = [m["content"] for m in messages if m["content"].startswith(SUMMARY_HEADING)]
    assert summaries == [shown("S2: q0 to q3 DONE.")]
    assert messages[1]["content"] == summaries[0]


def test_the_summary_request_fits_the_window_however_long_the_older_turns(owner, chat):
    for n in range(40):
        exchange(chat, f"q{n} " + "word " * 60, answer=f"a{n} " + "reply " * 60)
    run = ask(chat, owner, "last")
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    chat_context(run, provider, RecordingHooks())

    (request,) = provider.requests
    assert estimate_tokens(request.messages) + request.max_tokens <= WINDOW
    asked = request.messages[1]["content"]
    assert "the oldest part is left out" in asked and "Person: q37 " in asked
    assert "Person: q0 " not in asked


def test_the_summary_never_ends_between_a_call_and_its_result(owner, chat):
    exchange(chat, "first " + "long " * 200, answer="one " * 200)
    exchange(chat, "second " + "long " * 200, answer="two " * 100)
    # A message of the person placed between a call and its result (a steer delivered while
    # the call ran): the recent turns would begin there, which would split the pair.
    call_data = {"call_id": "slow_1", "wire_name": "slow", "arguments": {}}
    with transaction.atomic():
        place(
            [
                ConversationEntry(conversation=chat, kind="user", text="third"),
                ConversationEntry(conversation=chat, kind="tool_call", turn=0, data=call_data),
                ConversationEntry(conversation=chat, kind="user", text="steered in"),
                ConversationEntry(
                    conversation=chat,
                    kind="tool_result",
                    text="late result",
                    data={"call_id": "slow_1", "wire_name": "slow"},
                ),
            ],
            chat.pk,
        )
    call = ConversationEntry.objects.get(conversation=chat, kind="tool_call")
    run = ask(chat, owner, "fourth")
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    messages = chat_context(run, provider, RecordingHooks())

    (mark,) = condensations(chat)
    assert mark.data["last_seq"] < call.seq  # the cut moved before the call
    assert {"role": "tool", "tool_call_id": call.data["call_id"], "content": "late result"} in (
        messages
    )
    assert any(c["id"] == call.data["call_id"] for m in messages for c in m.get("tool_calls", ()))


def test_call_ids_reused_across_answers_do_not_hold_the_summary_back(owner, chat):
    for n in range(4):
        exchange(
            chat,
            f"q{n} " + "word " * 150,
            calls=(("t", {"n": n}, "short"),),
            answer=f"a{n}",
            reuse_ids=True,
        )
    run = ask(chat, owner, "last")
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    messages = chat_context(run, provider, RecordingHooks())

    (mark,) = condensations(chat)
    q3 = ConversationEntry.objects.get(conversation=chat, text__startswith="q3 ")
    assert mark.data["last_seq"] == q3.seq - 1
    assert_pairs_whole(messages)


def test_the_system_prompt_and_standing_instructions_are_sent_verbatim(owner, chat):
    for n in range(4):
        exchange(chat, f"q{n} " + "word " * 150, answer="a " * 150)
    run = ask(chat, owner, "last")
    provider = ScriptedProvider([summariser({"content": SUMMARY})])

    messages = chat_context(run, provider, RecordingHooks())

    assert condensations(chat)
    assert messages[0] == chat_system("Always answer in French.")
    assert "Always answer in French." in messages[0]["content"]
    assert [m["content"] for m in messages if m["role"] == "user"][-2:] == [
        "q3 " + "word " * 150,
        "last",
    ]


def test_condensing_leaves_the_original_rows_unchanged_in_the_database(owner, chat):
    for n in range(4):
        exchange(chat, f"q{n} " + "word " * 100, calls=(("t", {}, OUTPUT),), answer=f"a{n}")
    run = ask(chat, owner, "last")
    before = snapshot(chat)

    chat_context(run, ScriptedProvider([summariser({"content": SUMMARY})]), RecordingHooks())

    assert snapshot(chat) == before
    assert condensations(chat)


def test_a_second_call_with_nothing_new_reuses_the_condensation(owner, chat):
    for n in range(4):
        exchange(chat, f"q{n} " + "word " * 100, calls=(("t", {}, OUTPUT),), answer=f"a{n}")
    run = ask(chat, owner, "last")
    provider = ScriptedProvider([summariser({"content": SUMMARY})])
    hooks = RecordingHooks()
    first = chat_context(run, provider, hooks)
    rows = condensations(chat)

    # As after a crash and a resume of the same answer.
    again = chat_context(run, provider, hooks)

    assert again == first
    assert condensations(chat) == rows
    assert len(provider.requests) == len(hooks.usage) == 1


def test_recent_turns_that_alone_pass_the_threshold_are_summarised_around_only_once(owner, chat):
    for n in range(3):
        exchange(chat, f"q{n} " + "word " * 100, calls=(("t", {}, OUTPUT),), answer=f"a{n}")
    run = ask(chat, owner, "huge " * 800)  # the recent turns alone are past the window
    provider = ScriptedProvider([{**summariser({"content": SUMMARY}), "repeat": True}])
    first = chat_context(run, provider, RecordingHooks())

    again = chat_context(run, provider, RecordingHooks())

    assert again == first and first[-1] == {"role": "user", "content": "huge " * 800}
    assert len(provider.requests) == 1
    assert [bool(c.data.get("summary")) for c in condensations(chat)] == [False, True]


def test_a_failed_summary_call_leaves_the_answer_with_the_transcript_as_masked(owner, chat):
    for n in range(3):
        exchange(chat, f"q{n} " + "word " * 200, answer="a " * 100)
    run = ask(chat, owner, "last")
    provider = ScriptedProvider([summariser({"raise": "CONNECTION_REFUSED"})])

    messages = chat_context(run, provider, RecordingHooks())

    assert messages == chat_messages(run)
    assert condensations(chat) == []


def _entry(seq, kind, text="", **data):
    return ConversationEntry(seq=seq, kind=kind, text=text, data=data)


def _rows():
    return [
        _entry(1, "user", "one"),
        _entry(2, "tool_call", call_id="c1", wire_name="t", arguments={}),
        _entry(3, "tool_result", "out", call_id="c1", wire_name="t"),
        _entry(4, "assistant", "answer one"),
        _entry(5, "user", "two"),
        _entry(6, "assistant", "answer two"),
        _entry(7, "user", "three"),
    ]


@pytest.mark.parametrize("seq", [8, 50, 0])
def test_replay_puts_a_summary_where_its_rows_were_whatever_its_own_seq(seq):
    summary = _entry(seq, "condensation", "S", first_seq=1, last_seq=4, summary=True)
    rows = sorted([*_rows(), summary], key=lambda e: e.seq)

    assert replay(rows) == [
        {"role": "user", "content": shown("S")},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "answer two"},
        {"role": "user", "content": "three"},
    ]


def test_replay_masks_a_tool_output_but_keeps_its_call_and_a_note():
    mask = _entry(9, "condensation", "note", first_seq=3, last_seq=3, masked=[3])

    messages = replay([*_rows(), mask])

    assert messages[1]["tool_calls"][0]["id"] == "c1"
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "[output of t masked: 3 chars; see the transcript]",
    }


def test_a_later_summary_that_holds_an_earlier_one_replaces_it():
    first = _entry(8, "condensation", "S1", first_seq=1, last_seq=4, summary=True)
    second = _entry(9, "condensation", "S2", first_seq=1, last_seq=6, summary=True)

    messages = replay([*_rows(), first, second])

    assert messages == [
        {"role": "user", "content": shown("S2")},
        {"role": "user", "content": "three"},
    ]


def test_context_usage_estimates_the_next_request_against_the_connection_window(owner, llm):
    LLMConnection.objects.create(
        name="small", base_url=llm.base_url, model="scripted", context_window=2000
    )
    chat = conversation_create(owner=owner, interface="api", connection="small")
    exchange(chat, "hello " * 100, answer="bonjour")

    usage = context_usage(chat)

    expected = estimate_tokens([chat_system(""), *replay(list(chat.entries.order_by("seq")))])
    assert usage == {
        "used": expected,
        "window": 2000,
        "percent": round(100 * expected / 2000, 1),
    }
    assert usage["used"] > 150


def test_context_usage_falls_back_to_the_setting_without_a_connection_window(owner, chat):
    assert context_usage(chat)["window"] == WINDOW


def test_a_long_conversation_answer_sends_the_condensed_transcript_and_counts_the_summary(
    owner, llm, small_window, settings
):
    # The window is the answer's connection's; the setting is only for a connection without.
    settings.CHAT_CONTEXT_WINDOW = 100_000
    LLMConnection.objects.create(
        name="small", base_url=llm.base_url, model="scripted", context_window=WINDOW
    )
    chat = conversation_create(owner=owner, interface="api", connection="small")
    for n in range(4):
        exchange(chat, f"q{n} " + "word " * 150, calls=(("t", {}, OUTPUT),), answer=f"a{n}")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="last question")
    summary_usage = {"prompt_tokens": 400, "completion_tokens": 40}
    provider = ScriptedProvider(
        [
            summariser({"content": SUMMARY, "usage": summary_usage}),
            {"match": "AGENTDESK:CHAT", "replies": [{"content": "Réponse."}]},
        ]
    )

    execute_run(run.pk, provider=provider, registry=make_registry())

    run.refresh_from_db()
    assert (run.status, run.final_response) == ("succeeded", "Réponse.")
    summary_request, answer_request = provider.requests
    assert "AGENTDESK:CONDENSE" in summary_request.messages[0]["content"]
    sent = answer_request.messages
    assert sent[1]["content"] == shown(SUMMARY)
    assert sent[-1] == {"role": "user", "content": "last question"}
    assert estimate_tokens(sent) <= 0.8 * WINDOW
    usage = [e.payload for e in RunEvent.objects.filter(run=run, type="llm_usage").order_by("id")]
    assert [u["prompt_tokens"] for u in usage] == [400, 11]
    assert (run.prompt_tokens, run.completion_tokens) == (411, 47)
    assert [e.kind for e in chat.entries.order_by("seq")][-3:] == [
        "condensation",
        "condensation",
        "assistant",
    ]

"""Long conversations (seed 004): what a chat answer sends the model when the transcript grows
past its connection's context window.

The context is estimated (`estimate_tokens`). Past CHAT_CONDENSE_AT of the window, an answer
first masks old tool outputs, oldest first, until the estimate is under CHAT_CONDENSE_TO (the
call and its result row stay, the result shown as a one-line note); if it is still past
CHAT_CONDENSE_AT, one model call summarises everything before the last CHAT_KEEP_TURNS
messages of the person. Each step writes one CONDENSATION row (transcript.replay applies it);
the original rows are never changed. The system message with the person's standing
instructions and the recent turns are always sent verbatim, and a summary's range never ends
between a call and its result (peers get this wrong: langchain #34282). The summary records
which requests were already answered, and replay tells the model not to do them again
(OpenHands #11910).

Condensing leaves the estimate under CHAT_CONDENSE_TO where it can, so the next answers do not
condense again at once; an answer that finds nothing new to condense (a resume after a crash,
or only recent turns left) writes nothing and calls no model.
"""

import contextlib
import json
import logging
import math
from typing import Any

from django.conf import settings
from django.db import transaction

from agents_app.conversations.transcript import (
    SUMMARY_HEADING,
    chat_messages,
    condensed,
    masked_note,
    place,
    replay,
)
from agents_app.engine.calls import ask_model
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMError, LLMProvider, LLMRequest
from agents_app.engine.prompts import chat_system
from agents_app.engine.untrusted import DATA_RULE, as_data, data_of
from agents_app.models import (
    Conversation,
    ConversationEntry,
    EntryKind,
    LLMConnection,
    Run,
)

log = logging.getLogger(__name__)

# The estimate: about 4 characters a token (English prose with GPT-style BPE tokenizers; code
# and non-Latin scripts take more tokens, which the headroom above CHAT_CONDENSE_AT absorbs),
# plus what each message's role and separators cost, plus the priming of the reply. No
# tokenizer is a dependency, and the models behind the connections use different ones anyway.
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
REPLY_PRIMING = 3
# What the summariser sees of one message (a long tool output says little more past it).
RENDER_CHARS = (2000, 500, 150)

CONDENSE_PROMPT = (
    "AGENTDESK:CONDENSE\n"
    "You condense the earlier part of a conversation between a person and an assistant that "
    "uses tools, so the assistant can go on without it. Write a concise summary in the "
    "conversation's language with:\n"
    "- the person's goals, preferences and constraints;\n"
    "- the facts, names, numbers, file paths and decisions worth keeping;\n"
    "- each request the person made, marked DONE (with what came of it) when the assistant "
    "already answered or carried it out, or OPEN when it is still to do.\n"
    "Requests marked DONE must not be done again. Invent nothing. Answer with the summary only. "
    + DATA_RULE
)


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A cheap estimate of the tokens `messages` take (see CHARS_PER_TOKEN)."""
    total = REPLY_PRIMING
    for message in messages:
        chars = len(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function", {})
            chars += len(call.get("id", "")) + len(function.get("name", ""))
            chars += len(function.get("arguments", ""))
        total += MESSAGE_OVERHEAD + math.ceil(chars / CHARS_PER_TOKEN)
    return total


def context_window(connection: LLMConnection | None) -> int:
    """The tokens the connection's model reads at once (None: the default connection's), or
    CHAT_CONTEXT_WINDOW when the connection does not say."""
    if connection is None:
        connection = LLMConnection.objects.filter(is_default=True, enabled=True).first()
    if connection is not None and connection.context_window:
        return connection.context_window
    return settings.CHAT_CONTEXT_WINDOW


def context_usage(conversation: Conversation) -> dict[str, Any]:
    """What the next answer of `conversation` would send, as condensed so far: {"used":
    estimated tokens, "window": the connection's context window, "percent": used / window in
    percent, one decimal}. The caller has checked that the person may see the conversation."""
    rows = _rows(conversation)
    used = estimate_tokens([chat_system(conversation.instructions), *replay(rows)])
    window = context_window(conversation.connection)
    return {"used": used, "window": window, "percent": round(100 * used / window, 1)}


def chat_context(run: Run, provider: LLMProvider, hooks: EngineHooks) -> list[dict[str, Any]]:
    """The messages for the answer `run`: the system message and standing instructions, then
    the transcript, condensed first when the estimate is past CHAT_CONDENSE_AT of the window.
    The summary call goes through ask_model with the answer's provider and hooks, so it counts
    against the answer's budget (which may raise BUDGET_EXCEEDED) and Stop cuts it short; if
    the model fails, the answer goes on with the transcript as masked."""
    messages = chat_messages(run)
    window = context_window(_connection(run))
    limit = window * settings.CHAT_CONDENSE_AT
    if estimate_tokens(messages) <= limit:
        return messages
    target = window * min(settings.CHAT_CONDENSE_TO, settings.CHAT_CONDENSE_AT)
    conversation = Conversation.objects.get(pk=run.conversation_id)
    rows = _rows(conversation)
    keep_from = _recent_start(rows)
    if _mask(run, rows, messages, keep_from=keep_from, target=target, hooks=hooks):
        messages = chat_messages(run)
        if estimate_tokens(messages) <= limit:
            return messages
        rows = _rows(conversation)
    if _summarise(run, rows, keep_from=keep_from, window=window, provider=provider, hooks=hooks):
        messages = chat_messages(run)
    return messages


def _connection(run: Run) -> LLMConnection | None:
    run = Run.objects.select_related("connection", "conversation__connection").get(pk=run.pk)
    if run.connection is not None:
        return run.connection
    return run.conversation.connection if run.conversation is not None else None


def _rows(conversation: Conversation) -> list[ConversationEntry]:
    return list(
        ConversationEntry.objects.filter(conversation=conversation, seq__isnull=False).order_by(
            "seq"
        )
    )


def _recent_start(rows: list[ConversationEntry]) -> int | None:
    """The seq where the recent turns begin (kept verbatim): the CHAT_KEEP_TURNS-th last
    message of the person in view, moved earlier while a call before it has its result after
    it. None: nothing before the recent turns may be condensed."""
    view = condensed(rows)
    shown = [r for r in rows if not view.hidden(r.seq) and r.kind != EntryKind.CONDENSATION]
    starts = [i for i, r in enumerate(shown) if r.kind == EntryKind.USER]
    keep = settings.CHAT_KEEP_TURNS
    if len(starts) <= keep:
        return None
    whole = _whole_cuts(shown)
    for index in reversed(starts[: len(starts) - keep + 1]):
        if index > 0 and whole[index]:
            return shown[index].seq
    return None


def _whole_cuts(rows: list[ConversationEntry]) -> list[bool]:
    """For each index, whether cutting the rows before it leaves no call apart from its result.
    A result answers the earliest open call with its id (some servers reuse ids); a call that
    no result answers holds nothing back."""
    answered_at: dict[int, int] = {}  # a call's index -> its result's
    open_calls: list[tuple[str, int]] = []
    for index, row in enumerate(rows):
        call_id = row.data.get("call_id")
        if row.kind == EntryKind.TOOL_CALL:
            open_calls.append((call_id, index))
        elif row.kind == EntryKind.TOOL_RESULT:
            match = next((c for c in open_calls if c[0] == call_id), None)
            if match is not None:
                open_calls.remove(match)
                answered_at[match[1]] = index
    whole = [True] * len(rows)
    for call, result in answered_at.items():
        for index in range(call + 1, result + 1):
            whole[index] = False
    return whole


def _mask(
    run: Run,
    rows: list[ConversationEntry],
    messages: list[dict[str, Any]],
    *,
    keep_from: int | None,
    target: float,
    hooks: EngineHooks,
) -> bool:
    """Mask old tool outputs, oldest first, until the estimate is under `target`; one
    CONDENSATION row names them. Returns whether any was masked."""
    if keep_from is None:
        return False
    view = condensed(rows)
    estimate = estimate_tokens(messages)
    chosen: list[ConversationEntry] = []
    for row in rows:
        if estimate <= target or row.seq >= keep_from:
            break
        if row.kind != EntryKind.TOOL_RESULT or row.seq in view.masked or view.hidden(row.seq):
            continue
        note = masked_note(row.data.get("wire_name", ""), len(row.text))
        saved = math.ceil(len(row.text) / CHARS_PER_TOKEN) - math.ceil(len(note) / CHARS_PER_TOKEN)
        if saved > 0:
            chosen.append(row)
            estimate -= saved
    if not chosen:
        return False
    chars = sum(len(r.text) for r in chosen)
    plural = "s" if len(chosen) > 1 else ""
    _write(
        run,
        hooks,
        text=f"Masked {len(chosen)} old tool output{plural} ({chars} characters) to fit the "
        "model's context window; the full outputs stay in the transcript.",
        data={
            "first_seq": chosen[0].seq,
            "last_seq": chosen[-1].seq,
            "masked": [r.seq for r in chosen],
            "chars": chars,
        },
    )
    return True


def _summarise(
    run: Run,
    rows: list[ConversationEntry],
    *,
    keep_from: int | None,
    window: int,
    provider: LLMProvider,
    hooks: EngineHooks,
) -> bool:
    """Summarise everything before `keep_from` (an earlier summary included) with one model
    call into one CONDENSATION row. Returns whether a summary was written. `keep_from` is
    None once the rows before the recent turns are summarised: nothing is asked twice."""
    if keep_from is None:
        return False
    # The rows before the recent turns, as condensed so far (condensations sit at the end).
    older = [r for r in rows if r.seq < keep_from or r.kind == EntryKind.CONDENSATION]
    max_tokens = max(128, min(settings.LLM_MAX_TOKENS_STEP, window // 8))
    room = window - max_tokens - estimate_tokens([{"content": CONDENSE_PROMPT}]) - 64
    text = _render(replay(older), room)
    request = LLMRequest(
        messages=[
            {"role": "system", "content": CONDENSE_PROMPT},
            # What the tools returned is in it: the conversation is data to summarise.
            {
                "role": "user",
                "content": "The conversation so far:\n\n" + as_data(text, "conversation"),
            },
        ],
        timeout=settings.AGENT_STEP_TIMEOUT,
        max_tokens=max_tokens,
        interrupt=hooks.poll,
    )
    try:
        response = ask_model(provider, hooks, request, phase=StreamPhase.CONDENSATION)
    except LLMError as exc:
        log.warning("Run %s: the summary of its conversation failed: %s", run.pk, exc)
        return False
    summary = response.content.strip()
    if not summary:
        return False
    # The text is the summary, what a person expands the marker to read (the page says what
    # it is); data.summary marks it as one.
    _write(
        run,
        hooks,
        text=summary,
        data={"first_seq": rows[0].seq, "last_seq": keep_from - 1, "summary": True},
    )
    return True


def _render(messages: list[dict[str, Any]], room: int) -> str:
    """The messages as plain text for the summariser, each cut shorter until all fit `room`
    tokens; at the shortest, the oldest lines go first."""
    for cut in RENDER_CHARS:
        lines = [_line(m, cut) for m in messages]
        text = "\n\n".join(lines)
        if math.ceil(len(text) / CHARS_PER_TOKEN) <= room:
            return text
    keep = max(room, 0) * CHARS_PER_TOKEN
    return "[…the oldest part is left out…]\n" + text[max(len(text) - keep, 0) :]


def _line(message: dict[str, Any], cut: int) -> str:
    def short(text: str) -> str:
        return text if len(text) <= cut else text[:cut] + "…"

    role, content = message["role"], message.get("content") or ""
    if role == "user" and content.startswith(SUMMARY_HEADING):
        said = data_of(content[len(SUMMARY_HEADING) :].strip())
        return "Summary of what came before:\n" + said
    if role == "user":
        return f"Person: {short(content)}"
    if role == "tool":
        return f"Tool result ({message.get('tool_call_id', '')}): {short(content)}"
    parts = [f"Assistant: {short(content)}"] if content else []
    for call in message.get("tool_calls") or ():
        function = call["function"]
        arguments = function.get("arguments", "")
        with contextlib.suppress(ValueError):  # the model's raw text, when not JSON
            arguments = json.dumps(json.loads(arguments), ensure_ascii=False)
        parts.append(f"Assistant called {function['name']} ({call['id']}): {short(arguments)}")
    return "\n".join(parts)


def _write(run: Run, hooks: EngineHooks, *, text: str, data: dict[str, Any]) -> None:
    """Place one CONDENSATION row, unless the answer was stopped or its lease lost."""
    hooks.checkpoint()
    with transaction.atomic():
        place(
            [
                ConversationEntry(
                    conversation_id=run.conversation_id,
                    kind=EntryKind.CONDENSATION,
                    text=text,
                    data=data,
                    run=run,
                )
            ],
            run.conversation_id,
        )

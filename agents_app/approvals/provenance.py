"""Where a call's arguments came from (issue 35): the untrusted text a run has seen and the
text people wrote, for engine.taint to compare a sink call's arguments with.

Untrusted: every tool call's result in the run's tree (its root and every descendant: a
child's or micro agent's tools, and their results returned to their parent), the results the
tree's finished runs gave (a child's answer), and a conversation's earlier tool results (the
next chat answer is another run over the same transcript). Trusted: the root task's text and
context, the person's messages and standing instructions, a contract agent's contract.
"""

from collections.abc import Iterable
from typing import Any

from django.db.models import Q

from agents_app.engine.taint import Source, Taint, file_taints, tainted_arguments
from agents_app.models import (
    ConversationEntry,
    EntryKind,
    Run,
    ToolCall,
    ToolCallStatus,
)
from agents_app.models.conversations import Conversation

# Text of one result looked at, at most (a result's start carries an injection as well).
RESULT_MAX = 200_000


def call_taints(
    run: Run,
    arguments: dict[str, Any],
    *,
    pending: Iterable[tuple[int, Any]] = (),
    extra: Iterable[Source] = (),
    own_paths: Iterable[str] = (),
) -> list[Taint]:
    """The arguments of a call `run` is about to make that carry untrusted text, each with
    where it came from. `pending`: (call id, result) pairs heard but not committed yet;
    `extra`: other untrusted text the run was shown (the MCP tools' descriptions)."""
    sources = untrusted_sources(run, pending=pending) + [s for s in extra if s.text]
    if not sources:
        return []
    people, own = trusted_text(run), tuple(own_paths)
    found = tainted_arguments(arguments, sources, people, own)
    named = {taint.argument for taint in found}
    for taint in file_taints(arguments, tainted_files(run, sources, people, own), own):
        if taint.argument not in named:
            found.append(taint)
    return found


def tainted_files(
    run: Run, sources: list[Source], people: str, own_paths: tuple[str, ...]
) -> dict[str, Source]:
    """The files the run's tree wrote (write_file) with content that carries untrusted text:
    path -> where that text came from, labelled with the write."""
    tree = run.root_id or run.pk
    files: dict[str, Source] = {}
    writes = (
        ToolCall.objects.filter(Q(run_id=tree) | Q(run__root_id=tree), tool="write_file")
        .exclude(status=ToolCallStatus.FAILED)
        .order_by("pk")
        .values_list("pk", "run_id", "arguments")
    )
    for pk, run_id, arguments in writes:
        if not isinstance(arguments, dict) or not isinstance(arguments.get("path"), str):
            continue
        older = [s for s in sources if s.tool_call_id is None or s.tool_call_id < pk]
        carried = tainted_arguments({"content": arguments.get("content")}, older, people, own_paths)
        path = arguments["path"]
        if carried:
            files[path] = Source(
                carried[0].source.text,
                f"write_file call {pk} (its content came from {carried[0].source.label})",
                tool_call_id=pk,
                run_id=run_id,
            )
        else:
            files.pop(path, None)  # written again from clean text
    return files


def untrusted_sources(run: Run, *, pending: Iterable[tuple[int, Any]] = ()) -> list[Source]:
    """Every untrusted text of the run's tree and conversation, newest first."""
    tree = run.root_id or run.pk
    in_tree = Q(run_id=tree) | Q(run__root_id=tree)
    stored = [
        Source(_text(result), f"{tool} call {pk}", tool_call_id=pk, run_id=run_id)
        for pk, run_id, tool, result in ToolCall.objects.filter(in_tree)
        .exclude(result=None)
        .order_by("-pk")
        .values_list("pk", "run_id", "tool", "result")
    ]
    seen = {s.tool_call_id for s in stored}
    heard = [(call_id, result) for call_id, result in pending if call_id not in seen]
    sources: list[Source] = []
    if heard:  # results not committed yet: their calls' rows are
        tools = dict(
            ToolCall.objects.filter(pk__in=[c for c, _ in heard]).values_list("pk", "tool")
        )
        for call_id, result in reversed(heard):
            if result is not None:
                label = f"{tools.get(call_id, 'a tool')} call {call_id}"
                sources.append(Source(_text(result), label, call_id, run.pk))
    sources += stored
    for pk, answer in (
        Run.objects.filter(root_id=tree)
        .exclude(final_response="")
        .order_by("-pk")
        .values_list("pk", "final_response")
    ):
        sources.append(Source(answer[:RESULT_MAX], f"child run {pk}'s result", run_id=pk))
    if run.conversation_id:
        for call, text, answer_run in (
            ConversationEntry.objects.filter(
                conversation_id=run.conversation_id, kind=EntryKind.TOOL_RESULT
            )
            .exclude(run_id=run.pk)
            .order_by("-pk")
            .values_list("data__call_id", "text", "run_id")
        ):
            sources.append(
                Source(text[:RESULT_MAX], f"an earlier answer's {call} result", run_id=answer_run)
            )
    return [s for s in sources if s.text]


def trusted_text(run: Run) -> str:
    """What people wrote for this run: the words its arguments may repeat freely."""
    root = Run.objects.select_related("task").get(pk=run.root_id) if run.root_id else run
    parts = [root.task.text, _text(root.task.context)]
    if run.conversation_id:
        conversation = Conversation.objects.select_related("agent").get(pk=run.conversation_id)
        parts.append(conversation.instructions)
        if conversation.agent is not None:
            parts.append(conversation.agent.contract)
        parts.extend(
            ConversationEntry.objects.filter(
                conversation_id=run.conversation_id, kind=EntryKind.USER
            ).values_list("text", flat=True)
        )
    return "\n".join(p for p in parts if p)


def _text(value: Any) -> str:
    """The strings of a stored result, one per line (a JSON result's keys and values)."""
    out: list[str] = []
    _strings(value, out, 0)
    return "\n".join(out)[:RESULT_MAX]


def _strings(value: Any, out: list[str], depth: int) -> None:
    if depth > 8:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            out.append(str(key))
            _strings(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, depth + 1)
    elif value is not None:
        out.append(str(value))

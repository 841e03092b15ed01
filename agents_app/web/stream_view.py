"""What the run page's "Streaming answer" panel shows, in words: while the planner writes its
JSON the plan's steps as they form, while the verifier writes its verdict that verdict in
sentences, a plain answer as text; never the JSON itself. Once the run has ended, its final
answer. `live_stream.LiveStream` feeds it the streamed text; `fragments` the rows."""

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from agents_app.engine.hooks import StreamPhase
from agents_app.models import Run, RunEvent, Step
from agents_app.web.partial_json import NotJSON, parse_partial
from agents_app.web.run_page import split_think

# Phases whose answer is a JSON document, never shown as such.
STRUCTURED_PHASES = frozenset(
    {StreamPhase.PLANNING, StreamPhase.VERIFICATION, StreamPhase.ANALYSIS}
)
STEP_OBJECTIVE_SHOWN = 300


@dataclass(frozen=True)
class StreamView:
    """What the panel shows: `steps` of a plan as they form, `lines` in words (a verdict),
    `text` being written, `final` the run's answer (Markdown), `note` a muted line."""

    label: str = ""
    steps: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    text: str = ""
    final: str = ""
    note: str = ""


def stream_view(phase: str | None, text: str, *, label: str = "") -> StreamView:
    """The panel for `text`, all the model wrote so far in `phase`."""
    visible, _ = split_think(text)
    if phase in STRUCTURED_PHASES:
        try:
            data = parse_partial(visible)
        except NotJSON:
            data = None
        data = data if isinstance(data, dict) else {}
        if phase == StreamPhase.PLANNING:
            return _plan_view(data, label)
        if phase == StreamPhase.VERIFICATION:
            return _verdict_view(data, label)
        return _analysis_view(data, label)
    if visible.lstrip().startswith(("{", "```")):
        # A tool call written as text: it shows up in the plan as a call once it is made.
        return StreamView(label=label, note="Preparing a tool call…")
    return StreamView(label=label, text=visible)


def _plan_view(data: dict[str, Any], label: str) -> StreamView:
    steps = []
    for number, planned in enumerate(_list(data.get("steps")), start=1):
        objective = planned.get("objective") if isinstance(planned, dict) else None
        if not isinstance(objective, str) or not objective.strip():
            continue
        line = f"{number}. {objective.strip()[:STEP_OBJECTIVE_SHOWN]}"
        tools = [t for t in _list(planned.get("tool_names")) if isinstance(t, str) and t]
        steps.append(line + (f" (with {', '.join(tools)})" if tools else ""))
    note = "Writing the plan…" if not steps else ""
    return StreamView(label=label, steps=steps, note=note)


def _analysis_view(data: dict[str, Any], label: str) -> StreamView:
    """The tool-choice analysis in words as it forms: the capabilities named so far, then the
    domain."""
    lines = []
    capabilities = [c for c in _list(data.get("capabilities")) if isinstance(c, str) and c]
    if capabilities:
        lines.append(f"Capabilities: {', '.join(capabilities)}")
    domain = data.get("domain")
    if isinstance(domain, str) and domain.strip():
        lines.append(f"Domain: {domain.strip()}")
    return StreamView(label=label, lines=lines, note="Choosing the tools this task needs…")


def _verdict_view(data: dict[str, Any], label: str) -> StreamView:
    complete = data.get("task_complete")
    if complete is True:
        lines = ["Verdict: the task is complete."]
    elif complete is False:
        lines = ["Verdict: the task is not complete yet."]
        if data.get("should_replan") is True:
            lines.append("A new plan is needed.")
    else:
        lines = []
    reasoning = data.get("reasoning")
    if isinstance(reasoning, str) and reasoning.strip():
        lines.append(f"Why: {reasoning.strip()}")
    evidence = [str(n) for n in _list(data.get("evidence")) if isinstance(n, int)]
    if evidence:
        lines.append(f"Evidence: tool call {', '.join(evidence)}.")
    response = data.get("response")
    text = response if isinstance(response, str) else ""
    note = "Checking the result…" if not lines and not text else ""
    return StreamView(label=label, lines=lines, text=text, note=note)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def final_view(run: Run, steps: list[Step] | None = None) -> StreamView:
    """The panel rendered from the rows: empty while the run works (the next tokens fill it),
    its answer once it has ended, else the last step's output (`steps`: the latest plan's,
    read when not given)."""
    if not run.is_terminal:
        return StreamView()
    answer, _ = split_think(run.final_response)
    if not answer:
        if steps is None:
            steps = list(Step.objects.filter(run=run).order_by("plan__version", "index"))
        last = next((s.output for s in reversed(steps) if s.output), "")
        answer, _ = split_think(last)
    if not answer:
        return StreamView(label="Finished", note="The model wrote no answer.")
    return StreamView(label="Final answer", final=answer)


def silence_notice(run: Run, events: list[RunEvent]) -> dict[str, float]:
    """What the page's "Waiting for the model" line needs to count on its own (silence.js,
    no request of its own): after how many seconds of quiet it shows (`after`,
    LLM_SILENCE_NOTICE_SECONDS; 0: never) and how long the run had been quiet when the page was
    rendered (`quiet_for`: since its latest event, else since it was created)."""
    since = max((e.created_at for e in events), default=run.created_at)
    quiet_for = max(0.0, (timezone.now() - since).total_seconds())
    return {"after": settings.LLM_SILENCE_NOTICE_SECONDS, "quiet_for": round(quiet_for, 1)}

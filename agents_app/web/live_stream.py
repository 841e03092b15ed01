"""A page socket's view of the model's streamed answer. Tokens arrive in pieces, so the
"Streaming answer" panel is re-rendered whole (`stream_view`) from all the text of the
current phase each time: a few kilobytes at most, and never half a JSON string on screen."""

from typing import Any

from django.template.loader import render_to_string
from django.utils.html import format_html

from agents_app.web.fragments import REGIONS_BY_EVENT, render_run_token, token_label
from agents_app.web.stream_view import stream_view


def resets_stream(events: list[dict[str, Any]]) -> bool:
    """True when one of `events` starts a new phase, so the panel starts over."""
    return any(
        "stream_reset" in REGIONS_BY_EVENT.get(event["event_type"], frozenset()) for event in events
    )


class LiveStream:
    """One page socket's panel: the text of the current phase, re-rendered as it grows."""

    def __init__(self) -> None:
        self._key: tuple[Any, Any] | None = None
        self._text = ""

    def reset(self) -> None:
        self._key, self._text = None, ""

    def feed(self, *, run_id: int, message: dict[str, Any]) -> str:
        """Out-of-band swaps for one streamed piece: reasoning is appended to the live
        reasoning panel; an answer re-renders the streaming panel. No database access."""
        if message.get("reasoning"):
            return render_run_token(run_id=run_id, message=message)
        key = (message.get("phase"), message.get("step_index"))
        if key != self._key:
            self._key, self._text = key, ""
        self._text += str(message.get("token") or "")
        label = token_label(message)
        view = stream_view(message.get("phase"), self._text, label=label)
        return format_html(
            '<span id="stream-label" class="muted" hx-swap-oob="true">{}</span>', label
        ) + render_to_string("agents/partials/stream_panel.html", {"stream": view, "oob": True})

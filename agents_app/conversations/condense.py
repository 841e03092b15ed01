"""Long conversations (seed 004): what a chat answer sends the model when the transcript grows
past its connection's context window."""

from typing import Any

from agents_app.conversations.transcript import chat_messages
from agents_app.engine.hooks import EngineHooks
from agents_app.engine.llm import LLMProvider
from agents_app.models import Run


def chat_context(run: Run, provider: LLMProvider, hooks: EngineHooks) -> list[dict[str, Any]]:
    """The messages for the answer `run`: the system message and standing instructions, then
    the transcript."""
    return chat_messages(run)

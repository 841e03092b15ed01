"""The chat answer's recipe (runs.recipes): one open-ended step whose input is the
conversation so far and whose output joins it; a verdict derived from that step, never a
replan (the person writes again); its end answers the message waiting next."""

from typing import Any

from django.conf import settings
from django.urls import reverse

from agents_app.conversations.condense import chat_context
from agents_app.conversations.services import answer_next, conversation_for_replay
from agents_app.conversations.transcript import append_answer, append_cut
from agents_app.engine.executor import added_of
from agents_app.engine.prompts import chat_system
from agents_app.models import Conversation, ModelPhase, Run, RunKind, StepStatus
from agents_app.runs.lifecycle import children_end_with
from agents_app.runs.recipes import RecipeContext, RunRows
from agents_app.runs.task_recipe import TaskRecipe


class ChatRecipe(TaskRecipe):
    kind: str = RunKind.CHAT
    label = "chat answer"
    plural = "Chat answers"
    # Stopped from its conversation or its page; never restarted (the person writes again);
    # replayed in a copy of its conversation (replay_conversation).
    actions = frozenset({"cancel", "replay"})
    listed = False
    transcript = True
    # Somebody is watching: among a person's runs waiting their turn, it goes first.
    priority = 10
    may_replan = False
    checks_evidence = False

    def plans_fast(self, rows: RunRows) -> bool:
        return True  # one stored plan with one step, every time

    def page_link(self, run: Run) -> tuple[str, str] | None:
        conversation = Conversation.objects.only("title").get(pk=run.conversation_id)
        return f"conversation “{conversation}”", reverse("chat", args=[run.conversation_id])

    def system_message(self, run: Run, conversation: Conversation) -> dict[str, Any]:
        """The first message of its input: the person's standing instructions."""
        return chat_system(conversation.instructions)

    def replay_conversation(self, source: Run) -> Any:
        """Its conversation as it stood when `source` began, copied: the replay's own."""
        return conversation_for_replay(source)

    def step_transcript(self, ctx: RecipeContext, run: Run, hooks: Any) -> list[dict] | None:
        return chat_context(run, ctx.provider_for(ModelPhase.PLANNING), hooks)

    def error_retries(self) -> int:
        return settings.CHAT_TOOL_ERROR_RETRIES

    def record_step(self, w: Any, outcome: Any, error: str) -> None:
        """What the step said and heard joins the transcript (a call without a result gets
        `error` as its result)."""
        if outcome.status == StepStatus.COMPLETED:
            append_answer(w.run, outcome.added, outcome.output)
        else:
            append_cut(w.run, outcome.added, error)

    def keep_cut(self, w: Any, exc: Exception, reason: str) -> None:
        """What it said and heard joins the transcript, each call without a result closed with
        `reason`, before the run's end answers what waits."""
        if hasattr(exc, "added"):
            append_cut(w.run, exc.added, reason or "Stopped before this call returned.")

    def keep_parked(self, w: Any, progress: dict[str, Any], reason: str) -> None:
        """What it said and heard up to the call it waited on joins the transcript, that call
        and any after it closed with `reason`: live and after a reload, the same calls."""
        append_cut(w.run, added_of(progress), reason)

    def on_finish(self, w: Any) -> None:
        children_end_with(w)
        answer_next(w)


CHAT = ChatRecipe()

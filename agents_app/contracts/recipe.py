"""The contract attempt's recipe (runs.recipes): cycles of one round of tool calls over the
attempt's transcript, each judged by the model against the contract; the attempt completes,
stops (stuck, out of turns) or goes on with another cycle (a new plan version). Its log file
is written after every cycle and at its end."""

from typing import Any

from django.conf import settings
from django.urls import reverse

from agents_app.contracts.logs import keep_log
from agents_app.conversations.condense import chat_context
from agents_app.conversations.recipe import ChatRecipe
from agents_app.core.errors import ErrorCode
from agents_app.core.event_payloads import ContractEvaluationPayload, ContractEvidence
from agents_app.core.events import EventType
from agents_app.engine.contract import (
    continue_message,
    contract_system,
    evaluate_contract,
    stuck,
)
from agents_app.engine.hooks import StreamPhase
from agents_app.models import Conversation, ModelPhase, Run, RunKind, RunStatus
from agents_app.runs.evidence import call_records
from agents_app.runs.lifecycle import children_end_with, finish
from agents_app.runs.recipes import RecipeContext, RunRows


class ContractRecipe(ChatRecipe):
    kind: str = RunKind.CONTRACT
    label = "contract attempt"
    plural = "Contract attempts"
    # Its agent starts, stops and restarts it (seed 002); its page may only stop it. Not
    # replayed: its agent's attempts are its own (a replay would need a copy of the agent).
    actions = frozenset({"cancel"})
    priority = 0  # background work, unlike the chat answer it is built on
    one_cycle = True
    verdict_at_step_end = False  # each cycle is judged by the model
    finish_in_flight = True

    def page_link(self, run: Run) -> tuple[str, str] | None:
        conversation = Conversation.objects.select_related("agent").get(pk=run.conversation_id)
        agent = conversation.agent
        if agent is None:  # pragma: no cover - an attempt's conversation is its agent's
            return None
        return f"contract agent “{agent.name}”", reverse("agent_tab", args=[agent.pk])

    def system_message(self, run: Run, conversation: Conversation) -> dict[str, Any]:
        return contract_system(run.task.text)

    def step_transcript(self, ctx: RecipeContext, run: Run, hooks: Any) -> list[dict] | None:
        """The attempt's transcript; a cycle after the first also hears why its work is not
        done yet."""
        messages = chat_context(run, ctx.provider_for(ModelPhase.PLANNING), hooks)
        if run.replans:
            messages.append(continue_message(run.replan_reason))
        return messages

    def verify(self, ctx: RecipeContext, rows: RunRows, *, fast: bool) -> None:
        """A cycle ended: the model judges its work against the contract (recorded with the
        results it relies on); then the attempt completes, stops (stuck, out of turns) or goes
        on with another cycle. The log is written once: here when the attempt goes on, by its
        end (on_finish) when it ends."""
        run, steps = rows.run, rows.steps
        hooks = ctx.hooks(run)
        calls = call_records(run, steps)
        # Judging a contract is the planning model's (seed 004's large model), as condensing is.
        planner = ctx.provider_for(ModelPhase.PLANNING)
        verdict = evaluate_contract(
            provider=planner,
            hooks=hooks,
            messages=chat_context(run, planner, hooks),
            calls=calls,
            timeout=settings.AGENT_VERIFY_TIMEOUT,
            max_tokens=settings.LLM_MAX_TOKENS_VERIFY,
        )
        cycle = run.replans + 1
        max_turns = int(run.task.context.get("max_turns") or settings.CONTRACT_MAX_TURNS)
        by_number = {call.number: call for call in calls}
        with ctx.lock() as w:
            thinking = hooks.streamed_reasoning(StreamPhase.VERIFICATION)
            w.event(
                EventType.CONTRACT_EVALUATION,
                ContractEvaluationPayload(
                    cycle=cycle,
                    met=verdict.met,
                    reason=verdict.reason,
                    evidence=[
                        ContractEvidence(
                            number=n,
                            tool=by_number[n].tool,
                            arguments=by_number[n].arguments,
                            result=by_number[n].result[:500],
                        )
                        for n in verdict.evidence
                        if n in by_number
                    ],
                    **({"thinking": thinking} if thinking else {}),
                ),
            )
            why_stuck = stuck(calls)
            if verdict.met:
                w.set(final_response=verdict.reason or "The contract is met.")
                finish(w, RunStatus.SUCCEEDED)
            elif why_stuck:
                finish(w, RunStatus.FAILED, ErrorCode.AGENT_STUCK, why_stuck)
            elif cycle >= max_turns:
                finish(
                    w,
                    RunStatus.FAILED,
                    ErrorCode.BUDGET_EXCEEDED,
                    f"turns: the attempt used {cycle} of its {max_turns} cycles",
                    {"budget": "turns", "used": cycle, "limit": max_turns},
                )
            else:
                w.set(replans=cycle, replan_reason=verdict.reason)
                w.transition(RunStatus.PLANNING)
                keep_log(w)

    def on_finish(self, w: Any) -> None:
        children_end_with(w)
        keep_log(w)


CONTRACT = ContractRecipe()

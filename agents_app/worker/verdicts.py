"""What ends a run's verifying: the verdict on a task (the verifier, or the fast path's derived
one; the one place a run may succeed, its evidence checked), or a contract cycle's
self-evaluation. The same RunExecutor performs them as any decision; a team's head node has its
own (worker/team.verify_team), which `verify` hands it to."""

from typing import TYPE_CHECKING

from django.conf import settings

from agents_app.contracts.logs import keep_log
from agents_app.conversations.condense import chat_context
from agents_app.core.errors import ErrorCode
from agents_app.core.events import EventType
from agents_app.engine.contract import evaluate_contract, stuck
from agents_app.engine.fast import fast_verdict
from agents_app.engine.verifier import verify as judge
from agents_app.models import Plan, Run, RunKind, RunStatus, Step
from agents_app.runs.lifecycle import finish
from agents_app.worker.evidence import call_records, evidence_problem
from agents_app.worker.team import verify_team

if TYPE_CHECKING:
    from agents_app.worker.execution import RunExecutor


def verify_contract(ex: "RunExecutor", run: Run, steps: list[Step]) -> None:
    """A contract cycle ended: the model judges its work against the contract (recorded
    with the results it relies on); then the attempt completes, stops (stuck, out of
    turns) or goes on with another cycle."""
    hooks = ex.hooks(run)
    calls = call_records(run, steps)
    verdict = evaluate_contract(
        provider=ex.provider,
        hooks=hooks,
        messages=chat_context(run, ex.provider, hooks),
        calls=calls,
        timeout=settings.AGENT_VERIFY_TIMEOUT,
        max_tokens=settings.LLM_MAX_TOKENS_VERIFY,
    )
    cycle = run.replans + 1
    max_turns = int(run.task.context.get("max_turns") or settings.CONTRACT_MAX_TURNS)
    by_number = {call.number: call for call in calls}
    with ex.lock() as w:
        thinking = hooks.streamed_reasoning("verification")
        w.event(
            EventType.CONTRACT_EVALUATION,
            {
                "cycle": cycle,
                "met": verdict.met,
                "reason": verdict.reason,
                "evidence": [
                    {
                        "number": n,
                        "tool": by_number[n].tool,
                        "arguments": by_number[n].arguments,
                        "result": by_number[n].result[:500],
                    }
                    for n in verdict.evidence
                    if n in by_number
                ],
                **({"thinking": thinking} if thinking else {}),
            },
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


def verify(
    ex: "RunExecutor", run: Run, plan: Plan, steps: list[Step], *, fast: bool = False
) -> None:
    if run.kind == RunKind.CONTRACT:
        verify_contract(ex, run, steps)
        return
    if run.kind == RunKind.TEAM:
        verify_team(ex, run, steps)
        return
    # A chat answer is not replanned: the person reads the error and writes again.
    # Nor a micro agent's: its max_steps bound it, and its parent decides what follows.
    can_replan = run.replans < settings.AGENT_MAX_REPLANS and run.kind not in (
        RunKind.CHAT,
        RunKind.MICRO,
    )
    # A fast-path plan's verdict is derived from its one step, not asked; it ends at the
    # same success point, replan or failure below as the verifier's.
    derived = fast_verdict(steps[0], can_replan=can_replan) if fast else None
    hooks = ex.hooks(run)
    if derived:
        verdict = derived.verdict
    else:
        verdict = judge(
            provider=ex.provider,
            hooks=hooks,
            task=run.task.text,
            context=run.task.context,
            steps=[(s.index, s.objective, s.status, s.output or s.error) for s in steps],
            can_replan=can_replan,
            timeout=settings.AGENT_VERIFY_TIMEOUT,
            max_tokens=settings.LLM_MAX_TOKENS_VERIFY,
            calls=call_records(run, steps),
        )
    with ex.lock() as w:
        thinking = hooks.streamed_reasoning("verification")
        w.event(
            EventType.VERIFICATION,
            {**verdict.model_dump(), **({"thinking": thinking} if thinking else {})},
        )
        # The one place a run may succeed: the evidence is checked here, whoever judged.
        problem = (
            evidence_problem(run, verifier=verdict.reasoning)
            if verdict.task_complete and run.kind != RunKind.CHAT
            else None
        )
        held = (plan, steps)  # this worker's: nobody else writes them while it holds the run
        if problem is not None:
            finish(w, RunStatus.FAILED, problem.code, problem.message, problem.details, held=held)
        elif verdict.task_complete:
            last_output = next((s.output for s in reversed(steps) if s.output), "")
            w.set(final_response=verdict.response or w.run.final_response or last_output)
            finish(w, RunStatus.SUCCEEDED, held=held)
        elif verdict.should_replan and can_replan:
            w.set(replans=w.run.replans + 1, replan_reason=verdict.reasoning)
            w.event(EventType.REPLANNED, {"replans": w.run.replans, "reason": verdict.reasoning})
            w.transition(RunStatus.PLANNING)
        else:
            finish(
                w,
                RunStatus.FAILED,
                derived.error_code if derived else ErrorCode.VERIFICATION_FAILED,
                # The model's words are no error message: they go into the details.
                verdict.reasoning if derived else "The verifier judged the task incomplete",
                {} if derived else {"verifier": verdict.reasoning},
                held=held,
            )

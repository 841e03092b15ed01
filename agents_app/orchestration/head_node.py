"""A head node's decisions performed (seed 001): its plan is the task split into subtasks,
each assigned by the selection matrix; executing it starts every subtask that can start as a
child run and parks; verifying it puts the children's envelopes together.

The same RunExecutor runs it as any run (lease, fence, events, budgets, audit); this module
is what the team's recipe (orchestration.recipes) does with the worker's context
(runs.recipes.RecipeContext) (docs/ARCHITECTURE.md, "Teams are trees of runs").
"""

from typing import Any

from django.conf import settings

from agents_app.core.errors import ErrorCode
from agents_app.core.event_payloads import (
    DecompositionRefusedPayload,
    DelegationRefusedPayload,
    EnvelopesTrimmedPayload,
    ReplannedPayload,
    SubtaskQueuedPayload,
    VerificationPayload,
)
from agents_app.core.events import EventType
from agents_app.engine.decide import Action
from agents_app.engine.decomposition_check import decomposition_problem
from agents_app.engine.hooks import StreamPhase
from agents_app.engine.team import Decomposition, ProfileCard, Subtask, assign, decompose
from agents_app.engine.untrusted import as_data
from agents_app.engine.verifier import verify
from agents_app.models import AgentProfile, ModelPhase, Plan, Run, RunStatus, Step, StepStatus
from agents_app.orchestration.children import (
    FINISH_TOOL,
    WORKING,
    busy_by_profile,
    cap_tokens,
    delegated_before,
    is_waiting,
    spawn_child,
)
from agents_app.runs.lifecycle import finish, new_plan
from agents_app.runs.recipes import RecipeContext, RunRows

# A split that is no split is asked for once more; refused twice, one agent does the task.
SPLIT_ATTEMPTS = 2
SPLIT_AGAIN = "split again"
SINGLE_AGENT = "single agent"
SINGLE_AGENT_KEY = "single_agent"  # in a plan's raw: the task whole, after a refused split
SPLIT_REFUSED = "The team's split was refused twice, so one agent does the whole task"
ASK_AGAIN = (
    "Give subtasks that each name a different part of the work, in words of the task; "
    "when the task has no separate parts, give one subtask: the whole task."
)


def profile_cards() -> list[ProfileCard]:
    return [
        ProfileCard(
            name=p.name,
            role=p.role,
            specialisations=tuple(p.specialisations),
            concurrency_limit=p.concurrency_limit,
        )
        for p in AgentProfile.objects.order_by("name")
    ]


def team_history(run: Run, steps: list[Step]) -> str:
    """What the last split's subtasks came to (their children's results: data) and why the
    team splits again."""
    lines = [
        f"Subtask {s.index} ({s.status}): {s.objective}\n  {(s.output or s.error)[:1000]}"
        for s in steps
    ]
    said = as_data("\n".join(lines), "subtask results") if lines else ""
    return f"{said}\nWhy again: {run.replan_reason}".strip()


def plan_team(ex: RecipeContext, run: Run, previous: Plan | None, steps: list[Step]) -> None:
    """The head node's model splits the task; the plan's steps are the subtasks, each with
    the profile the matrix prefers (assigned for good when it starts: a busy profile may be
    replaced by its secondary then). A split that is no split (placeholder or repeated
    subtasks: engine.decomposition_check) is refused with its reason, a
    `decomposition_refused` event, and asked for once more; refused again, the plan is the
    whole task as one subtask, done by the one agent the matrix picks."""
    hooks = ex.hooks(run)
    history = team_history(run, steps) if previous else ""
    output, refused = split(ex, run, hooks, history), ""
    for attempt in range(1, SPLIT_ATTEMPTS + 1):
        refused = decomposition_problem(output) or ""
        if not refused:
            break
        last = attempt == SPLIT_ATTEMPTS
        with ex.lock() as w:
            w.event(
                EventType.DECOMPOSITION_REFUSED,
                DecompositionRefusedPayload(
                    reason=refused,
                    attempt=attempt,
                    then=SINGLE_AGENT if last else SPLIT_AGAIN,
                ),
            )
        if last:
            output = single_agent(run.task.text, refused)
            break
        told = f"Your split was refused: {refused}. {ASK_AGAIN}"
        output = split(ex, run, hooks, f"{history}\n{told}".strip())
    raw = {"team": True, **output.model_dump(), **({SINGLE_AGENT_KEY: True} if refused else {})}
    with ex.lock() as w:
        new_plan(
            w,
            previous=previous,
            reason=f"{SPLIT_REFUSED}: {refused}" if refused else None,
            raw=raw,
            thinking=hooks.streamed_reasoning(StreamPhase.PLANNING),
            steps=[
                (sub.description, [], sub.preferred_profile, sub.depends_on)
                for sub in output.subtasks
            ],
            shown={
                "team": True,
                "pattern": output.pattern,
                "steps": [
                    {
                        "objective": sub.description,
                        "depends_on": sub.depends_on,
                        "preferred_profile": sub.preferred_profile,
                        "micro": sub.micro is not None,
                        "tool_names": [],
                    }
                    for sub in output.subtasks
                ],
            },
        )
        w.transition(RunStatus.RUNNING)


def split(ex: RecipeContext, run: Run, hooks: Any, history: str) -> Decomposition:
    return decompose(
        provider=ex.provider_for(ModelPhase.PLANNING),
        hooks=hooks,
        task=run.task.text,
        context=run.task.context,
        profiles=profile_cards(),
        max_subtasks=settings.TEAM_MAX_SUBTASKS,
        timeout=settings.AGENT_PLAN_TIMEOUT,
        history=history,
        max_tokens=settings.LLM_MAX_TOKENS_PLAN,
    )


def single_agent(task: str, why: str) -> Decomposition:
    """The task whole, as one subtask for the agent the matrix picks."""
    return Decomposition.model_construct(
        pattern="sequential",
        subtasks=[
            Subtask.model_construct(
                description=task, depends_on=[], preferred_profile="", micro=None
            )
        ],
        reasoning=f"{SPLIT_REFUSED}: {why}",
    )


def delegate(ex: RecipeContext, action: Action, rows: RunRows) -> None:
    """Start a child for each step that can start, then park until a child ends. A step is
    refused (failed) when the tree is as deep as TEAM_MAX_DEPTH allows or when this parent
    gave the same subtask to the same profile before and that child works or succeeded (one
    that failed is tried again); it waits (stays pending) when every
    profile that suits it is at its limit."""
    raw = rows.plan.raw
    subtasks = raw.get("subtasks") or []
    cards = profile_cards()
    profiles = {p.name: p for p in AgentProfile.objects.select_related("connection")}
    with ex.lock() as w:
        run = w.run
        steps = {s.index: s for s in Step.objects.filter(plan=rows.plan)}
        busy = busy_by_profile()
        queued = False
        for index in action.delegate:
            step = steps[index]
            if step.status != StepStatus.PENDING:
                continue  # a child of an earlier delivery has it already
            sub = subtasks[index] if index < len(subtasks) else {}
            if run.depth + 1 > settings.TEAM_MAX_DEPTH:
                refuse(w, step, f"delegation depth {run.depth + 1} is over TEAM_MAX_DEPTH")
                continue
            micro = sub.get("micro")
            if micro:
                refused = delegated_before(run, "micro", step.objective)
                if refused is not None:
                    refuse(
                        w,
                        step,
                        f"a micro agent was given the same task (run {refused.pk}, "
                        f"{refused.status})",
                    )
                    continue
                spawn_child(
                    w,
                    step,
                    kind="micro",
                    text=step.objective,
                    context=child_context(run, steps, step),
                    persona=micro["persona"],
                    allowed_tools=micro_tools(ex, run, micro),
                    max_steps=micro.get("max_steps"),
                )
                continue
            chosen = assign(step.objective, sub.get("preferred_profile", ""), cards, busy)
            if chosen.profile is None and not chosen.waiting_for:
                # Nothing to wait for: no profile exists to do it (staff deleted them all).
                refuse(w, step, chosen.reason)
                continue
            if chosen.profile is None:
                if not step.error:
                    step.error = f"queued: {chosen.reason}"
                    step.save(update_fields=["error"])
                    w.event(
                        EventType.SUBTASK_QUEUED,
                        SubtaskQueuedPayload(
                            index=index, reason=chosen.reason, waiting_for=chosen.waiting_for
                        ),
                    )
                queued = True
                continue
            profile = profiles[chosen.profile]
            earlier = delegated_before(run, profile.name, step.objective)
            if earlier is not None:
                refuse(
                    w,
                    step,
                    f"{profile.name} was given this subtask before (run {earlier.pk}, "
                    f"{earlier.status})",
                )
                continue
            step.error = ""
            decide(w, index, profile.name, chosen.reason)
            spawn_child(
                w,
                step,
                kind="child",
                text=step.objective,
                context=child_context(run, steps, step),
                profile=profile,
                allowed_tools=list(profile.allowed_tools) or None,
                excluded_tools=list(profile.excluded_tools),
            )
            busy[profile.name] = busy.get(profile.name, 0) + 1
        if queued or Run.objects.filter(parent=run, status__in=WORKING).exists():
            w.transition(RunStatus.WAITING_CHILDREN)
            ex.parked = True


def decide(w: Any, index: int, profile: str, why: str) -> None:
    """The head node's decisions join the shared context its children read."""
    shared = dict(w.run.shared or {})
    decisions = [d for d in shared.get("decisions") or [] if d.get("subtask") != index]
    shared["decisions"] = [*decisions, {"subtask": index, "profile": profile, "why": why}]
    w.set(shared=shared)


def refuse(w: Any, step: Step, why: str) -> None:
    step.set_status(StepStatus.FAILED)
    step.error = f"{ErrorCode.DELEGATION_REFUSED}: {why}"
    step.save(update_fields=["status", "error"])
    w.event(EventType.DELEGATION_REFUSED, DelegationRefusedPayload(index=step.index, reason=why))


def child_context(run: Run, steps: dict[int, Step], step: Step) -> dict[str, Any]:
    """What a child starts from: the team's task, the results of the subtasks it depends on
    (their envelopes' summaries and files, with the child ids to cite) and the shared context."""
    envelopes = {
        c.parent_step_id: c.envelope
        for c in Run.objects.filter(parent=run, envelope__isnull=False).order_by("pk")
    }
    needs = []
    for d in step.depends_on:
        dep = steps.get(d)
        envelope = envelopes.get(dep.pk) if dep else None
        if envelope:
            needs.append(
                {
                    "subtask": d,
                    "child_run_id": envelope["run_id"],
                    "summary": envelope["summary"],
                    "artifacts": envelope["artifacts"],
                }
            )
    context: dict[str, Any] = {"team_task": run.task.text[:2000]}
    if needs:
        context["depends_on"] = needs
    if run.shared:
        context["shared"] = run.shared
    return context


def micro_tools(ex: RecipeContext, run: Run, micro: dict[str, Any]) -> list[str]:
    """Seed 003's inheritance: every tool its parent may use but the waiting ones (by their own
    name under any server, or flagged `waits` by staff: children.is_waiting), or only
    `available_actions` of them; less `exclude_actions`; finish_task always."""
    inherited = [s.name for s in ex.specs(run) if not is_waiting(s)]
    wanted = micro.get("available_actions")
    names = [n for n in inherited if wanted is None or n in wanted]
    names = [n for n in names if n not in (micro.get("exclude_actions") or ())]
    if FINISH_TOOL not in names:
        names.append(FINISH_TOOL)
    return names


def wait(ex: RecipeContext, rows: RunRows) -> None:
    """Park while a child works; a child that ended since the rows were read is taken now."""
    with ex.lock() as w:
        if Run.objects.filter(parent=w.run, status__in=WORKING).exists():
            w.transition(RunStatus.WAITING_CHILDREN)
            ex.parked = True


def verify_team(ex: RecipeContext, run: Run, steps: list[Step]) -> None:
    """Put the children's envelopes together, in subtask order, after checking they fit the
    head node's context budget (each cut in proportion when they do not). An iterative team
    asks its model whether the work is done and refines it (a new plan) up to
    TEAM_MAX_ITERATIONS times; a failed subtask fails the team with the child's error."""
    plan = Plan.objects.filter(run=run).order_by("-version").first()
    children = {
        c.parent_step_id: c
        for c in Run.objects.filter(parent=run, parent_step__plan=plan).order_by("pk")
    }
    envelopes = [
        (s, children[s.pk].envelope) for s in steps if s.pk in children and children[s.pk].envelope
    ]
    total = sum(e["summary_tokens"] for _, e in envelopes)
    budget = settings.TEAM_CONTEXT_TOKENS
    trimmed = total > budget
    if trimmed:
        share = max(16, budget // max(1, len(envelopes)))
        envelopes = [(s, {**e, "summary": cap_tokens(e["summary"], share)}) for s, e in envelopes]
    failed = [s for s in steps if s.status != StepStatus.COMPLETED]
    # One agent doing the whole task had its own replans and seed 001's retries: a new split
    # from the model that could not split it would only do the same again.
    alone = bool((plan.raw or {}).get(SINGLE_AGENT_KEY))
    if failed and not alone and run.replans < settings.AGENT_MAX_REPLANS:
        # Another split, told what failed: a subtask that failed may be tried again.
        why = "; ".join(f"subtask {s.index} {s.status}: {s.error[:300]}" for s in failed)
        with ex.lock() as w:
            w.set(replans=w.run.replans + 1, replan_reason=why)
            w.event(EventType.REPLANNED, ReplannedPayload(replans=w.run.replans, reason=why))
            w.transition(RunStatus.PLANNING)
        return
    iterative = (plan.raw or {}).get("pattern") == "iterative"
    verdict = None
    if iterative and not failed and run.replans < settings.TEAM_MAX_ITERATIONS:
        hooks = ex.hooks(run)
        verdict = verify(
            provider=ex.provider_for(ModelPhase.VERIFYING),
            hooks=hooks,
            task=run.task.text,
            context=run.task.context,
            steps=[(s.index, s.objective, s.status, e["summary"]) for s, e in envelopes],
            can_replan=True,
            timeout=settings.AGENT_VERIFY_TIMEOUT,
            max_tokens=settings.LLM_MAX_TOKENS_VERIFY,
            calls=[],
        )
    with ex.lock() as w:
        if trimmed:
            w.event(
                EventType.ENVELOPES_TRIMMED,
                EnvelopesTrimmedPayload(tokens=total, budget=budget, children=len(envelopes)),
            )
        if verdict is not None:
            w.event(EventType.VERIFICATION, VerificationPayload(**verdict.model_dump()))
            if not verdict.task_complete:
                w.set(replans=w.run.replans + 1, replan_reason=verdict.reasoning)
                w.event(
                    EventType.REPLANNED,
                    ReplannedPayload(replans=w.run.replans, reason=verdict.reasoning),
                )
                w.transition(RunStatus.PLANNING)
                return
        if failed:
            first = failed[0]
            child = children.get(first.pk)
            error = (child.envelope or {}).get("error", {}) if child else {}
            finish(
                w,
                RunStatus.FAILED,
                ErrorCode.CHILD_FAILED,
                f"subtask {first.index} failed: {first.error or first.status}",
                {
                    "step_index": first.index,
                    "child_run_id": child.pk if child else None,
                    "child_error_code": error.get("code", ""),
                },
            )
            return
        w.set(final_response=aggregate(envelopes, verdict.response if verdict else ""))
        finish(w, RunStatus.SUCCEEDED)


def aggregate(envelopes: list[tuple[Step, dict[str, Any]]], said: str = "") -> str:
    """The deterministic result: each subtask's envelope in order, naming its agent and run."""
    parts = [said] if said else []
    for step, e in envelopes:
        who = e["profile"] or e["kind"]
        files = f"\nFiles: {', '.join(e['artifacts'])}" if e["artifacts"] else ""
        parts.append(
            f"[{step.index}] {step.objective} — {who}, run {e['run_id']}:\n{e['summary']}{files}"
        )
    return "\n\n".join(parts)

"""A head node's thinking (seed 001): split a task into subtasks with dependencies, choose the
agent profile for each by the selection matrix, and put the children's results together.

Plain Python: the worker hands in the profiles as `ProfileCard`s and how many runs each has
going (`busy`), and performs what comes back (agents_app.orchestration spawns the children).
"""

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents_app.core.errors import ErrorCode
from agents_app.engine.hooks import EngineHooks, StreamPhase
from agents_app.engine.llm import LLMProvider
from agents_app.engine.structured import ask_structured
from agents_app.engine.untrusted import DATA_RULE, as_data

PATTERNS = ("sequential", "parallel", "pipeline", "iterative")
SUBTASK_CHARS = 600
PERSONA_CHARS = 2000


# --- what the head node's model answers ------------------------------------------------------


class MicroSpec(BaseModel):
    """A subtask done by a micro agent (seed 003): a temporary persona, every tool of its
    parent but the waiting ones unless `available_actions` restricts or `exclude_actions`
    removes, finish_task always, at most `max_steps` model turns."""

    model_config = ConfigDict(extra="ignore")

    persona: str = Field(min_length=1, max_length=PERSONA_CHARS)
    available_actions: list[str] | None = None
    exclude_actions: list[str] = Field(default_factory=list)
    max_steps: int = Field(default=10, ge=1, le=100)


class Subtask(BaseModel):
    model_config = ConfigDict(extra="ignore")

    description: str = Field(min_length=1, max_length=SUBTASK_CHARS)
    depends_on: list[int] = Field(
        default_factory=list, description="0-based indices of earlier subtasks it needs."
    )
    preferred_profile: str = Field(
        default="", description="A profile's name when one agent clearly suits it; else empty."
    )
    micro: MicroSpec | None = None


class Decomposition(BaseModel):
    model_config = ConfigDict(extra="ignore")

    pattern: str = Field(default="parallel", description="sequential|parallel|pipeline|iterative")
    subtasks: list[Subtask] = Field(min_length=1)
    reasoning: str = ""


@dataclass(frozen=True)
class ProfileCard:
    """What the head node knows of a profile."""

    name: str
    role: str
    specialisations: tuple[str, ...]
    concurrency_limit: int
    description: str = ""


def decomposition_schema(profile_names: list[str], max_subtasks: int) -> dict[str, Any]:
    subtask = {
        "type": "object",
        "properties": {
            "description": {"type": "string", "minLength": 1, "maxLength": SUBTASK_CHARS},
            "depends_on": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": max(0, max_subtasks - 2)},
                "maxItems": max_subtasks - 1,
            },
            "preferred_profile": {"enum": ["", *sorted(profile_names)]},
            "micro": {
                "type": "object",
                "properties": {
                    "persona": {"type": "string", "minLength": 1, "maxLength": PERSONA_CHARS},
                    "available_actions": {"type": "array", "items": {"type": "string"}},
                    "exclude_actions": {"type": "array", "items": {"type": "string"}},
                    "max_steps": {"type": "integer", "minimum": 1, "maximum": 100},
                },
                "required": ["persona"],
                "additionalProperties": False,
            },
        },
        "required": ["description"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "pattern": {"enum": list(PATTERNS)},
            "subtasks": {
                "type": "array",
                "items": subtask,
                "minItems": 1,
                "maxItems": max_subtasks,
            },
            "reasoning": {"type": "string", "maxLength": 600},
        },
        "required": ["pattern", "subtasks"],
        "additionalProperties": False,
    }


def decomposition_messages(
    *,
    task: str,
    context: dict[str, Any],
    profiles: list[ProfileCard],
    max_subtasks: int,
    history: str = "",
) -> list[dict[str, Any]]:
    team = "\n".join(
        f"- {p.name} ({p.role}): {', '.join(p.specialisations) or 'general'}" for p in profiles
    )
    system = (
        "AGENTDESK:TEAM\nYou are the head node of a team of AI agents. Split the task into at most "
        f"{max_subtasks} subtasks another agent can each do alone, with the results of the "
        "subtasks it depends on. Choose the pattern: parallel (independent parts), "
        "sequential or pipeline (each part needs the one before), iterative (do, then review "
        "and refine). A subtask's depends_on lists earlier subtasks only. Name a "
        "preferred_profile only when one agent clearly suits the subtask. A subtask that needs "
        "a short-lived specialist no profile is may instead name a micro agent: its persona "
        "(who it is), optionally the only tools it may use (available_actions) or tools it may "
        f"not (exclude_actions), and max_steps. {DATA_RULE}\n\nThe team:\n"
        f"{team}\n\nAnswer with JSON only."
    )
    user = f"Task:\n{task}"
    # A team's context and history hold what its children returned (orchestration.head_node
    # wraps the children's outputs in the history): data.
    if context:
        user += f"\n\nContext: {as_data(str(context), 'context')}"
    if history:
        user += f"\n\nAn earlier attempt and why it needs another:\n{history}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def decompose(
    *,
    provider: LLMProvider,
    hooks: EngineHooks,
    task: str,
    context: dict[str, Any],
    profiles: list[ProfileCard],
    max_subtasks: int,
    timeout: float,
    history: str = "",
    max_tokens: int | None = None,
) -> Decomposition:
    """The task as subtasks. Dependencies on the subtask itself or a later one are dropped;
    a pattern the model names that is not one of PATTERNS is parallel; sequential and
    pipeline subtasks without dependencies each depend on the one before. Raises DomainError
    PLANNING_FAILED / PLANNING_TIMEOUT, or LLMError."""

    def check(plan: Decomposition) -> None:
        if len(plan.subtasks) > max_subtasks:
            raise ValueError(f"{len(plan.subtasks)} subtasks; at most {max_subtasks} are allowed")
        normalise(plan)

    return ask_structured(
        provider=provider,
        hooks=hooks,
        messages=decomposition_messages(
            task=task,
            context=context,
            profiles=profiles,
            max_subtasks=max_subtasks,
            history=history,
        ),
        model=Decomposition,
        phase=StreamPhase.PLANNING,
        timeout=timeout,
        fail_code=ErrorCode.PLANNING_FAILED,
        timeout_code=ErrorCode.PLANNING_TIMEOUT,
        check=check,
        max_tokens=max_tokens,
        schema=decomposition_schema([p.name for p in profiles], max_subtasks),
    )


def normalise(plan: Decomposition) -> Decomposition:
    if plan.pattern not in PATTERNS:
        plan.pattern = "parallel"
    for index, subtask in enumerate(plan.subtasks):
        subtask.depends_on = sorted({d for d in subtask.depends_on if 0 <= d < index})
        if plan.pattern in ("sequential", "pipeline") and index and not subtask.depends_on:
            subtask.depends_on = [index - 1]
    return plan


# --- seed 001's selection matrix -------------------------------------------------------------

# Words in a subtask that show what it needs, as features named like profiles' specialisations.
FEATURE_WORDS: dict[str, tuple[str, ...]] = {
    "code_generation": ("implement", "write code", "code ", "function", "script", "build"),
    "implementation": ("implement", "build", "create", "fix"),
    "testing": ("test",),
    "refactoring": ("refactor",),
    "code_review": ("review", "audit", "check the code"),
    "security_analysis": ("security", "vulnerab"),
    "architecture_decisions": ("architecture", "design"),
    "synthesis": ("synthes", "summar", "combine", "aggregate", "final"),
    "reasoning": ("analy", "reason", "decide", "compare", "evaluate"),
    "exploration": ("research", "explore", "investigat", "find", "search", "gather"),
    "documentation_analysis": ("documentation", "docs", "read the"),
    "documentation": ("document", "readme", "write up"),
    "large_context": ("large", "whole codebase", "many files", "entire"),
    "fast_iteration": ("quick", "iterate", "prototype"),
}

# Task characteristic → (primary role, secondary role): seed 001's table, with its models
# named by the roles that stand for them (Gemini: research, Codex: builder, Claude: synthesis).
SELECTION_MATRIX: dict[str, tuple[str, str]] = {
    "large_context": ("research", "synthesis"),
    "code_generation": ("builder", "synthesis"),
    "code_review": ("synthesis", "research"),
    "exploration": ("research", "synthesis"),
    "reasoning": ("synthesis", "research"),
    "fast_iteration": ("builder", "research"),
    "documentation": ("builder", "research"),
}


def task_features(text: str) -> frozenset[str]:
    lowered = " " + " ".join(text.lower().split()) + " "
    return frozenset(
        feature for feature, words in FEATURE_WORDS.items() if any(w in lowered for w in words)
    )


def score(features: frozenset[str], profile: ProfileCard) -> int:
    """Specialisations that match a feature count 1; the matrix's primary role for a feature
    2 more, its secondary 1."""
    total = len(features & set(profile.specialisations))
    for feature in features:
        primary, secondary = SELECTION_MATRIX.get(feature, ("", ""))
        total += 2 if profile.role == primary else 1 if profile.role == secondary else 0
    return total


@dataclass(frozen=True)
class Assignment:
    """The profile a subtask goes to now, or None: queued until `waiting_for` has room."""

    profile: str | None
    reason: str
    waiting_for: str = ""
    scores: dict[str, int] = field(default_factory=dict)


def assign(
    subtask: str, preferred: str, profiles: list[ProfileCard], busy: dict[str, int]
) -> Assignment:
    """Seed 001's assignment: an explicit preference first (waited for when it is busy);
    else the profiles scored against the subtask's features, the best one if it has room,
    the second best (the secondary) if not, queued for the best otherwise. The orchestrator
    does no subtask itself; ties go to the name first in order."""
    workers = [p for p in profiles if p.role != "orchestrator"] or list(profiles)
    if not workers:
        return Assignment(None, "there is no agent profile", waiting_for="")

    def free(p: ProfileCard) -> bool:
        return busy.get(p.name, 0) < p.concurrency_limit

    named = {p.name.lower(): p for p in profiles}
    if preferred and preferred.lower() in named:
        chosen = named[preferred.lower()]
        if free(chosen):
            return Assignment(chosen.name, "explicit preference")
        return Assignment(None, "the preferred profile is at its limit", chosen.name)
    features = task_features(subtask)
    scores = {p.name: score(features, p) for p in workers}
    ranked = sorted(workers, key=lambda p: (-scores[p.name], p.name))
    primary = ranked[0]
    if free(primary):
        return Assignment(primary.name, "best match", scores=scores)
    if len(ranked) > 1 and free(ranked[1]):
        return Assignment(
            ranked[1].name, f"secondary: {primary.name} is at its limit", scores=scores
        )
    return Assignment(None, "every matching profile is at its limit", primary.name, scores)


# --- seed 001's recovery table ----------------------------------------------------------------


@dataclass(frozen=True)
class Recovery:
    """How a failed child is tried again: `kind` is the row of seed 001's table, `delay`
    seconds before it starts, `time_factor` its time budget against the last try's, `note`
    what the new child is told about the last try."""

    kind: str
    delay: float = 0.0
    time_factor: float = 1.0
    note: str = ""


# kind: (the error codes it covers, the most retries)
RECOVERY_LIMITS: dict[str, tuple[frozenset[str], int]] = {
    "timeout": (
        frozenset(
            {"EXECUTION_TIMEOUT", "REQUEST_TIMEOUT", "PLANNING_TIMEOUT", "VERIFICATION_TIMEOUT"}
        ),
        2,
    ),
    "rate_limit": (frozenset({"RATE_LIMITED"}), 5),
    "context_overflow": (frozenset(), 3),
    "invalid_output": (
        frozenset(
            {
                "PLANNING_FAILED",
                "INVALID_RESPONSE",
                "INVALID_ARGUMENTS",
                "INVALID_PLAN",
                "VERIFICATION_FAILED",
                "EVIDENCE_MISSING",
                "ANSWER_TOO_LONG",
            }
        ),
        2,
    ),
    "network": (frozenset({"CONNECTION_REFUSED", "MAX_RETRIES_EXCEEDED"}), 5),
}
_OVERFLOW_WORDS = (
    "context length",
    "context window",
    "context size",
    "maximum context",
    "too many tokens",
    "exceeds the available context",
)


def recovery_kind(code: str, message: str) -> str:
    """The row of the table a child's error falls in, or "" (no retry: a cancel, a budget,
    a refused delegation, a tool that failed)."""
    if any(word in message.lower() for word in _OVERFLOW_WORDS):
        return "context_overflow"
    for kind, (codes, _) in RECOVERY_LIMITS.items():
        if code in codes:
            return kind
    return ""


def recovery(code: str, message: str, tried: int) -> Recovery | None:
    """How to try a failed child again, its `tried` earlier retries of the same kind
    counted; None once the table's limit is reached (the parent replans or fails)."""
    kind = recovery_kind(code, message)
    if not kind or tried >= RECOVERY_LIMITS[kind][1]:
        return None
    if kind == "timeout":
        return Recovery(
            kind, time_factor=2.0, note="The last try ran out of time; you have twice as long."
        )
    if kind in ("rate_limit", "network"):
        return Recovery(kind, delay=min(60.0, 2.0 ** (tried + 1)))
    if kind == "context_overflow":
        return Recovery(
            kind,
            note="The last try overflowed the model's context. Work in small parts: read "
            "files a piece at a time and keep each answer short.",
        )
    return Recovery(
        kind,
        note=f"The last try failed: {code}: {message[:300]}. Keep exactly to the format asked.",
    )

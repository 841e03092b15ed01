"""A plan a person edited at its approval reshapes the task: their steps (and the note they
wrote with them) are what the run is then asked to do, so the verifier judges that, and the
evidence check asks for the files that, not the first wording of the task."""

from dataclasses import dataclass
from typing import Any

# The key of Plan.raw that marks a plan a person edited at its approval: {"by", "note"}.
EDITED = "edited"


@dataclass(frozen=True)
class PlanEdit:
    """The latest plan a person edited: its version, who edited it, their note, and its steps
    as (objective, tool names)."""

    version: int
    by: str
    note: str
    steps: tuple[tuple[str, tuple[str, ...]], ...]

    @property
    def task(self) -> str:
        """The task as the person reshaped it: their steps' objectives, one sentence each."""
        return " ".join(_sentence(objective) for objective, _ in self.steps)

    @property
    def asks(self) -> str:
        """What the reshaped task asks for, in words the evidence check reads for the files to
        write: the steps' objectives, one a line, and the note."""
        return "\n".join([objective for objective, _ in self.steps] + [self.note])


def edit_in(version: int, raw: Any) -> PlanEdit | None:
    """The person's edit a plan's raw (`Plan.raw`) records, or None for a plan nobody edited."""
    edited = raw.get(EDITED) if isinstance(raw, dict) else None
    if not isinstance(edited, dict):
        return None
    steps = [step for step in raw.get("steps") or [] if isinstance(step, dict)]
    return PlanEdit(
        version=version,
        by=str(edited.get("by", "")),
        note=str(edited.get("note", "")),
        steps=tuple(
            (str(step.get("objective", "")), tuple(step.get("tool_names") or ())) for step in steps
        ),
    )


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith((".", "!", "?")) else f"{text}."


def _note_and_steps(edit: PlanEdit) -> list[str]:
    """The person's note, if any, and their steps numbered from 1 with their tools."""
    lines = [f"Their note: {edit.note}"] if edit.note else []
    lines.append("Their steps:")
    for number, (objective, tools) in enumerate(edit.steps, start=1):
        lines.append(
            f"  {number}. {objective}" + (f" (tools: {', '.join(tools)})" if tools else "")
        )
    return lines


def edit_notice(edit: PlanEdit, original: str) -> str:
    """What the verifier reads after the run's work: who reshaped the task, their note and
    steps, what was first asked, and that the reshaped task is the one to judge."""
    lines = [
        f"About the task: {edit.by} reshaped it when they edited the plan at its approval "
        f"(plan v{edit.version}); the task above is their plan. Judge the task as they "
        "reshaped it: what their edit took out of it is no longer asked for.",
    ]
    lines += _note_and_steps(edit)
    lines.append(f"What was first asked: {original}")
    return "\n".join(lines)


def planner_notice(edit: PlanEdit) -> str:
    """What the planner reads when it plans again after a person's edit: the task as they
    reshaped it is the one to plan for."""
    lines = [
        f"{edit.by} reshaped the task when they edited plan v{edit.version} at its approval: "
        "plan for the task as they reshaped it, not for what their edit took out.",
    ]
    lines += _note_and_steps(edit)
    return "\n".join(lines)

"""Whether a head node's split is a split at all (issue 32, finding 8): a weak model splits a
task into eight subtasks all called "A task", and a server that answers from the JSON schema
alone into one called "string". Such a split is refused with the reason, and the head node
asks once more before it does the task as a single agent (orchestration.head_node).

Plain Python, on the structure of the answer: a subtask is a placeholder when no word of it
says what to do (only words a template or a schema fills in: "task", "string", a number), and
two subtasks are the same when their words are.
"""

import re
from collections import Counter

from agents_app.engine.team import Decomposition

# Words that fill a template or a schema, never the work: a subtask made of these alone (and
# of numbers and single letters) names nothing to do.
FILLER_WORDS = frozenset(
    {
        "a",
        "an",
        "the",
        "my",
        "your",
        "this",
        "that",
        "it",
        "do",
        "some",
        "something",
        "here",
        "task",
        "tasks",
        "subtask",
        "subtasks",
        "sub",
        "step",
        "steps",
        "part",
        "item",
        "string",
        "str",
        "text",
        "description",
        "persona",
        "value",
        "example",
        "sample",
        "placeholder",
        "todo",
        "tbd",
        "tba",
        "none",
        "null",
        "n",
        "na",
        "lorem",
        "ipsum",
        "foo",
        "bar",
        "baz",
        "xxx",
        "name",
        "agent",
        "micro",
        "specialist",
        "assistant",
        "you",
        "are",
        "is",
    }
)
QUOTED_CHARS = 60
_WORD = re.compile(r"\w+")


def words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


def is_placeholder(text: str) -> bool:
    """No word of `text` names work: it is empty, or filler, numbers and single letters."""
    return all(w in FILLER_WORDS or w.isdigit() or len(w) == 1 for w in words(text))


def quoted(text: str) -> str:
    text = " ".join(text.split())
    return f'"{text[:QUOTED_CHARS]}…"' if len(text) > QUOTED_CHARS else f'"{text}"'


def decomposition_problem(plan: Decomposition) -> str | None:
    """Why the split is no split (its placeholder subtasks, its repeated ones, a micro agent's
    placeholder persona), in words a person and the model read; None when it is one."""
    problems = []
    placeholders = Counter(
        " ".join(s.description.split()) for s in plan.subtasks if is_placeholder(s.description)
    )
    if placeholders:
        said = ", ".join(
            quoted(text) + (f" {n} times" if n > 1 else "") for text, n in placeholders.items()
        )
        counted = (
            "its one subtask says"
            if len(plan.subtasks) == 1
            else f"{placeholders.total()} of its {len(plan.subtasks)} subtasks say"
        )
        problems.append(f"{counted} nothing of the work ({said})")
    seen: dict[tuple[str, ...], list[str]] = {}
    for subtask in plan.subtasks:
        key = words(subtask.description)
        if key and not is_placeholder(subtask.description):
            seen.setdefault(key, []).append(subtask.description)
    for same in seen.values():
        if len(same) > 1:
            problems.append(f"{len(same)} subtasks are the same ({quoted(same[0])})")
    personas = [
        s.micro.persona for s in plan.subtasks if s.micro and is_placeholder(s.micro.persona)
    ]
    if personas:
        said = ", ".join(sorted({quoted(p) for p in personas}))
        problems.append(f"a micro agent's persona says nothing of who it is ({said})")
    if not problems:
        return None
    return "; ".join(problems)

"""The demo as a team's head node: a task split into three distinct subtasks, a pipeline. A
researcher looks at the workspace, a builder writes the report, and a micro agent (a reviewer
persona that may only read) reviews it; the head node then puts their results together.
Each subtask is worded so the demo's task phases (tasks.py) do it as a child."""

import re
from typing import Any

from agents_app.demo.reading import json_reply, text_of

REPORT = "report.md"
REVIEWER = (
    "You are a strict reviewer, a micro agent: read the report, say what it covers and what it "
    "lacks, then return through finish_task."
)
# Which profile each subtask prefers, by role (seed 001's roles), then any other.
_ROLES = ("research", "builder")
_MEMBER = re.compile(r"^- (?P<name>[^()\n]+?) \((?P<role>[\w-]+)\):", re.MULTILINE)


def team_members(system: str) -> list[tuple[str, str]]:
    """The team as the head node's prompt lists it: (profile name, role)."""
    team = system.split("The team:", 1)[-1]
    return [(m["name"].strip(), m["role"]) for m in _MEMBER.finditer(team)]


def _preferred(members: list[tuple[str, str]], role: str, taken: set[str]) -> str:
    workers = [(name, r) for name, r in members if r != "orchestrator" and name not in taken]
    for name, member_role in workers:
        if member_role == role:
            return name
    return workers[0][0] if workers else ""


def decomposition_reply(task: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    members = team_members(text_of(messages[0]) if messages else "")
    taken: set[str] = set()
    preferred = []
    for role in _ROLES:
        name = _preferred(members, role, taken)
        taken.add(name)
        preferred.append(name)
    topic = " ".join(task.split())[:200].rstrip(".") or "the task"
    subtasks = [
        {
            "description": "List the files in the workspace and report what is there",
            "depends_on": [],
            "preferred_profile": preferred[0],
        },
        {
            "description": f"Write {REPORT} containing Report on: {topic}",
            "depends_on": [0],
            "preferred_profile": preferred[1],
        },
        {
            "description": f"Read {REPORT} and review it",
            "depends_on": [1],
            "micro": {"persona": REVIEWER, "available_actions": ["read_file"], "max_steps": 4},
        },
    ]
    return {
        "reasoning": (
            "Three parts, each for whom it suits: a researcher looks first, a builder writes the "
            "report, a reviewer persona (a micro agent that may only read) checks it."
        ),
        **json_reply(
            {
                "pattern": "pipeline",
                "subtasks": subtasks,
                "reasoning": "look, write, review: each part needs the one before",
            }
        ),
    }

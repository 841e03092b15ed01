"""Reads of agent profiles and of teams. Profiles are the site's shared configuration, not
anyone's own: everyone signed in reads the same ones, so `user` scopes nothing there (it is
asked for as every selector asks for it). A team's tree and its messages are its owner's."""

from typing import Any

from django.db.models import Q, QuerySet

from agents_app.connections.services import connection_ensure_default
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import AgentMessage, AgentProfile, LLMConnection, Run
from agents_app.runs.selectors import run_get


def profiles_for(user: Any, *, role: str | None = None) -> QuerySet[AgentProfile]:
    """Every profile by name, or those of one role, with their connections."""
    profiles = AgentProfile.objects.select_related("connection").order_by("name")
    return profiles if role is None else profiles.filter(role=role)


def profile_get(*, user: Any, profile_id: int) -> AgentProfile:
    """The profile, or DomainError NOT_FOUND."""
    profile = profiles_for(user).filter(pk=profile_id).first()
    if profile is None:
        raise DomainError(
            ErrorCode.NOT_FOUND, f"Profile {profile_id} not found", {"profile_id": profile_id}
        )
    return profile


def default_connection() -> LLMConnection | None:
    """The connection a profile without one runs on now (None when no LLM is configured)."""
    return connection_ensure_default()


# --- a team's tree and its timeline ---------------------------------------------------------


def tree_runs(*, user: Any, run_id: int) -> tuple[Run, list[Run]]:
    """(`run_id`'s run, every run of its tree in tree order: the root, then each child followed
    by its own children, siblings by their subtask's index). A run outside any tree is a tree
    of one. Raises DomainError NOT_FOUND for another user's run, as for a missing one."""
    run = run_get(user=user, run_id=run_id)
    runs = list(
        Run.objects.filter(owner=user)
        .filter(Q(pk=run.tree_root_id) | Q(root_id=run.tree_root_id))
        .select_related("task", "profile", "parent_step")
    )
    return run, tree_order(runs, run.tree_root_id)


def tree_order(runs: list[Run], root_id: int) -> list[Run]:
    """`runs` depth first from the root; each run's children by subtask index, then id."""
    children: dict[int | None, list[Run]] = {}
    for r in runs:
        children.setdefault(r.parent_id, []).append(r)
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.parent_step.index if r.parent_step else -1, r.pk))
    ordered: list[Run] = []
    stack = [r for r in runs if r.pk == root_id]
    while stack:
        current = stack.pop()
        ordered.append(current)
        stack.extend(reversed(children.get(current.pk, [])))
    return ordered


def tree_messages(*, user: Any, run_id: int) -> QuerySet[AgentMessage]:
    """The messages of `run_id`'s tree (its head node's timeline) in the order they were
    written. Raises DomainError NOT_FOUND for another user's run, as for a missing one."""
    run = run_get(user=user, run_id=run_id)
    return AgentMessage.objects.filter(root_id=run.tree_root_id, root__owner=user).order_by("pk")

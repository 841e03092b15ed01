"""The JSON shapes of teams, built once for REST and MCP: an agent profile, a run of a tree,
a message between two runs."""

from typing import Any

from agents_app.models import PROFILE_BUDGETS, AgentMessage, AgentProfile, LLMConnection, Run


def effective_connection(
    profile: AgentProfile, default: LLMConnection | None
) -> LLMConnection | None:
    """The connection its runs use now: its own, or the default one when it names none."""
    return profile.connection or default


def effective_model(profile: AgentProfile, default: LLMConnection | None) -> str:
    """The model its runs ask for now: its own, or its connection's ("" with no connection)."""
    if profile.model:
        return profile.model
    connection = effective_connection(profile, default)
    return connection.model if connection is not None else ""


def _connection_ref(connection: LLMConnection | None) -> dict[str, Any] | None:
    if connection is None:
        return None
    return {"id": connection.pk, "name": connection.name, "model": connection.model}


def profile_payload(profile: AgentProfile, default: LLMConnection | None) -> dict[str, Any]:
    """A profile as set (`connection` null: the default one; `model` "": the connection's), what
    that comes to now (`effective`: given `default`, the default connection), and its budgets
    per run (null: the RUN_MAX_* / AGENT_RUN_TIMEOUT setting)."""
    return {
        "id": profile.pk,
        "name": profile.name,
        "role": profile.role,
        "persona": profile.persona,
        "connection": _connection_ref(profile.connection),
        "model": profile.model,
        "effective": {
            "connection": _connection_ref(effective_connection(profile, default)),
            "model": effective_model(profile, default),
        },
        "temperature": profile.temperature,
        "specialisations": list(profile.specialisations),
        "allowed_tools": list(profile.allowed_tools),
        "excluded_tools": list(profile.excluded_tools),
        "concurrency_limit": profile.concurrency_limit,
        "budgets": {field: getattr(profile, field) for field in PROFILE_BUDGETS},
        "created_at": profile.created_at.isoformat(),
        "updated_at": profile.updated_at.isoformat(),
    }


def tree_node(run: Run) -> dict[str, Any]:
    """A run as its team's tree shows it (`task`, `profile` and `parent_step` selected): its
    place (parent, depth, the index of the parent's step it does), its subtask (the root: the
    team's task), its status, what it spent and its link."""
    return {
        "id": run.pk,
        "kind": run.kind,
        "status": run.status,
        "profile": run.profile.name if run.profile is not None else None,
        "parent_id": run.parent_id,
        "root_id": run.root_id,
        "depth": run.depth,
        "step_index": run.parent_step.index if run.parent_step is not None else None,
        "subtask": run.task.text,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "tool_calls": run.tool_calls_made,
        },
        "link": f"/api/v1/runs/{run.pk}",
    }


def message_payload(message: AgentMessage) -> dict[str, Any]:
    """A message of a tree's timeline: who sent it to whom (runs and display names), its type,
    payload and correlation id (an assignment and its result share one)."""
    return {
        "id": message.pk,
        "root_id": message.root_id,
        "sender_id": message.sender_id,
        "recipient_id": message.recipient_id,
        "from_agent": message.from_agent,
        "to_agent": message.to_agent,
        "type": message.type,
        "payload": message.payload,
        "correlation_id": str(message.correlation_id),
        "created_at": message.created_at,
    }

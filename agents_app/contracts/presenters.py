"""Every JSON shape of a contract agent, built once: an agent with its budgets and status, and
one of its attempts. REST and MCP both use these."""

from typing import Any

from django.conf import settings

from agents_app.contracts.logs import log_path
from agents_app.contracts.selectors import AgentState, agent_state
from agents_app.contracts.services import BUDGETS
from agents_app.models import ContractAgent, Run

# Where a budget left null comes from at each start.
BUDGET_SETTINGS = {
    "max_turns": "CONTRACT_MAX_TURNS",
    "max_tokens": "CONTRACT_MAX_TOKENS",
    "max_seconds": "CONTRACT_MAX_SECONDS",
}


def budgets_payload(agent: ContractAgent) -> dict[str, Any]:
    """The budgets the next attempt gets: the agent's own, or the setting's default for the
    ones it leaves null (named in `defaults`)."""
    defaults = [field for field in BUDGETS if getattr(agent, field) is None]
    return {
        **{
            field: getattr(agent, field) or getattr(settings, BUDGET_SETTINGS[field])
            for field in BUDGETS
        },
        "defaults": defaults,
    }


def attempt_payload(run: Run) -> dict[str, Any]:
    """One attempt: its number, run and transcript, how it stands (the run's status, and the
    agent's status it gives: running, completed, stopped or failed, with the reason), what it
    used (tokens, cycles: the cycle it is in or ended in; 0 before it started) against its
    budgets, and its log file's name. Give the run with its task and conversation__agent."""
    outcome = agent_state(run.conversation.agent, run)
    return {
        "number": run.task.context.get("attempt", run.attempt),
        "run_id": run.pk,
        "conversation_id": run.conversation_id,
        "status": run.status,
        "outcome": outcome.status,
        "reason": outcome.reason,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "created_at": run.created_at.isoformat(),
        "tokens_used": run.total_tokens,
        "cycles": run.replans + 1 if run.started_at else 0,
        "budgets": {
            "max_turns": run.task.context.get("max_turns", settings.CONTRACT_MAX_TURNS),
            "max_tokens": run.max_tokens,
            "max_seconds": run.task.max_seconds,
        },
        "log_name": log_path(run).name,
    }


def agent_payload(agent: ContractAgent, state: AgentState | None = None) -> dict[str, Any]:
    """An agent with its connection (null: the default one), the budgets of its next attempt,
    its status (ready, running, stopped, completed, failed) with the reason, and its latest
    attempt (null: never started). Give `state` (agent_state) when it is known."""
    state = state or agent_state(agent)
    connection = agent.connection
    return {
        "id": agent.pk,
        "name": agent.name,
        "contract": agent.contract,
        "connection": (
            None
            if connection is None
            else {"id": connection.pk, "name": connection.name, "model": connection.model}
        ),
        "budgets": budgets_payload(agent),
        "status": state.status,
        "reason": state.reason,
        "attempt": None if state.run is None else attempt_payload(state.run),
        "is_open": agent.is_open,
        "created_at": agent.created_at.isoformat(),
        "updated_at": agent.updated_at.isoformat(),
    }


def agent_now(agent: ContractAgent) -> dict[str, Any]:
    """The agent as its row is now (read again: a service changed it through another
    instance)."""
    agent.refresh_from_db()
    return agent_payload(agent)

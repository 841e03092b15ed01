"""What a contract agent's tab on the chat page renders: its state and status label, the
latest attempt's output, the earlier attempts and the contract form with its budgets. The chat
page (web.chat) draws the tab with it; the agent views (web.agent_tabs) answer with that page."""

from typing import Any

from django.conf import settings

from agents_app.contracts.presenters import BUDGET_SETTINGS, budgets_payload
from agents_app.contracts.selectors import STATUS_LABELS, AgentState, agent_state, attempts
from agents_app.contracts.services import BUDGETS
from agents_app.core.errors import DomainError
from agents_app.models import ContractAgent, Run
from agents_app.web.agent_output import attempt_output

# The contract is shown cut to this many characters while it runs (expandable).
CONTRACT_SHOWN = 60
ATTEMPTS_SHOWN = 20


def _number(run: Run) -> int:
    return int(run.task.context.get("attempt", run.attempt))


def agent_context(
    agent: ContractAgent,
    *,
    error: DomainError | None = None,
    form: dict[str, str] | None = None,
    connections: list[tuple[str, str]],
) -> dict[str, Any]:
    """What an agent's tab renders: its state, the latest attempt's output, the earlier
    attempts, and the form (the contract and budgets as posted when there is an error)."""
    state = agent_state(agent)
    run = state.run
    earlier: list[tuple[int, AgentState, Run]] = []
    if run is not None:
        for old in (
            attempts(agent)
            .exclude(pk=run.pk)
            .select_related("conversation__agent", "task")[:ATTEMPTS_SHOWN]
        ):
            earlier.append((_number(old), agent_state(agent, old), old))
    values = form or {
        "contract": agent.contract,
        "connection": "" if agent.connection_id is None else str(agent.connection_id),
        **{
            field: "" if getattr(agent, field) is None else str(getattr(agent, field))
            for field in BUDGETS
        },
    }
    return {
        "agent": agent,
        "state": state,
        "status_label": STATUS_LABELS[state.status],
        "attempt": run,
        "attempt_number": _number(run) if run is not None else None,
        "output": attempt_output(run) if run is not None else None,
        "earlier": earlier,
        "budgets": budgets_payload(agent),
        **form_context(values),
        "agent_error": error,
        "contract_shown": CONTRACT_SHOWN,
        # After this long with nothing from the model, the tab says it waits for it (agent.js).
        "silence_after": settings.LLM_SILENCE_NOTICE_SECONDS,
        "connections": connections,
    }


BUDGET_LABELS = {
    "max_turns": ("Turns", "cycles"),
    "max_tokens": ("Tokens", "tokens"),
    "max_seconds": ("Seconds", "s"),
}


def form_context(form: dict[str, str]) -> dict[str, Any]:
    """The contract form's values, and each budget as (field, label, unit, default, value)."""
    return {
        "form": form,
        "budget_fields": [
            (
                field,
                *BUDGET_LABELS[field],
                getattr(settings, BUDGET_SETTINGS[field]),
                form.get(field, ""),
            )
            for field in BUDGETS
        ],
    }

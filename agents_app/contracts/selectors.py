"""Reads of contract agents, scoped to their owner, and what state each is in."""

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from django.db.models import Max, QuerySet

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import ContractAgent, Run, RunKind, RunStatus


def agents_for(user: Any) -> QuerySet[ContractAgent]:
    return ContractAgent.objects.filter(owner=user).select_related("connection")


def agent_get(*, user: Any, agent_id: int) -> ContractAgent:
    """The user's agent, or DomainError NOT_FOUND (also for another user's)."""
    agent = agents_for(user).filter(pk=agent_id).first()
    if agent is None:
        raise DomainError(
            ErrorCode.NOT_FOUND, f"Agent {agent_id} not found", {"agent_id": agent_id}
        )
    return agent


def attempts(agent: ContractAgent) -> QuerySet[Run]:
    """The agent's attempts, newest first."""
    return Run.objects.filter(kind=RunKind.CONTRACT, conversation__agent=agent).order_by("-id")


def latest_attempt(agent: ContractAgent) -> Run | None:
    return attempts(agent).select_related("conversation__agent", "task").first()


def attempt_get(*, agent: ContractAgent, number: int) -> Run:
    """The agent's attempt `number` (1 is its first Start), or DomainError NOT_FOUND."""
    run = (
        attempts(agent)
        .filter(task__context__attempt=number)
        .select_related("conversation__agent", "task")
        .first()
    )
    if run is None:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"{agent.name} has no attempt {number}",
            {"agent_id": agent.pk, "attempt": number},
        )
    return run


def attempt_of(agent: ContractAgent, number: int | None) -> Run:
    """Attempt `number`, or the latest for None; DomainError NOT_FOUND when there is none."""
    if number is not None:
        return attempt_get(agent=agent, number=number)
    run = latest_attempt(agent)
    if run is None:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"{agent.name} has no attempt yet: start it first",
            {"agent_id": agent.pk},
        )
    return run


def latest_attempts(agents: list[ContractAgent]) -> dict[int, Run]:
    """For a page of agents, in two queries: each one's latest attempt (the agents never
    started are missing)."""
    newest = (
        Run.objects.filter(kind=RunKind.CONTRACT, conversation__agent__in=agents)
        .values("conversation__agent")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    runs = Run.objects.filter(pk__in=list(newest)).select_related("conversation__agent", "task")
    return {run.conversation.agent_id: run for run in runs}


class AgentStatus(StrEnum):
    """Seed 002's statuses of a contract agent, given by its latest attempt (no column holds
    them: agent_state derives them). The REST schema's `AgentStatus` literal spells the same
    values (a test checks)."""

    READY = "ready"  # never started
    RUNNING = "running"  # its latest attempt has not ended
    STOPPED = "stopped"  # by the person, a budget, or stuck
    COMPLETED = "completed"  # the contract is met
    FAILED = "failed"  # any other error


@dataclass(frozen=True)
class AgentState:
    """An agent's status; `reason` says why an attempt stopped or failed (the person, a
    budget, stuck, the error)."""

    status: AgentStatus
    reason: str = ""
    run: Run | None = None


# The one word a person reads for each status, on the agent's tab and in its log file alike.
STATUS_LABELS = {
    AgentStatus.READY: "Ready",
    AgentStatus.RUNNING: "Running",
    AgentStatus.STOPPED: "Stopped",
    AgentStatus.COMPLETED: "Completed",
    AgentStatus.FAILED: "Failed",
}


def agent_state(agent: ContractAgent, run: Run | None = None) -> AgentState:
    run = run or latest_attempt(agent)
    if run is None:
        return AgentState(AgentStatus.READY)
    if not run.is_terminal:
        return AgentState(AgentStatus.RUNNING, run=run)
    status, reason = ended_as(
        status=run.status,
        error_code=run.error_code,
        error_message=run.error_message,
        response=run.final_response,
    )
    return AgentState(status, reason, run)


def ended_as(
    *, status: str, error_code: str | None, error_message: str, response: str
) -> tuple[AgentStatus, str]:
    """The agent's status and reason for an attempt that ended with the run `status` and
    error: what the tab shows and the log's last line says."""
    if status == RunStatus.SUCCEEDED:
        return AgentStatus.COMPLETED, response
    if status == RunStatus.CANCELLED:
        return AgentStatus.STOPPED, "stopped by the person"
    if error_code == ErrorCode.BUDGET_EXCEEDED:
        return AgentStatus.STOPPED, f"budget exhausted: {error_message}"
    if error_code == ErrorCode.EXECUTION_TIMEOUT:
        return AgentStatus.STOPPED, f"budget exhausted (time): {error_message}"
    if error_code == ErrorCode.AGENT_STUCK:
        return AgentStatus.STOPPED, f"stuck: {error_message}"
    return AgentStatus.FAILED, f"{error_code}: {error_message}"


def agent_states(agents: list[ContractAgent]) -> dict[int, AgentState]:
    """For a page of agents, in two queries: what agent_state gives for each."""
    latest = latest_attempts(agents)
    return {
        agent.pk: agent_state(agent, latest[agent.pk])
        if agent.pk in latest
        else AgentState(AgentStatus.READY)
        for agent in agents
    }

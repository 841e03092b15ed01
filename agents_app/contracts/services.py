"""State changes of contract agents asked for by people (REST, MCP, pages): create, edit,
start, stop, restart. Each is one transaction with its AuditEvent."""

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents_app.connections.services import connection_for_task
from agents_app.contracts.selectors import AgentStatus, agent_state, attempts
from agents_app.conversations.transcript import place
from agents_app.core.audit import (
    AGENT_CREATE,
    AGENT_START,
    AGENT_STOP,
    AGENT_UPDATE,
    audit_record,
)
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.event_payloads import CancelRequestedPayload
from agents_app.core.events import EventType
from agents_app.core.inputs import (
    STORED_INT_MAX,
    flag_field,
    refuse_unknown,
    text_field,
    text_problem,
)
from agents_app.models import (
    ContractAgent,
    Conversation,
    ConversationEntry,
    EntryKind,
    Run,
    RunKind,
    Task,
)
from agents_app.runs.admission import admission_check, run_admit
from agents_app.runs.control import refuse_while_halted
from agents_app.runs.services import run_cancel, run_create
from agents_app.runs.writer import locked_run

CONTRACT_MAX_CHARS = 20_000
NAME_CHARS = 100
BUDGETS = ("max_turns", "max_tokens", "max_seconds")


def _contract(value: Any) -> str:
    return text_field(
        value, "contract", max_chars=CONTRACT_MAX_CHARS, empty="The contract is empty"
    )


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or text_problem(value):
        raise DomainError(ErrorCode.VALIDATION_ERROR, "The name is empty", {"field": "name"})
    if len(value) > NAME_CHARS:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"The name is at most {NAME_CHARS} characters",
            {"field": "name", "max_length": NAME_CHARS},
        )
    return value.strip()


def _budget(field: str, value: Any) -> int | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= STORED_INT_MAX
    ):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"{field} is a whole number from 1 to {STORED_INT_MAX}, or null",
            {"field": field},
        )
    return value


@transaction.atomic
def agent_create(
    *,
    owner: Any,
    interface: str,
    contract: Any,
    name: Any = None,
    connection: int | str | None = None,
    **budgets: Any,
) -> ContractAgent:
    """A new agent, Ready. `name` defaults to Agent-N; budgets (max_turns, max_tokens,
    max_seconds) default to the CONTRACT_MAX_* settings at each start."""
    refuse_unknown(budgets, BUDGETS)
    contract = _contract(contract)
    if name in (None, ""):
        name = f"Agent-{ContractAgent.objects.filter(owner=owner).count() + 1}"
    chosen = connection_for_task(connection)
    agent = ContractAgent.objects.create(
        owner=owner,
        name=_name(name),
        contract=contract,
        connection=chosen if connection not in (None, "") else None,
        **{field: _budget(field, budgets.get(field)) for field in BUDGETS},
    )
    audit_record(
        action=AGENT_CREATE,
        interface=interface,
        actor=owner,
        target=str(agent.pk),
        details={"name": agent.name, "connection_id": chosen.pk},
    )
    return agent


@transaction.atomic
def agent_update(
    *, agent: ContractAgent, actor: Any, interface: str, **changes: Any
) -> ContractAgent:
    """Edit name, contract, connection, budgets or is_open. The contract and the budgets are
    fixed while an attempt runs (CONFLICT); they apply from the next start. Audited with the
    fields changed."""
    allowed = {"name", "contract", "connection", "is_open", *BUDGETS}
    refuse_unknown(changes, allowed)
    agent = ContractAgent.objects.select_for_update().get(pk=agent.pk)
    if set(changes) - {"name", "is_open"} and agent_state(agent).status == AgentStatus.RUNNING:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"{agent.name} is running; stop it before changing its contract",
            {"agent_id": agent.pk, "status": AgentStatus.RUNNING},
        )
    if "name" in changes:
        agent.name = _name(changes["name"])
    if "contract" in changes:
        agent.contract = _contract(changes["contract"])
    if "connection" in changes:
        value = changes["connection"]
        agent.connection = None if value in (None, "") else connection_for_task(value)
    if "is_open" in changes:
        agent.is_open = flag_field(changes["is_open"], "is_open")
    for field in BUDGETS:
        if field in changes:
            setattr(agent, field, _budget(field, changes[field]))
    agent.updated_at = timezone.now()
    agent.save()
    audit_record(
        action=AGENT_UPDATE,
        interface=interface,
        actor=actor,
        target=str(agent.pk),
        details={"fields": sorted(changes)},
    )
    return agent


def agent_start(*, agent: ContractAgent, actor: Any, interface: str) -> Run:
    """Start an attempt (Start, or Restart after a stop, a failure or completion): a new
    transcript beginning with the contract, and a queued Run (kind contract). Raises CONFLICT
    while an attempt runs, SERVICE_UNAVAILABLE while the kill switch is engaged, RATE_LIMITED
    past the person's runs waiting their turn."""
    refuse_while_halted()
    admission_check(agent.owner_id)
    with transaction.atomic():
        agent = ContractAgent.objects.select_for_update().get(pk=agent.pk)
        state = agent_state(agent)
        if state.status == AgentStatus.RUNNING:
            raise DomainError(
                ErrorCode.CONFLICT,
                f"{agent.name} is already running (run {state.run.pk})",
                {"agent_id": agent.pk, "run_id": state.run.pk},
            )
        number = attempts(agent).count() + 1
        conversation = Conversation.objects.create(
            owner=agent.owner,
            agent=agent,
            title=f"{agent.name} attempt {number}",
            connection=agent.connection,
            is_open=False,
        )
        task = Task.objects.create(
            owner=agent.owner,
            text=agent.contract,
            context={
                "agent_id": agent.pk,
                "attempt": number,
                "max_turns": agent.max_turns or settings.CONTRACT_MAX_TURNS,
            },
            fast_path=True,
            connection=agent.connection,
            max_tokens=agent.max_tokens or settings.CONTRACT_MAX_TOKENS,
            max_seconds=agent.max_seconds or settings.CONTRACT_MAX_SECONDS,
        )
        run = run_create(task=task, kind=RunKind.CONTRACT, conversation=conversation, first=True)
        place(
            [
                ConversationEntry(
                    conversation=conversation, kind=EntryKind.USER, text=agent.contract, run=run
                )
            ],
            conversation.pk,
        )
        agent.updated_at = timezone.now()
        agent.save(update_fields=["updated_at"])
        audit_record(
            action=AGENT_START,
            interface=interface,
            actor=actor,
            run=run,
            target=str(agent.pk),
            details={"attempt": number, "restart": number > 1},
        )
        run_admit(run)
    return run


def agent_stop(*, agent: ContractAgent, actor: Any, interface: str, now: bool = False) -> Run:
    """Stop the running attempt: the request in flight finishes, no further one is made, the
    output stays. With `now` (Stop now, also after a Stop), the request in flight is cut at its
    next streamed piece instead, what the model had written kept in the transcript. Raises
    CONFLICT when nothing runs."""
    state = agent_state(agent)
    if state.status != AgentStatus.RUNNING:
        raise DomainError(
            ErrorCode.CONFLICT,
            f"{agent.name} is not running ({state.status})",
            {"agent_id": agent.pk, "status": state.status},
        )
    with transaction.atomic():
        audit_record(
            action=AGENT_STOP,
            interface=interface,
            actor=actor,
            run=state.run,
            target=str(agent.pk),
            details={"now": True} if now else {},
        )
        if now:
            # The worker lets the request in flight finish unless a cancel says `now`
            # (worker.hooks.DatabaseHooks.stop_now); setting the flag signals it.
            with locked_run(state.run.pk) as w:
                if not w.run.is_terminal:
                    w.set(cancel_requested=True)
                    w.event(EventType.CANCEL_REQUESTED, CancelRequestedPayload(now=True))
        return run_cancel(run=state.run, actor=actor, interface=interface)


def agent_restart(*, agent: ContractAgent, actor: Any, interface: str, **changes: Any) -> Run:
    """Restart after a stop, a failure or completion: apply `changes` (as agent_update: the
    contract, budgets...) and start a new attempt, both or neither. Raises CONFLICT while an
    attempt runs and for an agent never started (Start it), SERVICE_UNAVAILABLE while the kill
    switch is engaged, RATE_LIMITED past the person's runs waiting their turn."""
    refuse_while_halted()
    admission_check(agent.owner_id)
    with transaction.atomic():
        state = agent_state(ContractAgent.objects.select_for_update().get(pk=agent.pk))
        if state.status in (AgentStatus.READY, AgentStatus.RUNNING):
            verb = "start it" if state.status == AgentStatus.READY else "stop it first"
            raise DomainError(
                ErrorCode.CONFLICT,
                f"{agent.name} is {state.status}: nothing to restart; {verb}",
                {"agent_id": agent.pk, "status": state.status},
            )
        if changes:
            agent = agent_update(agent=agent, actor=actor, interface=interface, **changes)
        return agent_start(agent=agent, actor=actor, interface=interface)

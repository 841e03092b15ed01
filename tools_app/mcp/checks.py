"""Staff's "Check now": connect to servers from this process, list their tools, record the
outcome and audit it. Used by the admin's bulk action and by the button on a server's page.

The check runs here, in the process that was asked (a web process has no pool of its own):
`client.check_servers` opens a session with the MCP SDK, and `store.DatabaseStore` records the
tools and the status in the database, which every process reads, and tells open pages. The
workers' pools keep their own sessions and record what they see as they go.
"""

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents_app.core.audit import MCP_SERVER_CHECK, AuditInterface, audit_record
from tools_app.models import MCPServer, ServerStatus

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    status: str
    error: str = ""
    tool_count: int = 0

    @property
    def ok(self) -> bool:
        return self.status == ServerStatus.ACTIVE

    def summary(self) -> str:
        """What staff read: "Connected: 14 tools", "Broken: <why>", "Disabled: not checked"."""
        if self.status == ServerStatus.ACTIVE:
            return f"Connected: {self.tool_count} tool{'' if self.tool_count == 1 else 's'}"
        if self.status == ServerStatus.DISABLED:
            return "Disabled: not checked (enable it first)"
        if self.status == "check_failed":
            return f"Checking failed: {self.error}"
        return f"Broken: {self.error or 'the check failed'}"


def servers_check(*, server_ids: list[int], actor: Any) -> list[CheckOutcome]:
    """Check each server now (disabled ones are left alone) and record one `mcp_server.check`
    AuditEvent per server, with the outcome. Returns the outcomes by name. Never raises for a
    server that is down: that is an outcome; a failure of the check itself makes every
    server's outcome "check_failed" with the error."""
    from tools_app.mcp.client import check_servers

    try:
        check_servers(server_ids)
    except Exception as exc:
        logger.exception("Checking MCP servers %s failed", server_ids)
        names = MCPServer.objects.filter(pk__in=server_ids).values_list("name", flat=True)
        outcomes = [CheckOutcome(name, "check_failed", str(exc)) for name in sorted(names)]
    else:
        outcomes = [
            CheckOutcome(
                server.name,
                server.status,
                server.last_error if server.status == ServerStatus.BROKEN else "",
                server.tool_count,
            )
            for server in MCPServer.objects.filter(pk__in=server_ids).order_by("name")
        ]
    # The check wrote its results from threads of its own, so the audit rows follow it in a
    # transaction of their own, with the outcome.
    with transaction.atomic():
        for outcome in outcomes:
            audit_record(
                action=MCP_SERVER_CHECK,
                interface=AuditInterface.ADMIN,
                actor=actor,
                target=outcome.name,
                details={"status": outcome.status, "error": outcome.error},
            )
    return outcomes

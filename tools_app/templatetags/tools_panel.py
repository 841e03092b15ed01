from django import template

from tools_app.models import MCPServer, ServerStatus

register = template.Library()


def panel_context() -> dict:
    servers = list(MCPServer.objects.order_by("name"))
    return {
        "servers": servers,
        "active": sum(s.status == ServerStatus.ACTIVE for s in servers),
        "broken": sum(s.status == ServerStatus.BROKEN for s in servers),
        # Never checked yet: neither counted up nor down, and never shown in red.
        "unchecked": sum(s.status == ServerStatus.UNCHECKED for s in servers),
    }


@register.inclusion_tag("tools/partials/servers_panel.html", takes_context=True)
def servers_panel(context: template.Context) -> dict:
    """The header's MCP server dropdown: each server's status, and for staff why a broken one is
    broken (a server's error and stderr may quote its configuration)."""
    return {**panel_context(), "user": context.get("user")}

"""The header's LLM state, for staff: the default connection as last checked, never probed
by the page (a server that hangs must not hold up every page: /api/v1/health probes)."""

from django import template

from agents_app.connections.freshness import LLMState, default_connection, llm_state

register = template.Library()

DOTS = {
    LLMState.CONNECTED: "dot-active",
    LLMState.DOWN: "dot-broken",
    LLMState.UNCHECKED: "dot-unchecked",
    LLMState.NOT_CONFIGURED: "dot-broken",
}


@register.inclusion_tag("agents/partials/llm_state.html")
def llm_state_badge() -> dict:
    """The default LLM connection's state, its dot, and (in the title) its reason and last
    check: the page shows it to staff only."""
    connection = default_connection()
    state = llm_state(connection)
    return {
        "connection": connection,
        "state": state.value.replace("_", " "),
        "dot": DOTS[state],
    }

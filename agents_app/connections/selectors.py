"""What people may pick from: the enabled, usable connections, the default first."""

from django.db.models import QuerySet

from agents_app.connections.services import connection_ensure_default
from agents_app.models import LLMConnection


def connections_enabled() -> QuerySet[LLMConnection]:
    """Every enabled connection with a base URL and model, the default first, then by name.
    Connections are the site's, not a person's: everyone signed in sees the same list."""
    connection_ensure_default()
    return (
        LLMConnection.objects.filter(enabled=True)
        .exclude(base_url="")
        .exclude(model="")
        .order_by("-is_default", "name")
    )

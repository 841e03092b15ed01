"""System checks of AgentDesk's own settings (`manage.py check --deploy` runs the deploy ones)."""

from django.conf import settings
from django.core.checks import Tags, Warning, register


@register(Tags.security, deploy=True)
def secret_key_is_shared(app_configs, **kwargs):
    if not getattr(settings, "SECRET_KEY_GENERATED", False):
        return []
    return [
        Warning(
            "SECRET_KEY is not set: this machine uses the key generated into var/secret_key.",
            hint="Set SECRET_KEY to the same value for every web and worker process on every "
            "machine, or sessions and CSRF tokens made on one are refused by another.",
            id="agentdesk.W001",
        )
    ]

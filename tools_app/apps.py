from django.apps import AppConfig
from django.db.models.signals import post_migrate


def sync_builtin_rows(sender: AppConfig, **kwargs) -> None:
    """Builtin tools get their rows after every migrate, so staff can disable them or override
    their approval level in the admin."""
    from tools_app.mcp.discovery import sync_builtin_tools
    from tools_app.process_registry import get_registry

    sync_builtin_tools(get_registry())


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "Tools"

    def ready(self) -> None:
        post_migrate.connect(sync_builtin_rows, sender=self)

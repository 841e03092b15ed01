"""The process-wide tool registry with the builtin tools, created on first use. Kept apart
from `registry` so that the builtin tools can import the registry's types without a circle."""

import threading

from tools_app.registry import ToolRegistry

_default_registry: ToolRegistry | None = None


_default_lock = threading.Lock()


def get_registry() -> ToolRegistry:
    """The process-wide registry, with the builtin tools registered on first use."""
    global _default_registry
    with _default_lock:
        if _default_registry is None:
            from django.conf import settings

            from tools_app.builtin import register_builtin_tools

            registry = ToolRegistry()
            register_builtin_tools(
                registry,
                file_max_bytes=settings.FILE_TOOL_MAX_BYTES,
                http_max_bytes=settings.HTTP_TOOL_MAX_BYTES,
                http_timeout=settings.HTTP_TOOL_TIMEOUT,
                http_allow_private=settings.HTTP_TOOL_ALLOW_PRIVATE,
            )
            _default_registry = registry
        return _default_registry

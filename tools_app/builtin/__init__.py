"""The builtin tools: files confined to the run's workspace, a guarded HTTP GET, finish_task and
start_micro_agent."""

from tools_app.builtin.control import MICRO_AGENT_TOOL, FinishTaskTool, MicroAgentTool
from tools_app.builtin.files import (
    LIST_MAX_ENTRIES,
    WORKSPACE_RULE,
    ListFilesTool,
    ReadFileTool,
    WriteFileTool,
)
from tools_app.builtin.http import (
    HTTP_MAX_REDIRECTS,
    HTTP_ORIGIN_BOUND_HEADERS,
    HTTP_REDIRECT_STATUSES,
    HTTP_RESPONSE_HEADERS,
    HttpGetTool,
)
from tools_app.registry import ToolRegistry

__all__ = [
    "HTTP_MAX_REDIRECTS",
    "HTTP_ORIGIN_BOUND_HEADERS",
    "HTTP_REDIRECT_STATUSES",
    "HTTP_RESPONSE_HEADERS",
    "LIST_MAX_ENTRIES",
    "MICRO_AGENT_TOOL",
    "WORKSPACE_RULE",
    "FinishTaskTool",
    "HttpGetTool",
    "ListFilesTool",
    "MicroAgentTool",
    "ReadFileTool",
    "WriteFileTool",
    "register_builtin_tools",
]


def register_builtin_tools(
    registry: ToolRegistry,
    *,
    file_max_bytes: int,
    http_max_bytes: int,
    http_timeout: float,
    http_allow_private: bool,
) -> None:
    for tool in (
        ReadFileTool(max_bytes=file_max_bytes),
        WriteFileTool(max_bytes=file_max_bytes),
        ListFilesTool(),
        HttpGetTool(
            max_bytes=http_max_bytes, timeout=http_timeout, allow_private=http_allow_private
        ),
        FinishTaskTool(),
        MicroAgentTool(),
    ):
        registry.register(tool)

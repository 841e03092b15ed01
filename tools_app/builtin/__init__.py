"""The builtin tools: files confined to the run's workspace, a guarded HTTP GET, finish_task,
start_micro_agent, and code run in the sandbox (run_python, run_command, git, git_commit)."""

from tools_app.builtin.code import GitCommitTool, GitTool, RunCommandTool, RunPythonTool
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
from tools_app.sandbox import Sandbox, sandbox_from_settings

__all__ = [
    "HTTP_MAX_REDIRECTS",
    "HTTP_ORIGIN_BOUND_HEADERS",
    "HTTP_REDIRECT_STATUSES",
    "HTTP_RESPONSE_HEADERS",
    "LIST_MAX_ENTRIES",
    "MICRO_AGENT_TOOL",
    "WORKSPACE_RULE",
    "FinishTaskTool",
    "GitCommitTool",
    "GitTool",
    "HttpGetTool",
    "ListFilesTool",
    "MicroAgentTool",
    "ReadFileTool",
    "RunCommandTool",
    "RunPythonTool",
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
    sandbox: Sandbox | None = None,
    commands: tuple[str, ...] | None = None,
    code_tools: bool | None = None,
    micro_agent_tool: bool | None = None,
) -> None:
    """Register every builtin tool. The code tools use `sandbox` and the `commands` allowed to
    run_command, both from settings (SANDBOX_*) when not given; `code_tools` False (default:
    SANDBOX_TOOLS) leaves them out, `micro_agent_tool` False (MICRO_AGENT_TOOL)
    start_micro_agent."""
    from django.conf import settings

    if code_tools is None:
        code_tools = settings.SANDBOX_TOOLS
    if micro_agent_tool is None:
        micro_agent_tool = settings.MICRO_AGENT_TOOL
    if sandbox is None:
        sandbox = sandbox_from_settings()
    if commands is None:
        from django.conf import settings

        commands = tuple(settings.SANDBOX_COMMANDS)
    for tool in (
        ReadFileTool(max_bytes=file_max_bytes),
        WriteFileTool(max_bytes=file_max_bytes),
        ListFilesTool(),
        HttpGetTool(
            max_bytes=http_max_bytes, timeout=http_timeout, allow_private=http_allow_private
        ),
        FinishTaskTool(),
        *((MicroAgentTool(),) if micro_agent_tool else ()),
        *(
            (
                RunPythonTool(sandbox),
                RunCommandTool(sandbox, allowed=commands),
                GitTool(sandbox),
                GitCommitTool(sandbox),
            )
            if code_tools
            else ()
        ),
    ):
        registry.register(tool)

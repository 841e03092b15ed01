"""Tools for runs executed in the test process: echo, broken and finish, and two that ask for
approval (send, shell); `make_registry` puts some of them in a registry of its own."""

from tools_app.registry import (
    ApprovalLevel,
    SideEffects,
    Tool,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolSpec,
)


class EchoTool(Tool):
    spec = ToolSpec(
        name="echo",
        description="Echo the text back.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"ECHO"}),
        domain="testing",
    )

    def __init__(self):
        self.calls = []

    def run(self, arguments, context):
        self.calls.append(arguments["text"])
        return ToolResult(ok=True, content={"echo": arguments["text"]})


class BrokenTool(Tool):
    spec = ToolSpec(
        name="broken",
        description="Always fails.",
        input_schema={"type": "object", "properties": {}},
        capabilities=frozenset({"BREAK"}),
        domain="testing",
        # Auto-approved: it exists to fail, not to ask (approval tests use their own tools).
        side_effects=SideEffects.WORKSPACE_WRITE,
    )

    def run(self, arguments, context):
        raise ToolError("the service said no")


class FinishTool(Tool):
    spec = ToolSpec(
        name="finish_task",
        description="Finish.",
        input_schema={
            "type": "object",
            "properties": {"result": {"type": "string"}},
            "required": ["result"],
        },
        capabilities=frozenset({"FINISH"}),
        domain="control",
    )

    def run(self, arguments, context):
        return ToolResult(ok=True, content={"result": arguments["result"]}, finish=True)


class SendTool(Tool):
    """A tool with external side effects: moderate, so it asks unless a rule allows it."""

    spec = ToolSpec(
        name="send",
        description="Send a message.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}, "text": {"type": "string"}},
            "required": ["to", "text"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"SEND"}),
        domain="messaging",
        side_effects=SideEffects.EXTERNAL,
    )

    def __init__(self):
        self.calls = []

    def run(self, arguments, context):
        self.calls.append(arguments)
        return ToolResult(ok=True, content={"sent": arguments["to"]})


class ShellTool(SendTool):
    spec = ToolSpec(
        name="shell",
        description="Run a command.",
        input_schema={"type": "object", "properties": {"command": {"type": "string"}}},
        capabilities=frozenset({"EXECUTE"}),
        domain="system",
        approval_level=ApprovalLevel.AUTO,
        side_effects=SideEffects.READ_ONLY,
    )


def make_registry(*tools: Tool) -> ToolRegistry:
    registry = ToolRegistry()
    for tool in tools or (EchoTool(), BrokenTool(), FinishTool()):
        registry.register(tool)
    return registry


class OddTextTool(Tool):
    """Answers with what an MCP server may send and no database stores: NUL, a lone surrogate."""

    spec = ToolSpec(
        name="odd_text",
        description="Answers with odd text.",
        input_schema={"type": "object", "properties": {}},
        capabilities=frozenset({"ODD"}),
        domain="testing",
    )

    def run(self, arguments, context):
        return ToolResult(ok=True, content={"text\udcff": ["a\x00b", "c\udcffd", 1.5]})


class DiskTool(Tool):
    """Changes the workspace straight on disk, not through write_file (as an MCP filesystem
    server or code in the sandbox does): writes `content` to `path`, or deletes it, or makes
    it a symlink to `target`."""

    spec = ToolSpec(
        name="disk",
        description="Change a file on disk.",
        input_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "delete": {"type": "boolean"},
                "target": {"type": "string"},
            },
            "required": ["path"],
        },
        capabilities=frozenset({"DISK"}),
        domain="testing",
        side_effects=SideEffects.WORKSPACE_WRITE,
    )

    def run(self, arguments, context):
        path = context.workspace / arguments["path"]
        if arguments.get("delete"):
            path.unlink()
        elif "target" in arguments:
            path.symlink_to(arguments["target"])
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(arguments["content"])
        return ToolResult(ok=True, content={"changed": arguments["path"]})

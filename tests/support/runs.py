"""Making runs directly in the database, without the API or a queue."""

from agents_app.models import Run, Task
from agents_app.runs.services import run_create
from tools_app.registry import SideEffects, Tool, ToolError, ToolRegistry, ToolResult, ToolSpec


def make_run(owner, text="Do the thing", *, max_tokens=None, max_tool_calls=None) -> Run:
    """A queued run, as task_submit makes it, but not enqueued."""
    task = Task.objects.create(
        owner=owner, text=text, max_tokens=max_tokens, max_tool_calls=max_tool_calls
    )
    return run_create(task=task)


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


def make_registry(*tools: Tool) -> ToolRegistry:
    registry = ToolRegistry()
    for tool in tools or (EchoTool(), BrokenTool(), FinishTool()):
        registry.register(tool)
    return registry


def allow_every_call(user) -> None:
    """YOLO mode for `user`, as staff would grant it: tests about something other than
    approvals let MCP tools (external side effects, so `moderate`) run without asking."""
    from agents_app.approvals.rules import yolo_grant, yolo_set

    yolo_grant(user=user, granted=True, actor=None, interface="admin")
    # has_perm caches per user object; a fresh copy sees the new permission.
    fresh = type(user).objects.get(pk=user.pk)
    yolo_set(user=fresh, on=True, interface="web")

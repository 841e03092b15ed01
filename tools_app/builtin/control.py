"""finish_task: how the agent declares the task done."""

from typing import Any

from tools_app.registry import ApprovalLevel, SideEffects, Tool, ToolContext, ToolResult, ToolSpec


class FinishTaskTool(Tool):
    spec = ToolSpec(
        name="finish_task",
        description=(
            "Declare the task done and hand back your final answer. Call it exactly once, as your "
            "last action, with the complete result the user should see. Set success=false if you "
            "could not complete the task, and explain why in result."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "result": {
                    "type": "string",
                    "description": "The final answer or a summary of what was done.",
                },
                "success": {
                    "type": "boolean",
                    "default": True,
                    "description": "Whether the task was accomplished.",
                },
            },
            "required": ["result"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"FINISH"}),
        domain="control",
        side_effects=SideEffects.READ_ONLY,
        approval_level=ApprovalLevel.AUTO,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(
            ok=True,
            content={"result": arguments["result"], "success": arguments.get("success", True)},
            finish=True,
        )

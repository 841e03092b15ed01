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


MICRO_AGENT_TOOL = "start_micro_agent"


class MicroAgentTool(Tool):
    """Seed 003's micro agent, from any run: a temporary persona with some of the run's tools
    does a subtask as a child run of kind micro, and its finish_task result is this call's
    result. The worker starts the child and parks the run (spec.child_run); `run` is never
    reached from a step."""

    spec = ToolSpec(
        name=MICRO_AGENT_TOOL,
        description=(
            "Start a micro agent: a temporary specialist with its own persona that does one "
            "subtask with your tools (or only those you list, less those you exclude) and hands "
            "back its finish_task result as this call's result. Use it for a self-contained "
            "part of the work that a focused persona does better (a review, a check)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The subtask, complete in itself."},
                "persona": {
                    "type": "string",
                    "description": "Who the micro agent is, as its system prompt's first words.",
                },
                "available_tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only these of your tools (default: all but waiting ones).",
                },
                "excluded_tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Tools it must not have.",
                },
                "max_steps": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": "At most this many model turns (default 10).",
                },
            },
            "required": ["task", "persona"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"DELEGATE"}),
        domain="control",
        side_effects=SideEffects.READ_ONLY,
        approval_level=ApprovalLevel.AUTO,
        child_run=True,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(ok=False, error="a micro agent is started only from a run's step")

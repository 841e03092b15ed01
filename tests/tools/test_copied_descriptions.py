"""A string argument that repeats its schema's own description is no value: refused for every
tool, builtin or not, before the call runs."""

import pytest

from agents_app.core.errors import DomainError
from tests.support.tools import EchoTool
from tools_app.builtin import FinishTaskTool, ListFilesTool
from tools_app.registry import ToolRegistry, ToolSpec


def registry_with(*tools):
    registry = ToolRegistry()
    for tool in tools:
        registry.register(tool)
    return registry


@pytest.mark.parametrize(
    "result",
    [
        "The final answer or a summary of what was done.",
        "  the FINAL answer or a summary\n of what was done. ",
        "Result: The final answer or a summary of what was done. Thanks",
    ],
)
def test_finish_task_repeating_its_result_description_is_refused(result):
    registry = registry_with(FinishTaskTool())
    with pytest.raises(DomainError) as refused:
        registry.validate_arguments("finish_task", {"result": result})
    assert refused.value.code == "INVALID_ARGUMENTS"
    assert "result repeats the description instead of giving a real value" in str(
        refused.value.message
    )


def test_a_value_repeating_the_tools_own_description_is_refused():
    registry = registry_with(EchoTool())
    with pytest.raises(DomainError, match="repeats the description"):
        registry.validate_arguments("echo", {"text": "echo the TEXT back."})


def test_a_nested_value_repeating_its_property_description_is_refused():
    class Nested(EchoTool):
        spec = ToolSpec(
            name="nested",
            description="Nested.",
            input_schema={
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "label": {"type": "string", "description": "A short label."}
                            },
                        },
                    }
                },
            },
            capabilities=frozenset({"ECHO"}),
            domain="testing",
        )

    registry = registry_with(Nested())
    with pytest.raises(DomainError, match="items/1/label repeats the description"):
        registry.validate_arguments(
            "nested", {"items": [{"label": "x"}, {"label": "a short label"}]}
        )


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("finish_task", {"result": "4"}),
        ("finish_task", {"result": "The final answer is 4."}),
        # A short description is only refused when repeated whole, not when merely contained.
        ("finish_task", {"result": "yes", "success": True}),
        ("list_files", {"path": "."}),
    ],
)
def test_real_values_pass(tool, arguments):
    registry_with(FinishTaskTool(), ListFilesTool()).validate_arguments(tool, arguments)

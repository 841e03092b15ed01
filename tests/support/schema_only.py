"""What a generic OpenAI-compatible server answers when it builds its answers from the JSON
schema alone, never reading the prompt (issue 32, finding 8): a stand-in for the in-process
provider (scripted_provider.ScriptedProvider), as one rule that answers every request.

Asked for a JSON answer, it fills the schema: a string is "string", an enum its first value, a
number its minimum (else 0), a boolean false, an array its minItems items (one when none is
named), an object every property it names. Asked with tools and no schema, it calls the first
tool with arguments filled the same way; with neither, it answers "string".
"""

import json
from typing import Any

from agents_app.engine.llm import LLMRequest

PLACEHOLDER = "string"


def schema_instance(schema: dict[str, Any]) -> Any:
    """The value a schema-only server gives for `schema`."""
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for combined in ("anyOf", "oneOf", "allOf"):
        if schema.get(combined):
            return schema_instance(schema[combined][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        return {
            name: schema_instance(sub) for name, sub in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        count = schema.get("minItems", 1)
        return [schema_instance(schema.get("items") or {"type": "string"}) for _ in range(count)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return PLACEHOLDER


def schema_only_reply(request: LLMRequest) -> dict[str, Any]:
    """A reply (script.py's format) built from the request's schema or its first tool's."""
    if request.response_schema is not None:
        return {"content": json.dumps(schema_instance(request.response_schema))}
    if request.tools:
        tool = request.tools[0]
        return {"tool_calls": [{"name": tool.name, "arguments": schema_instance(tool.parameters)}]}
    return {"content": PLACEHOLDER}


# The whole script of a schema-only server: one rule that matches every request.
SCHEMA_ONLY = [{"match": "", "replies": [schema_only_reply], "repeat": True}]

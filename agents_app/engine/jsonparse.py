"""Tolerant extraction of one JSON object from model text (fences, prose around it), and JSON
schemas stripped of the prose a model could copy."""

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def extract_json_object(text: str) -> dict[str, Any] | None:
    """Return the first JSON object found in `text`, or None."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


_PROSE_KEYS = frozenset({"description", "title", "examples", "example", "$comment"})
_NAMED = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def without_prose(schema: Any) -> Any:
    """A JSON schema without its descriptions and examples: text a model could copy. Under
    `properties` and `$defs` the keys are names (an argument may be called "title")."""
    if isinstance(schema, list):
        return [without_prose(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    plain: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAMED and isinstance(value, dict):
            plain[key] = {name: without_prose(sub) for name, sub in value.items()}
        elif key not in _PROSE_KEYS:
            plain[key] = without_prose(value)
    return plain

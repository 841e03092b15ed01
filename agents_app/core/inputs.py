"""What any input must be before it reaches a query, so that SQLite and PostgreSQL refuse the
same things with the same 400 instead of one of them raising deep in the driver.

- An integer that is stored must fit its column: PositiveIntegerField is PostgreSQL's
  `integer` (SQLite would take up to 2^63 - 1 and PostgreSQL then fails on the same value).
- An integer that is only compared (an id, a seq, a page's offset) must fit `bigint`: SQLite's
  driver raises OverflowError beyond it.
- JSON numbers must be finite (Python's json reads NaN and Infinity; no database takes them).
- Text must encode as UTF-8 (JSON's "\\ud800" decodes to a lone surrogate that does not) and
  must not hold NUL, which PostgreSQL refuses in text and in jsonb.

A person's input that breaks these rules is refused (`text_field`, `json_problem`). Text from
outside that nobody can be asked to correct (a model's answer, a tool's result) is kept with
U+FFFD in place of each character that cannot be stored (`storable_text`, `storable`).
"""

import math
import re
from typing import Any

from agents_app.core.errors import DomainError, ErrorCode

# A PositiveIntegerField's column (PostgreSQL `integer`).
STORED_INT_MAX = 2_147_483_647
# An id, a seq, anything a query compares (`bigint`; BigAutoField ids).
QUERY_INT_MAX = 9_223_372_036_854_775_807
# Pages of a list: 100 per page at most, so an offset stays far inside `bigint`.
PAGE_MAX = 1_000_000


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text, or None when it can."""
    if "\x00" in value:
        return "must not contain NUL (\\u0000) characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid UTF-8 (it holds a lone surrogate such as \\ud800)"
    return None


REPLACEMENT = "\ufffd"
# A lone surrogate (a pair is joined first) or NUL: what no database column takes.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(value: str) -> str:
    """`value` with each NUL and lone surrogate replaced by U+FFFD; a surrogate pair (UTF-16's
    way to spell one character, as JSON's "\\ud83d\\ude00" decodes) joined into its
    character."""
    if not _UNSTORABLE.search(value):
        return value
    if _SURROGATE.search(value):
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _UNSTORABLE.sub(REPLACEMENT, value)


def storable(value: Any) -> Any:
    """A copy of the JSON value `value` that any database stores: every string and key as
    `storable_text` makes it, NaN and Infinity as their names (strings)."""
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {
            storable_text(key) if isinstance(key, str) else key: storable(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def json_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first (path, reason) in a JSON value whose keys or strings cannot be stored, or
    None. `path` is dotted ("context.notes.0"), as the error envelope names fields."""
    if isinstance(value, str):
        problem = text_problem(value)
        return (path, problem) if problem else None
    if isinstance(value, float) and not math.isfinite(value):
        # NaN and Infinity are not JSON: jsonb and SQLite's JSON_VALID refuse them.
        return (path, "must be a finite number (NaN and Infinity are not JSON)")
    if isinstance(value, dict):
        for key, item in value.items():
            key_path = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (problem := text_problem(key)):
                # The key itself cannot be shown; its parent ("" at the top) says where it is.
                return (path, f"has a key that {problem}")
            found = json_problem(item, key_path)
            if found:
                return found
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = json_problem(item, f"{path}.{index}" if path else str(index))
            if found:
                return found
    return None


def text_field(
    value: Any, field: str, *, max_chars: int, required: bool = True, empty: str = ""
) -> str:
    """`value` as text to store, or DomainError VALIDATION_ERROR naming `field`: a string (None
    is "" when not `required`), non-blank when `required` (`empty` is then the message), that
    text_problem accepts, of at most `max_chars` characters."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        message = empty or f"{field} must be {'a non-empty' if required else 'a'} string"
        raise DomainError(ErrorCode.VALIDATION_ERROR, message, {"field": field})
    if problem := text_problem(value):
        raise DomainError(ErrorCode.VALIDATION_ERROR, f"{field} {problem}", {"field": field})
    if len(value) > max_chars:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"{field} is {len(value)} characters; at most {max_chars} are allowed",
            {"field": field, "length": len(value), "max_length": max_chars},
        )
    return value


def refuse_unknown(given: Any, allowed: Any) -> None:
    """DomainError VALIDATION_ERROR when `given` names a field that is not `allowed`."""
    unknown = set(given) - set(allowed)
    if unknown:
        raise DomainError(
            ErrorCode.VALIDATION_ERROR,
            f"Unknown field(s): {', '.join(sorted(unknown))}",
            {"fields": sorted(unknown), "allowed": sorted(allowed)},
        )


def flag_field(value: Any, field: str) -> bool:
    """`value` if it is true or false, else DomainError VALIDATION_ERROR naming `field`."""
    if not isinstance(value, bool):
        raise DomainError(
            ErrorCode.VALIDATION_ERROR, f"{field} must be true or false", {"field": field}
        )
    return value

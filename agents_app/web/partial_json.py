"""The value a JSON document holds so far, while a model is still writing it: strings cut off
mid-way keep what arrived, a key whose value has not started is left out, unclosed arrays and
objects count as closed. Used to show a plan or a verdict as it forms, never as JSON."""

import json
import re
from typing import Any

_MISSING = object()
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SCALAR = re.compile(r"[A-Za-z0-9.+\-]+")


class NotJSON(ValueError):
    """The text is not the beginning of a JSON document."""


def parse_partial(text: str) -> Any:
    """What the JSON object or array starting at the first `{` or `[` of `text` holds so far
    (prose or a ``` fence before it is skipped). None when no document has started; raises
    NotJSON when what follows cannot be JSON."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    return _Reader(text, min(starts)).value()


class _Reader:
    def __init__(self, text: str, start: int) -> None:
        self.text, self.at, self.ended = text, start, False

    def _space(self) -> None:
        while self.at < len(self.text) and self.text[self.at] in " \t\r\n":
            self.at += 1
        self.ended = self.at >= len(self.text)

    def value(self) -> Any:
        self._space()
        if self.ended:
            return _MISSING
        first = self.text[self.at]
        if first == "{":
            return self._object()
        if first == "[":
            return self._array()
        if first == '"':
            return self._string()
        return self._scalar()

    def _object(self) -> dict[str, Any]:
        self.at += 1
        result: dict[str, Any] = {}
        while True:
            self._space()
            if self.ended:
                return result
            char = self.text[self.at]
            if char == "}":
                self.at += 1
                return result
            if char == ",":
                self.at += 1
                continue
            if char != '"':
                raise NotJSON(f"expected a key at {self.at}")
            key = self._string()
            self._space()
            if self.ended:
                return result
            if self.text[self.at] != ":":
                raise NotJSON(f"expected ':' at {self.at}")
            self.at += 1
            value = self.value()
            if value is not _MISSING:
                result[key] = value
            if self.ended:
                return result

    def _array(self) -> list[Any]:
        self.at += 1
        result: list[Any] = []
        while True:
            self._space()
            if self.ended:
                return result
            char = self.text[self.at]
            if char == "]":
                self.at += 1
                return result
            if char == ",":
                self.at += 1
                continue
            value = self.value()
            if value is not _MISSING:
                result.append(value)
            if self.ended:
                return result

    def _string(self) -> str:
        self.at += 1
        parts: list[str] = []
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char == '"':
                self.at += 1
                return _joined(parts)
            if char != "\\":
                parts.append(char)
                self.at += 1
                continue
            escape = text[self.at + 1 : self.at + 2]
            if escape == "u":
                digits = text[self.at + 2 : self.at + 6]
                if len(digits) < 4:
                    break
                try:
                    parts.append(chr(int(digits, 16)))
                except ValueError as exc:
                    raise NotJSON(f"bad escape at {self.at}") from exc
                self.at += 6
            elif escape:
                parts.append(_ESCAPES.get(escape, escape))
                self.at += 2
            else:
                break
        self.at, self.ended = len(text), True
        return _joined(parts)

    def _scalar(self) -> Any:
        match = _SCALAR.match(self.text, self.at)
        if match is None:
            raise NotJSON(f"unexpected {self.text[self.at]!r} at {self.at}")
        self.at = match.end()
        if self.at >= len(self.text):
            self.ended = True  # "tru" or "12" may still grow: not a value yet
            return _MISSING
        try:
            return json.loads(match.group())
        except ValueError as exc:
            raise NotJSON(f"not a JSON value: {match.group()!r}") from exc


def _joined(parts: list[str]) -> str:
    # \ud83d\ude00 arrives as two surrogates; joined, they are one character again.
    return "".join(parts).encode("utf-16", "surrogatepass").decode("utf-16", "replace")

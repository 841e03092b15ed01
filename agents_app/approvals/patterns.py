"""Rules narrowed to argument patterns (issue 35): instead of every call of a tool, a person
allows the calls that reach one host, touch paths under one prefix, or run one command.

A pattern rule lets a call through, when it needs a person only because of its level, and
also when its arguments carry untrusted text (approvals.provenance): the person said where
the tool may go. A call matches when everything of that kind in its arguments fits:
- `host`: it names at least one URL or host and every one is the host or under it
  (`example.com` covers `docs.example.com`, not `badexample.com`);
- `path_prefix`: it names at least one absolute path and every one is under the prefix
  (no `..` climbs out);
- `command`: its command argument's words start with the rule's words
  (`python3 -m pytest` covers `python3 -m pytest -q tests`, not `python3 -c …`).
Pure: no I/O.
"""

import re
import shlex
from collections.abc import Iterator
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from agents_app.engine.taint import FILE_SUFFIXES, HOST_IN_TEXT, PATH_IN_TEXT, URL_IN_TEXT

COMMAND_KEYS = ("command", "cmd", "argv", "args", "shell", "script")
HOST = re.compile(r"^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9-]{1,63}$")


class PatternKind(StrEnum):
    HOST = "host"
    PATH_PREFIX = "path_prefix"
    COMMAND = "command"


def pattern_error(kind: str, pattern: str) -> str:
    """Why `pattern` cannot be a rule of `kind`; empty when it can."""
    if kind not in PatternKind.__members__.values():
        return f"a pattern is one of {', '.join(PatternKind)}"
    value = pattern.strip()
    if not value or len(value) > 500:
        return "a pattern is 1 to 500 characters"
    if kind == PatternKind.HOST and not HOST.match(value.lower()):
        return "a host is a name such as example.com or 10.0.0.7, without a scheme or path"
    if kind == PatternKind.PATH_PREFIX:
        path = PurePosixPath(value)
        if not path.is_absolute() or ".." in path.parts or value == "/":
            return "a path prefix is an absolute path other than /, without .."
    if kind == PatternKind.COMMAND:
        try:
            if not shlex.split(value):
                return "a command has at least one word"
        except ValueError as error:
            return f"a command's words: {error}"
    return ""


def pattern_matches(kind: str, pattern: str, arguments: dict[str, Any]) -> bool:
    """Whether a call with `arguments` fits the rule `kind: pattern`."""
    if kind == PatternKind.HOST:
        hosts = list(_hosts(arguments))
        want = pattern.strip().lower()
        return bool(hosts) and all(h == want or h.endswith("." + want) for h in hosts)
    if kind == PatternKind.PATH_PREFIX:
        paths = list(_paths(arguments))
        prefix = PurePosixPath(pattern.strip())
        return bool(paths) and all(
            ".." not in p.parts and (p == prefix or p.is_relative_to(prefix)) for p in paths
        )
    if kind == PatternKind.COMMAND:
        words = _command_words(arguments)
        want = shlex.split(pattern)
        return words is not None and words[: len(want)] == want
    return False


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, depth + 1)


def call_hosts(arguments: dict[str, Any]) -> Iterator[str]:
    """Every host a call's arguments name (in URLs or as words), lowercased."""
    return _hosts(arguments)


def _hosts(arguments: dict[str, Any]) -> Iterator[str]:
    for text in _strings(arguments):
        rest = text
        for match in URL_IN_TEXT.finditer(text):
            try:
                host = urlsplit(match.group(0)).hostname or ""
            except ValueError:
                host = "?"  # a malformed address fits no host
            yield host
            rest = rest.replace(match.group(0), " ")
        for match in HOST_IN_TEXT.finditer(rest):
            if match.group(0).rsplit(".", 1)[-1].lower() not in FILE_SUFFIXES:
                yield match.group(0).lower()


def _paths(arguments: dict[str, Any]) -> Iterator[PurePosixPath]:
    for text in _strings(arguments):
        without_urls = URL_IN_TEXT.sub(" ", text)
        for match in PATH_IN_TEXT.finditer(without_urls):
            yield PurePosixPath(match.group(0))
        if text.startswith("/") and not PATH_IN_TEXT.fullmatch(text):
            yield PurePosixPath(text)


def _command_words(arguments: dict[str, Any]) -> list[str] | None:
    for key in COMMAND_KEYS:
        value = arguments.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        if isinstance(value, str):
            try:
                return shlex.split(value)
            except ValueError:
                return None
    return None

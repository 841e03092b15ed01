"""Which of a call's arguments carry text that came from untrusted output (issue 35).

Untrusted output is what a tool, an MCP server, a fetched page, a child run or a file returned
to the run: a model that reads it may obey what it says. A call whose arguments repeat such
text at a *sink* (the network, code, a write outside the workspace, an MCP tool not pinned
read-only) needs a person, whatever else would let it through (approvals.policy).

The matching rule, on each string argument (nested ones too), case-insensitive:
- every URL in it: its host, its address without the query (scheme, host, path), and each
  query value of at least QUERY_MIN characters;
- every absolute path in it of at least PATH_MIN characters, outside the run's own workspace;
- every host-like word in it (`evil.example`, `10.0.0.7`);
- and any run of at least RUN_MIN characters it shares with untrusted text (found by looking
  up its RUN_STEP-spaced windows of RUN_MIN - RUN_STEP characters: a shared run of RUN_MIN is
  always found, a shorter one sometimes).
A fragment is tainted when it occurs in untrusted text and not in trusted text (what people
wrote: the task, their messages, instructions, plan edits). Pure: no I/O.
"""

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

QUERY_MIN = 4
PATH_MIN = 8
RUN_MIN = 24
RUN_STEP = 8
# Text this long is looked at, no more (a longer argument is cut for the search, not the call).
ARGUMENT_MAX = 20_000
MAX_DEPTH = 6

URL_IN_TEXT = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>`]+", re.IGNORECASE)
HOST_IN_TEXT = re.compile(
    r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?![\w-])"
    r"|(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])",
    re.IGNORECASE,
)
PATH_IN_TEXT = re.compile(r"(?<![\w.:/])/[\w.@%+~-]+(?:/[\w.@%+~-]*)+")
# Words that look like hosts but are file names people and tools mention all the time.
FILE_SUFFIXES = frozenset(
    {"py", "txt", "md", "json", "csv", "html", "js", "ts", "toml", "yaml", "yml", "cfg", "ini",
     "log", "sh", "lock", "xml", "rst", "pdf", "png", "jpg", "gif", "svg", "env", "sql", "db"}
)  # fmt: skip


@dataclass(frozen=True)
class Source:
    """One piece of untrusted text and where it came from (a call's result, a child's)."""

    text: str
    label: str  # "http_get call 12", "child run 40's result"
    tool_call_id: int | None = None
    run_id: int | None = None


@dataclass(frozen=True)
class Taint:
    """An argument that carries untrusted text: which, what, and from where."""

    argument: str
    fragment: str
    kind: str  # host | address | query | path | text
    source: Source

    def as_json(self) -> dict[str, Any]:
        return {
            "argument": self.argument,
            "fragment": self.fragment[:200],
            "kind": self.kind,
            "source": self.source.label,
            "tool_call_id": self.source.tool_call_id,
            "run_id": self.source.run_id,
        }


def tainted_arguments(
    arguments: dict[str, Any],
    untrusted: Sequence[Source],
    trusted: str,
    own_paths: Sequence[str] = (),
) -> list[Taint]:
    """The arguments that repeat untrusted text, one finding per argument (its first). Paths
    under `own_paths` (the run's workspace, as the host and the sandbox see it) are the run's
    own and never tainted: a tool confines them there."""
    sources = [(s, s.text.lower()) for s in untrusted if s.text]
    if not sources:
        return []
    people = trusted.lower()
    found: list[Taint] = []
    for name, value in _leaves(arguments):
        if not isinstance(value, str) or not value.strip():
            continue
        text = value[:ARGUMENT_MAX]
        for kind, fragment in _fragments(text):
            frag = fragment.lower()
            if frag in people or (kind == "path" and _own(fragment, own_paths)):
                continue
            source = next((s for s, lower in sources if frag in lower), None)
            if source is not None:
                found.append(Taint(name, fragment, kind, source))
                break
        else:
            shared = _shared_run(text.lower(), sources, people)
            if shared is not None:
                found.append(Taint(name, shared[0], "text", shared[1]))
    return found


def _fragments(text: str) -> Iterator[tuple[str, str]]:
    for match in URL_IN_TEXT.finditer(text):
        url = match.group(0).rstrip(".,;:)]}")
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
            query = parse_qsl(parts.query, keep_blank_values=False)
        except ValueError:  # a malformed address: its words are looked at below
            continue
        if host:
            yield "host", host
        if parts.path.strip("/"):
            yield "address", f"{parts.scheme}://{parts.netloc}{parts.path}"
        for _, query_value in query:
            if len(query_value) >= QUERY_MIN:
                yield "query", query_value
    for match in HOST_IN_TEXT.finditer(text):
        word = match.group(0)
        if word.rsplit(".", 1)[-1].lower() not in FILE_SUFFIXES:
            yield "host", word
    for match in PATH_IN_TEXT.finditer(text):
        if len(match.group(0)) >= PATH_MIN:
            yield "path", match.group(0)


def _own(path: str, own_paths: Sequence[str]) -> bool:
    parts = path.split("/")
    if ".." in parts:
        return False
    return any(path == p or path.startswith(p.rstrip("/") + "/") for p in own_paths if p)


def _shared_run(text: str, sources: list[tuple[Source, str]], people: str):
    """(a shared window, its source) when `text` shares a long run with untrusted text that
    people did not write."""
    width = RUN_MIN - RUN_STEP
    if len(text) < width:
        return None
    for start in range(0, len(text) - width + 1, RUN_STEP):
        window = text[start : start + width]
        if not window.strip() or window in people:
            continue
        for source, lower in sources:
            if window in lower:
                return window, source
    return None


def _leaves(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{key}.{k}" if key else str(k), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{key}[{i}]", depth + 1)
    else:
        yield key, value

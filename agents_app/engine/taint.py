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
- and any run of RUN_MIN characters, from the start of a word, it shares with untrusted text
  (the first SOURCES_MAX characters of it, newest results first).
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
# Untrusted text searched for shared runs, at most (the newest results come first).
SOURCES_MAX = 4_000_000
# Up to this many runs in an argument, each is searched for; more, the sources are read once.
FEW_RUNS = 24
# Text this long is looked at, no more (a longer argument is cut for the search, not the call).
ARGUMENT_MAX = 20_000
MAX_DEPTH = 6

URL_IN_TEXT = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"<>`]+", re.IGNORECASE)
HOST_IN_TEXT = re.compile(
    r"(?<![\w.-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?![\w-])"
    r"|(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])",
    re.IGNORECASE,
)
WORD_START = re.compile(r"\b\w")
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
            # The run's own paths are its own whatever text they sit in.
            mine = PATH_IN_TEXT.sub(lambda m: " " if _own(m.group(0), own_paths) else m[0], text)
            shared = _shared_run(mine.lower(), sources, people)
            if shared is not None:
                found.append(Taint(name, shared[0], "text", shared[1]))
    return found


def file_taints(
    arguments: dict[str, Any], files: dict[str, Source], own_paths: Sequence[str] = ()
) -> list[Taint]:
    """The arguments that name a file the run wrote from untrusted text (`files`: its path in
    the workspace, as written, and where its content came from): running or sending such a
    file carries that text as surely as its content would. A path matches as a whole word of
    the argument, relative to the workspace (`notes/x.py`, `./notes/x.py`, `/workspace/notes/
    x.py` alike)."""
    if not files:
        return []
    wanted = {_workspace_relative(path, own_paths): source for path, source in files.items()}
    found = []
    for name, value in _leaves(arguments):
        if not isinstance(value, str):
            continue
        for word in re.split(r"[\s'\"`;|&()<>=,]+", value[:ARGUMENT_MAX]):
            source = wanted.get(_workspace_relative(word, own_paths)) if word else None
            if source is not None:
                found.append(Taint(name, word, "file", source))
                break
    return found


def _workspace_relative(path: str, own_paths: Sequence[str]) -> str:
    for prefix in own_paths:
        prefix = prefix.rstrip("/") + "/"
        if prefix != "/" and path.startswith(prefix):
            path = path[len(prefix) :]
            break
    while path.startswith("./"):
        path = path[2:]
    return path


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
    """(a shared run, its source) when `text` shares RUN_MIN characters from the start of a
    word with untrusted text that people did not write. Both sides are read once: the
    argument's runs go in a set, each source's word starts are looked up in it."""
    wanted = set()
    for match in WORD_START.finditer(text):
        run = text[match.start() : match.start() + RUN_MIN]
        if len(run) == RUN_MIN and run.strip() and run not in people:
            wanted.add(run)
    if not wanted:
        return None
    if len(wanted) <= FEW_RUNS:  # a short argument: one search of each run is cheaper
        searched, budget = [], SOURCES_MAX
        for source, lower in sources:
            searched.append((source, lower[:budget]))
            budget -= len(lower)
            if budget <= 0:
                break
        for run in sorted(wanted):
            for source, lower in searched:
                if run in lower:
                    return run, source
        return None
    budget = SOURCES_MAX
    for source, lower in sources:
        for match in WORD_START.finditer(lower, 0, budget):
            run = lower[match.start() : match.start() + RUN_MIN]
            if run in wanted:
                return run, source
        budget -= len(lower)
        if budget <= 0:
            break
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

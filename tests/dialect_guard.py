"""pytest plugin: the PostgreSQL pass runs every line that only PostgreSQL can judge.

The PostgreSQL + Redis pass (`DIALECT=marked`, tests/passes.py) runs only the tests marked
`dialect`. What keeps that choice honest: SQLite serialises writers and forgives SQL that
PostgreSQL refuses, so code that speaks SQL itself, locks rows, asks which database it is on,
uses a lookup the two databases answer differently, or races other writers must run in the
PostgreSQL pass, not only in the embedded one.

How: this module reads the source of agents_app and tools_app (no imports) and finds the
*flagged functions*: each function that holds one of

- raw SQL: `.cursor(`, `.execute(` on a cursor, `RawSQL`, `.raw(`, `.extra(`, a string with
  `RETURNING`;
- a row lock: `.select_for_update(`;
- a question about the database: `.vendor`;
- a lookup the two databases answer differently: `__contains`, `__icontains`, `__has_key`,
  `__has_keys`, `__has_any_keys`, `__contained_by`, `__regex`, `__iregex`, `__search`;
- a concurrent writer that holds no lock of its own (CONCURRENT_WRITERS below, by name).

During the pass, every Python process the tests start (the test processes, Celery workers
and their pool processes, daphne, any other) loads those modules with a probe before each
statement of the flagged functions: a `sitecustomize` the guard writes, on PYTHONPATH, adds an
import hook (PROBES below). A probe appends its line to one file the first time its process
runs it, so a process stopped by SIGTERM or killed has already told what it ran.
(coverage.py's tracer, in every process, took half again the pass's processor time.) At the
end, each flagged function must have had every statement executed, as coverage.py's parser
counts statements; the pass fails and lists the lines that no `dialect` test ran. A line that
no test can reach is excluded with `# pragma: no cover` and a comment saying why. A block
under a test for another database (`if ... vendor == "sqlite"` in the PostgreSQL pass) cannot
run in this pass and is not asked for: the embedded pass runs it.

It runs when the whole suite runs with DIALECT=marked (as .ci/run's second pass does), not for
a chosen subset (`-k`, `-m` or paths), and in test processes of their own (pytest-xdist, the
default): with `-n 0` the modules are imported, unprobed, before it starts, so it says it is
off. `DIALECT_GUARD=off` turns it off for a local run.
"""

import ast
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.passes import selection

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents_app", "tools_app")

CALLS = {"cursor", "select_for_update", "raw", "extra"}
ATTRIBUTES = {"vendor"}
NAMES = {"RawSQL"}
LOOKUPS = (
    "__contains",
    "__icontains",
    "__has_key",
    "__has_keys",
    "__has_any_keys",
    "__contained_by",
    "__regex",
    "__iregex",
    "__search",
)
# Writers that race other writers without a row lock of their own: a count that decides
# whether another run may start.
CONCURRENT_WRITERS = {
    "agents_app/orchestration/children.py": {"busy_by_profile"},
}


@dataclass
class Flagged:
    path: str  # relative to ROOT
    name: str
    first: int
    last: int
    reasons: set[str] = field(default_factory=set)


def _reason(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in CALLS:
            return f".{node.func.attr}()"
        if node.func.attr == "execute" and "cursor" in ast.unparse(node.func.value):
            return "cursor.execute()"
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg and keyword.arg.endswith(LOOKUPS):
                return f"lookup {keyword.arg}"
    if isinstance(node, ast.Attribute) and node.attr in ATTRIBUTES:
        return f".{node.attr}"
    if isinstance(node, ast.Name) and node.id in NAMES:
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if "RETURNING" in node.value:
            return "RETURNING"
        if node.value.endswith(LOOKUPS) and "__" in node.value:
            return f"lookup {node.value}"
    return None


def flagged_functions(root: Path = ROOT) -> list[Flagged]:
    """The flagged functions of the packages' source, innermost function of each construct."""
    found: dict[tuple[str, int], Flagged] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            relative = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(), filename=str(path))
            wanted = CONCURRENT_WRITERS.get(relative, set())
            _visit(tree, relative, None, wanted, found)
    return sorted(found.values(), key=lambda f: (f.path, f.first))


def _visit(node, path, function, wanted, found) -> None:
    for child in ast.iter_child_nodes(node):
        inner = function
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            inner = child
            if child.name in wanted:
                _flag(found, path, child, "concurrent writer")
        reason = _reason(child)
        if reason:
            if inner is not None:
                _flag(found, path, inner, reason)
            else:  # at module or class level: the statement's own lines
                _flag(found, path, child, reason)
        _visit(child, path, inner, wanted, found)


def _flag(found, path, node, reason) -> None:
    key = (path, node.lineno)
    if key not in found:
        name = getattr(node, "name", f"line {node.lineno}")
        found[key] = Flagged(path, name, node.lineno, node.end_lineno or node.lineno)
    found[key].reasons.add(reason)


# What every Python process of the pass runs at start (a sitecustomize on PYTHONPATH, written
# by the guard with FUNCTIONS and RECORD filled in): an import hook that compiles each module
# holding flagged functions with a probe before each statement of their lines, and the probe,
# which appends "path:line" to RECORD the first time the process runs that line. One append
# of one line per line run: a process stopped by SIGTERM or killed has already written what it
# ran, a forked pool process writes as its parent does, and no tracer slows the rest down.
PROBES = r"""import ast
import os
import sys
from importlib.machinery import PathFinder, SourceFileLoader

FUNCTIONS = {functions!r}  # real path -> (path relative to the root, [(first, last), ...])
RECORD = {record!r}
PROBE = "__dialect_guard_probe__"


def _lines(node):
    return [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]


def _probe_call(lines, node):
    call = ast.Expr(ast.Call(ast.Name(PROBE, ast.Load()), [ast.Constant(tuple(lines))], []))
    return ast.copy_location(call, node)


class _Instrument(ast.NodeTransformer):
    def __init__(self, ranges):
        self.ranges = ranges

    def _inside(self, line):
        return any(first < line <= last for first, last in self.ranges)

    def _block(self, statements):
        out = []
        for index, statement in enumerate(statements):
            self.visit(statement)
            docstring = (
                index == 0
                and isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            )
            future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
            lines = [n for n in _lines(statement) if self._inside(n)]
            if lines and not docstring and not future:
                out.append(_probe_call(lines, statement))
            out.append(statement)
        return out

    def generic_visit(self, node):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, name, self._block(block))
        for handler in getattr(node, "handlers", []):
            handler.body = self._block(handler.body)
            if self._inside(handler.lineno):
                handler.body.insert(0, _probe_call([handler.lineno], handler.body[0]))
            for child in ast.iter_child_nodes(handler):
                if not isinstance(child, ast.stmt):
                    self.visit(child)
        for case in getattr(node, "cases", []):
            case.body = self._block(case.body)
        for field, value in ast.iter_fields(node):
            if field in ("body", "orelse", "finalbody", "handlers", "cases"):
                continue
            if isinstance(value, ast.AST):
                self.visit(value)
        return node


def _recorder(relative):
    seen = set()

    def probe(lines):
        if lines[0] not in seen:
            seen.update(lines)
            text = "".join(f"{{relative}}:{{n}}\n" for n in lines)
            fd = os.open(RECORD, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)

    return probe


class _Loader(SourceFileLoader):
    def get_code(self, fullname):  # compiled here each time: no instrumented .pyc is cached
        path = self.get_filename(fullname)
        tree = ast.parse(self.get_data(path), path)
        _Instrument(FUNCTIONS[os.path.realpath(path)][1]).visit(tree)
        return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)

    def exec_module(self, module):
        relative = FUNCTIONS[os.path.realpath(module.__spec__.origin)][0]
        module.__dict__[PROBE] = _recorder(relative)
        super().exec_module(module)


class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if not name.startswith(("agents_app.", "tools_app.")):
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is None or spec.origin is None:
            return None
        if os.path.realpath(spec.origin) not in FUNCTIONS:
            return None
        spec.loader = _Loader(name, spec.origin)
        return spec


sys.meta_path.insert(0, _Finder)
"""


def executed(record: Path) -> dict[str, set[int]]:
    """The lines the probes recorded, by path relative to ROOT."""
    lines: dict[str, set[int]] = {}
    if record.exists():
        for entry in record.read_text().splitlines():
            path, _, number = entry.rpartition(":")
            if number.isdigit():
                lines.setdefault(path, set()).add(int(number))
    return lines


def unexecuted(
    ran: dict[str, set[int]], flagged: list[Flagged], vendor: str | None = None
) -> dict[str, list[int]]:
    """Per flagged function ("path:name"), its statements (as coverage.py's parser counts
    them, `# pragma: no cover` honoured) that no process ran. A function's `def` line is not
    asked for. With `vendor` (the pass's database), a block under `vendor == "<another
    database>"` is left out: it cannot run on this one."""
    from coverage.config import DEFAULT_EXCLUDE
    from coverage.misc import join_regex
    from coverage.parser import PythonParser

    exclude = list(DEFAULT_EXCLUDE)
    if vendor:
        exclude.append(rf"""\.vendor\s*==\s*["'](?!{re.escape(vendor)}["'])""")
    missing: dict[str, list[int]] = {}
    by_path: dict[str, list[Flagged]] = {}
    for f in flagged:
        by_path.setdefault(f.path, []).append(f)
    for path, functions in by_path.items():
        parser = PythonParser(filename=str(ROOT / path), exclude=join_regex(exclude))
        parser.parse_source()
        seen = ran.get(path, set())
        for f in functions:
            lines = sorted(n for n in parser.statements if f.first < n <= f.last and n not in seen)
            if lines:
                missing[f"{path}:{f.name}"] = lines
    return missing


class Guard:
    def __init__(self) -> None:
        self.flagged = flagged_functions()
        self.data_dir = Path(tempfile.mkdtemp(prefix="dialect-guard-"))
        self.record = self.data_dir / "lines"
        self.pythonpath: str | None = None

    def start(self) -> None:
        functions: dict[str, tuple[str, list[tuple[int, int]]]] = {}
        for f in self.flagged:
            real = os.path.realpath(ROOT / f.path)
            functions.setdefault(real, (f.path, []))[1].append((f.first, f.last))
        (self.data_dir / "sitecustomize.py").write_text(
            PROBES.format(functions=functions, record=str(self.record))
        )
        # The processes the tests start from now on (test processes, workers, daphne) load it.
        self.pythonpath = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(self.data_dir), self.pythonpath) if p
        )

    def finish(self) -> dict[str, list[int]]:
        if self.pythonpath is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = self.pythonpath
        from django.db import connection

        try:
            return unexecuted(executed(self.record), self.flagged, connection.vendor)
        finally:
            shutil.rmtree(self.data_dir, ignore_errors=True)


_guard: Guard | None = None


def _wanted(config) -> bool:
    if hasattr(config, "workerinput") or os.environ.get("DIALECT_GUARD") == "off":
        return False
    if selection() != "marked" or config.option.keyword or config.option.markexpr:
        return False
    chosen = {Path(arg.split("::")[0]).resolve() for arg in config.args}
    return chosen <= {ROOT / "tests", ROOT}


_off_in_process = False


def pytest_configure(config):
    global _guard, _off_in_process
    if _wanted(config):
        if not getattr(config.option, "numprocesses", None):
            _off_in_process = True  # the tests would run here, on modules imported unprobed
            return
        _guard = Guard()
        _guard.start()


@pytest.hookimpl(trylast=True)  # after xdist has stopped the test processes
def pytest_sessionfinish(session, exitstatus):
    global _guard
    if _off_in_process:
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(
            "\ndialect guard: off: it needs test processes of their own (pytest-xdist, not -n 0)"
        )
    if _guard is None:
        return
    guard, _guard = _guard, None
    missing = guard.finish()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter else print
    write("")
    if missing:
        write(
            f"dialect guard: {len(missing)} flagged functions have lines that no `dialect` test "
            "ran in this pass (tests/dialect_guard.py):"
        )
        for where, lines in sorted(missing.items()):
            write(f"  {where}: lines {', '.join(map(str, lines))}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    else:
        write(
            f"dialect guard: every line of {len(guard.flagged)} flagged functions ran in this pass"
        )

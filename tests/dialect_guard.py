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

During the pass, coverage.py measures those modules only, in the test processes and in every
Python process they start (Celery workers, daphne: `patch = subprocess`). At the end, each
flagged function must have had every line executed; the pass fails and lists the lines that
no `dialect` test ran. A line that no test can reach is excluded with `# pragma: no cover` and
a comment saying why.

It runs when the whole suite runs with DIALECT=marked (as .ci/run's second pass does), not for
a chosen subset (`-k`, `-m` or paths). `DIALECT_GUARD=off` turns it off for a local run.
"""

import ast
import os
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


def unexecuted(data_dir: Path, flagged: list[Flagged]) -> dict[str, list[int]]:
    """Per flagged function ("path:name"), the lines coverage saw no process execute."""
    import coverage

    cov = coverage.Coverage(data_file=str(data_dir / ".coverage"), config_file=False)
    cov.combine(data_paths=[str(data_dir)], keep=False)
    cov.load()
    missing: dict[str, list[int]] = {}
    by_path: dict[str, list[Flagged]] = {}
    for f in flagged:
        by_path.setdefault(f.path, []).append(f)
    for path, functions in by_path.items():
        _, statements, _, not_run, _ = cov.analysis2(str(ROOT / path))
        not_run = set(not_run)
        for f in functions:
            lines = [n for n in statements if f.first <= n <= f.last and n in not_run]
            # A function's `def` line runs at import; its body is what the tests must reach.
            lines = [n for n in lines if n != f.first]
            if lines:
                missing[f"{path}:{f.name}"] = lines
    return missing


class Guard:
    def __init__(self) -> None:
        self.flagged = flagged_functions()
        self.data_dir = Path(tempfile.mkdtemp(prefix="dialect-coverage-"))
        self.cov = None

    def start(self) -> None:
        import coverage

        files = sorted({str(ROOT / f.path) for f in self.flagged})
        # The settings go in a file of their own: coverage hands a subprocess the settings of
        # a configuration file (`patch = subprocess` refuses to start without one). Every
        # Python process the tests start is measured too (test processes, workers, daphne); a
        # forked pool process, one that leaves by os._exit and one stopped by SIGTERM save what
        # they saw.
        rc = self.data_dir / "coveragerc"
        rc.write_text(
            "[run]\n"
            f"data_file = {self.data_dir / '.coverage'}\n"
            "parallel = true\n"
            "sigterm = true\n"
            "patch =\n    subprocess\n    _exit\n    fork\n"
            "include =\n" + "".join(f"    {name}\n" for name in files)
        )
        self.cov = coverage.Coverage(config_file=str(rc))
        self.cov.start()

    def finish(self) -> dict[str, list[int]]:
        self.cov.stop()
        self.cov.save()
        try:
            return unexecuted(self.data_dir, self.flagged)
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


def pytest_configure(config):
    global _guard
    if _wanted(config):
        _guard = Guard()
        _guard.start()


@pytest.hookimpl(trylast=True)  # after xdist has stopped the test processes
def pytest_sessionfinish(session, exitstatus):
    global _guard
    if _guard is None:
        return
    guard, _guard = _guard, None
    missing = guard.finish()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter else print
    if missing:
        write("")
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

"""The kinds of run differ in one table (runs.recipes.RECIPES), not in branches: outside the
recipe modules nothing compares a run's kind, and a query for the runs of one kind sits in that
kind's own package. An AST scan of agents_app, so a new branch fails here, not in review."""

import ast
from pathlib import Path

import pytest

from agents_app.models import RunKind
from agents_app.runs.recipes import recipe_for

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agents_app"

# Where the kinds may be told apart: the table's protocol and each kind's recipe.
RECIPE_MODULES = frozenset(
    {
        "agents_app/runs/recipes.py",
        "agents_app/runs/task_recipe.py",
        "agents_app/conversations/recipe.py",
        "agents_app/contracts/recipe.py",
        "agents_app/orchestration/recipes.py",
    }
)

# At most three, each with its reason. None is needed today.
EXCEPTIONS: dict[str, str] = {}

KIND_VALUES = frozenset(RunKind.values)

# Which package owns the queries for the runs of each kind.
OWNERS = {
    "task": "agents_app/runs/",
    "chat": "agents_app/conversations/",
    "contract": "agents_app/contracts/",
    "team": "agents_app/orchestration/",
    "child": "agents_app/orchestration/",
    "micro": "agents_app/orchestration/",
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "/migrations/" not in relative:
            yield relative, ast.parse(path.read_text(encoding="utf-8"), relative)


def _run_kind_member(node):
    """`RunKind.X` as the kind's value, else None."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "RunKind"
    ):
        return getattr(RunKind, node.attr, None)
    return None


def _is_runs_kind(node):
    """`x.kind` read off something named like a run (run, rows.run, w.run, child, parent)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "kind"):
        return False
    owner = ast.unparse(node.value).lower()
    return any(word in owner for word in ("run", "child", "parent"))


def _compares_a_run_kind(node):
    operands = [node.left, *node.comparators]
    if any(_run_kind_member(o) is not None or _is_runs_kind(o) for o in operands):
        return True
    # A variable holding a kind, compared with a kind's value spelled out.
    named = any(isinstance(o, ast.Name) and o.id == "kind" for o in operands)
    return named and any(isinstance(o, ast.Constant) and o.value in KIND_VALUES for o in operands)


def kind_comparisons(tree):
    """(line, source) of each place `tree` tells kinds of run apart: a comparison of a run's
    kind, a `match` on it, or an isinstance test against a recipe class."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and _compares_a_run_kind(node):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Match) and _is_runs_kind(node.subject):
            found.append((node.lineno, f"match {ast.unparse(node.subject)}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and ast.unparse(node.args[1]).endswith("Recipe")
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def kind_queries(tree):
    """(line, kind, source) of each query filtering runs by kind (`kind=RunKind.X`)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        if name not in {"filter", "exclude", "get"}:
            continue
        for keyword in node.keywords:
            kind = _run_kind_member(keyword.value)
            if keyword.arg in {"kind", "kind__exact"} and kind is not None:
                found.append((node.lineno, str(kind), ast.unparse(node)))
    return found


def test_every_kind_of_run_has_its_recipe_in_the_table():
    assert {kind: recipe_for(kind).kind for kind in RunKind.values} == {
        kind: kind for kind in RunKind.values
    }


def test_the_exceptions_are_few_and_each_has_its_reason():
    assert len(EXCEPTIONS) <= 3
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_no_module_but_a_recipe_compares_a_runs_kind():
    offenders = [
        f"{module}:{line}: {source}"
        for module, tree in _modules()
        if module not in RECIPE_MODULES and module not in EXCEPTIONS
        for line, source in kind_comparisons(tree)
    ]
    assert offenders == [], "ask the run's recipe (runs.recipes.recipe_for) instead"


def test_a_query_for_the_runs_of_one_kind_sits_in_that_kinds_package():
    offenders = [
        f"{module}:{line}: {source}"
        for module, tree in _modules()
        if module not in EXCEPTIONS
        for line, kind, source in kind_queries(tree)
        if not module.startswith(OWNERS[kind])
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "source",
    [
        "if run.kind == RunKind.CHAT: pass",
        "chat = rows.run.kind in TRANSCRIPT_KINDS",
        "ok = w.run.kind != 'team'",
        "x = 1 if kind == RunKind.MICRO else 2",
        "ok = run.kind in (RunKind.CHAT, RunKind.MICRO)",
        "match run.kind:\n    case 'chat': pass",
        "ok = isinstance(recipe, ChatRecipe)",
    ],
)
def test_the_scan_sees_each_way_of_telling_kinds_apart(source):
    assert kind_comparisons(ast.parse(source))


@pytest.mark.parametrize(
    "source",
    [
        "ok = approval.kind == ApprovalKind.PLAN",
        "ok = entry.kind == EntryKind.USER",
        "ok = action.kind == ActionKind.NONE",
        "ok = kind == 'timeout'",
        "recipe = recipe_for(run.kind)",
    ],
)
def test_the_scan_leaves_other_kinds_alone(source):
    assert kind_comparisons(ast.parse(source)) == []

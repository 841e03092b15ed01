"""pytest plugin: `uv run pytest` runs the suite in parallel processes (pytest-xdist).

Most of the suite's time goes to waiting on real processes (Celery workers, daphne, MCP
servers, the scripted LLM), so more processes than cores pay. The default is set here rather
than in addopts so that `-p no:xdist` still works; `-n N` chooses another number, `-n 0` (or
`-p no:xdist`) runs everything in this one process, as `--pdb` needs.

Each process has its own test database (pytest-django's _gw0, _gw1 ... suffix) and its own
var/, Redis database, queue, channel prefix and workspaces (tests/embedded_services.py).

Tests marked `xdist_group(name)` run in one process, one after the other (tests/conftest.py
marks those that share a daphne or a Celery worker started for their module). xdist's own
`--dist loadgroup` finds the groups in the node ids, which pytest 9.2 no longer lets it change
(pytest-dev/pytest-xdist#1386): here the test processes write the groups to a file that the
scheduler reads. The processes also move those groups, the `integration` tests (the slow
ones: real workers, daphne, `go`) and then the browser tests to the front of the queue, so that
no process starts one of them when the others are nearly done.
"""

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Measured on the 2-core CI machine (embedded pass, machine otherwise idle): -n 3 took 162 s,
# -n 4 141 s. -n 6 and -n 8, measured only beside other jobs, were not clearly faster and
# used 5 and 20 % more CPU.
PROCESSES = 4

_plans: Path | None = None  # in the controller: where the test processes write their groups


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config):
    # A wrapper: it must run before xdist's own pytest_cmdline_main reads these options.
    if config.pluginmanager.hasplugin("xdist"):
        option = config.option
        if hasattr(config, "workerinput"):
            # A test process parses only the command line: tell it the controller's choice.
            option.loadgroup = config.workerinput.get("dist") == "loadgroup"
        else:
            if option.numprocesses is None and not option.tx and not option.usepdb:
                option.numprocesses = PROCESSES
            if option.numprocesses and option.dist == "no":
                option.dist = "loadgroup"
    return (yield)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    global _plans
    if node.config.option.dist == "loadgroup" and _plans is None:
        _plans = Path(tempfile.mkdtemp(prefix="pytest-groups-"))
    node.workerinput["dist"] = node.config.option.dist
    node.workerinput["groups_dir"] = str(_plans) if _plans else ""


def pytest_unconfigure(config):
    if _plans is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_plans, ignore_errors=True)


@pytest.hookimpl(trylast=True)  # after every other plugin chose and ordered the tests
def pytest_collection_modifyitems(config, items):
    directory = getattr(config, "workerinput", {}).get("groups_dir")
    if not directory:
        return
    groups = {}
    for item in items:
        names = sorted({_group_name(mark) for mark in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    # Stable: within each part the order stays pytest-django's (database tests first).
    items.sort(key=lambda item: (item.nodeid not in groups, _rank(item)))
    path = Path(directory) / f"{config.workerinput['workerid']}.json"
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(groups))
    os.replace(temporary, path)  # whole before xdist reports this process's collection


def _rank(item) -> int:
    """The slow tests first: those that start processes of their own, then those of the test
    process's live stack (tests/support/stack.py), which a test starting its own workers stops:
    so each process meets the two kinds one after the other, not in turns."""
    if "stack" in item.fixturenames:
        return 1
    return 0 if item.get_closest_marker("integration") or "start_worker" in item.fixturenames else 2


def _group_name(mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.option.dist != "loadgroup" or _plans is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's loadgroup, with the groups from the test processes' files: each group is
        one unit of work (largest first), every other test a unit of its own."""

        groups: dict[str, str] | None = None

        def schedule(self) -> None:
            if self.groups is None and self.collection_is_completed:
                # Every process wrote its file before reporting its collection, and all
                # collections are the same (xdist checks): any one file will do.
                written = sorted(_plans.glob("*.json"))
                self.groups = json.loads(written[0].read_text()) if written else {}
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return (self.groups or {}).get(nodeid, nodeid)

    return GroupScheduling(config, log)

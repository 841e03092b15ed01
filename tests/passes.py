"""pytest plugin: which tests a pass runs, and which tests are slow.

`.ci/run` runs the suite twice. The README's command (`uv run pytest`: SQLite and an embedded
Valkey) runs every test. The second pass, on PostgreSQL and a real Redis, runs only what can
differ between the two: the tests marked `dialect` (see the marker's text in pyproject.toml for
the rule, and tests/dialect_guard.py for the check that keeps it true). `DIALECT` chooses:

    DIALECT=marked   only the `dialect` tests (.ci/run's second pass)
    DIALECT=all      every test (the default; run it on PostgreSQL before resolving an issue
                     that changes models, migrations, runs/ or worker/)

With DIALECT=marked the pass runs in MARKED_PROCESSES test processes unless `-n` says otherwise
(tests/parallel.py's four are for every test: for the marked ones on the 2-core CI machine,
three took 100 s where four took 137 s, and 150 s of CPU against 190). A test module that
never says "dialect" is not even imported: its tests cannot be marked (a mark given by a hook
instead would need this rule changed), and each test process of the pass imports two modules
in five.

`--reverse` runs the tests in the opposite order: a test that passes only after another has
left something behind shows itself.

A test over SLOW_SECONDS (setup, call and teardown together) should say why with
`@pytest.mark.slow(reason=...)`; the run ends by listing those that do not.
"""

import os

import pytest

SLOW_SECONDS = 15.0
MARKED_PROCESSES = 3

_seconds: dict[str, float] = {}
_marked_slow: set[str] = set()


def selection() -> str:
    value = os.environ.get("DIALECT", "all") or "all"
    if value not in ("all", "marked"):
        raise pytest.UsageError(f"DIALECT={value!r}: use DIALECT=all or DIALECT=marked")
    return value


def pytest_addoption(parser):
    parser.addoption("--reverse", action="store_true", help="run the tests in reverse order")


@pytest.hookimpl(wrapper=True, tryfirst=True)  # before tests/parallel.py picks its default
def pytest_cmdline_main(config):
    option = config.option
    if (
        selection() == "marked"
        and config.pluginmanager.hasplugin("xdist")
        and not hasattr(config, "workerinput")
        and option.numprocesses is None
        and not option.tx
        and not option.usepdb
    ):
        option.numprocesses = MARKED_PROCESSES
    return (yield)


def pytest_configure(config):
    selection()  # a wrong value fails before anything starts


def pytest_ignore_collect(collection_path, config):
    if selection() != "marked" or not collection_path.name.startswith("test_"):
        return None
    if collection_path.suffix != ".py" or not collection_path.is_file():
        return None
    if "dialect" not in collection_path.read_text(errors="replace").lower():
        return True
    return None


@pytest.hookimpl(tryfirst=True)  # before the other plugins order the tests
def pytest_collection_modifyitems(config, items):
    if config.getoption("reverse"):
        items.reverse()
    for item in items:
        mark = item.get_closest_marker("slow")
        if mark is not None and not mark.kwargs.get("reason"):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.slow needs a reason=")
    if selection() != "marked":
        return
    kept = [item for item in items if item.get_closest_marker("dialect")]
    dropped = [item for item in items if not item.get_closest_marker("dialect")]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_logreport(report):
    # In the controller under xdist, each phase's report arrives here from the test process.
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _marked_slow.add(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    if hasattr(terminalreporter.config, "workerinput"):
        return
    unmarked = sorted(
        (seconds, nodeid)
        for nodeid, seconds in _seconds.items()
        if seconds > SLOW_SECONDS and nodeid not in _marked_slow
    )
    if unmarked:
        terminalreporter.section(f"tests over {SLOW_SECONDS:.0f} s without a `slow` marker")
        for seconds, nodeid in reversed(unmarked):
            terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")

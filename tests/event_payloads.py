"""pytest plugin: every RunEvent a test wrote has the payload its type says
(agents_app.core.event_payloads), and the run's end names the event types no test emitted.

Checked in the tests, not on the hot path (as zulip's `event_schema` does). The check reads the
RunEvent rows when a test that used the database ends, before pytest-django rolls them back or
flushes them: so it sees the events of every process the test drove (its Celery workers, its
daphne), not only its own. A payload that is not of its type fails that test's teardown with
the event, the type and what is wrong.

A test that writes RunEvent rows of its own making (to test the store, a feed, a migration)
says so with `@pytest.mark.fabricated_events`, or a helper hands the events it made up to
`fabricated(...)`: they are not the emitters', and are not checked (the test's other events
still are). Types that are not an EventType (a test's "x") are never checked.

With pytest-xdist each test process sends the types it saw to the controller (workeroutput),
which reports the union at the end. A run of part of the suite only reports the types none of
its tests emitted; a run of the whole suite (whole_suite) fails when a type was never emitted.
"""

import os
import time
from typing import Any

import pytest
import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

from agents_app.core import event_payloads
from agents_app.core.event_payloads import EVENT_PAYLOADS
from agents_app.core.events import EventType

# The payloads' TypedDicts, nested ones included, refuse keys they do not name and take no
# value of another type (no "1" for 1): given here, not in the app, which never validates.
for _cls in vars(event_payloads).values():
    if typing_extensions.is_typeddict(_cls):
        _cls.__pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[attr-defined]

_ADAPTERS: dict[str, TypeAdapter] = {str(t): TypeAdapter(p) for t, p in EVENT_PAYLOADS.items()}

# Types no test emits yet, each with why: a run of the whole suite fails when any other type
# was never emitted (and so never checked). Take a type off when a test emits it.
NOT_EMITTED_YET: dict[EventType, str] = {}

_seen: set[str] = set()  # the event types this process's tests emitted
_fabricated: set[tuple[int, int]] = set()  # this test's made-up events: (run id, seq)
_tests_run = 0
_cost = [0.0, 0]  # seconds spent checking, events checked (this process)


def fabricated(*events: Any) -> None:
    """These RunEvents (written by a test's helper, with a payload of its own making) are not
    checked."""
    _fabricated.update((e.run_id, e.seq) for e in events)


def payload_problem(type_: str, payload: Any) -> str | None:
    """What is wrong with `payload` for an event of `type_` (None: nothing)."""
    try:
        _ADAPTERS[type_].validate_python(payload)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(payload)'}: {e['msg']}"
            + (f" (got {e['input']!r:.80})" if e["type"] != "missing" else "")
            for e in exc.errors()
        )
    return None


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "fabricated_events: the test writes RunEvent rows itself; tests/event_payloads.py does "
        "not check their payloads",
    )


def _used_database(item) -> bool:
    request = getattr(item, "_request", None)
    return request is not None and "_django_db_helper" in request._fixture_defs


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Read the events before the fixtures' teardown (the database's rollback or flush) runs,
    fail the test after it."""
    global _tests_run
    _tests_run += 1
    started = time.perf_counter()
    wrong = _wrong_payloads(item) if _used_database(item) else []
    _cost[0] += time.perf_counter() - started
    _fabricated.clear()
    result = yield
    if wrong:
        pytest.fail(
            "RunEvent payloads that are not of their type (agents_app/core/event_payloads.py):\n"
            + "\n".join(wrong[:20]),
            pytrace=False,
        )
    return result


def _wrong_payloads(item) -> list[str]:
    from django.db import DatabaseError
    from pytest_django.plugin import blocking_manager_key

    from agents_app.models import RunEvent

    if item.get_closest_marker("fabricated_events"):
        return []
    with item.config.stash[blocking_manager_key].unblock():
        try:
            events = list(
                RunEvent.objects.filter(type__in=_ADAPTERS).values_list(
                    "run_id", "seq", "type", "payload"
                )
            )
        except DatabaseError:
            return []  # the test broke its transaction: it failed already
    wrong = []
    for run_id, seq, type_, payload in events:
        if (run_id, seq) in _fabricated:
            continue
        _seen.add(type_)
        _cost[1] += 1
        problem = payload_problem(type_, payload)
        if problem:
            wrong.append(f"run {run_id} event {seq} ({type_}): {problem}")
    return wrong


_deselected = 0
_whole = False  # this run ran the whole suite (set as it ends)


def pytest_deselected(items):
    global _deselected
    _deselected += len(items)


def whole_suite(session) -> bool:
    """This run ran every test: no paths, ids, -k or -m chose some, no pass left some out."""
    config = session.config
    return (
        config.args_source == pytest.Config.ArgsSource.TESTPATHS
        and not _deselected
        and not config.option.keyword
        and not config.option.markexpr
        and os.environ.get("DIALECT", "all") in ("", "all")
        and not session.shouldstop
        and not session.shouldfail
    )


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a test process of xdist's: the controller reports
        workeroutput["event_types_seen"] = sorted(_seen)
        workeroutput["event_tests_run"] = _tests_run
        workeroutput["event_cost"] = list(_cost)
        return
    global _whole
    _whole = whole_suite(session)
    if unexcused() and _whole and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    global _tests_run
    output = getattr(node, "workeroutput", {}) or {}
    _seen.update(output.get("event_types_seen", ()))
    _tests_run += output.get("event_tests_run", 0)
    seconds, checked = output.get("event_cost", (0.0, 0))
    _cost[0] += seconds
    _cost[1] += checked


def never_emitted() -> list[str]:
    return sorted(str(t) for t in EventType if str(t) not in _seen)


def unexcused() -> list[str]:
    """The types never emitted that NOT_EMITTED_YET does not name."""
    return [t for t in never_emitted() if t not in NOT_EMITTED_YET]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if hasattr(config, "workerinput") or not _tests_run:
        return
    missing = never_emitted()
    if _whole and unexcused():
        terminalreporter.write_line(
            "event payloads: the whole suite ran and emitted no event of "
            f"{', '.join(unexcused())}: each type needs a test that emits it (and so checks it)",
            red=True,
        )
    if _whole:
        emitted_after_all = sorted(str(t) for t in NOT_EMITTED_YET if str(t) in _seen)
        if emitted_after_all:
            terminalreporter.write_line(
                "event payloads: a test emits "
                f"{', '.join(emitted_after_all)} now: take it off NOT_EMITTED_YET"
            )
    terminalreporter.write_line(
        f"event payloads: {_cost[1]} events of {len(EventType) - len(missing)} of "
        f"{len(EventType)} types checked after {_tests_run} tests, in {_cost[0]:.2f} s"
        + (f"; never emitted: {', '.join(missing)}" if missing else "")
    )

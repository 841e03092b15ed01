"""Waiting for a condition, never sleeping for a guess: a predicate polled until it holds, a
run until it finishes."""

import time

from agents_app.models import Run


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.1, message: str = ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {message or predicate}")


def wait_for_run(run_id: int, timeout: float = 60.0) -> Run:
    def finished():
        run = Run.objects.get(pk=run_id)
        return run if run.is_terminal else None

    return wait_for(finished, timeout, 0.2, f"run {run_id} to finish")

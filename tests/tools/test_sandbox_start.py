"""The sandbox starts without running Python code between fork and exec (issue 34): the worker
runs threads (parallel steps, Celery's), and a `preexec_fn` in a threaded program may deadlock
in the child on a lock another thread held at the fork. Python runs the interpreter's at-fork
hooks in a child only when it will run Python code there, so a hook is the witness."""

import os

from tests.support.sandbox import working_sandbox

_watch: dict[str, int] = {}


def _after_fork_in_child() -> None:
    if "fd" in _watch:
        os.write(_watch["fd"], b"x")


os.register_at_fork(after_in_child=_after_fork_in_child)


def test_starting_a_sandbox_runs_no_python_code_in_the_forked_child(tmp_path):
    sandbox = working_sandbox(tmp_path / "slots")
    read, write = os.pipe()
    os.set_blocking(read, False)
    _watch["fd"] = write
    try:
        outcome = sandbox.run(["/usr/bin/python3", "-c", "print('ran')"], workspace=tmp_path / "w")
    finally:
        del _watch["fd"]
        os.close(write)
    try:
        witnessed = os.read(read, 100)
    except BlockingIOError:
        witnessed = b""
    os.close(read)

    assert outcome.stdout == "ran\n"
    assert witnessed == b""

"""Attempts of one task driven in the test's own process from scripts that differ where a test
wants them to (issue 36, item 5: the diff of two runs)."""

from django.db import transaction

from agents_app.models import Run
from agents_app.runs.services import run_create
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry

TASK = "Echo three words"


def echo_script(second: str = "two", *, complete: bool = True) -> list[dict]:
    """Three steps of one echo each ("one", `second`, "three"), then the verifier's verdict
    (`complete` false: the run fails)."""

    def echoing(index: int, text: str) -> dict:
        return {
            "match": f"AGENTDESK:STEP {index}",
            "replies": [tool_call("echo", text=text), {"content": f"echoed {text}"}],
        }

    return [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [
                plan_reply(
                    step("echo one", ["echo"]),
                    step("echo the second word", ["echo"], [0]),
                    step("echo three", ["echo"], [1]),
                )
            ],
        },
        echoing(0, "one"),
        echoing(1, second),
        echoing(2, "three"),
        {
            "match": "AGENTDESK:VERIFY",
            "replies": [
                verdict(complete, "echoed three words", evidence=[1, 2, 3] if complete else [])
            ],
        },
    ]


def attempt(script: list[dict], *, owner=None, of: Run | None = None) -> Run:
    """A run of a new task of `owner`'s, or the next attempt of `of`'s task, executed to its
    end from `script`."""
    if of is None:
        run = make_run(owner, TASK, fast_path=False)
    else:
        with transaction.atomic():
            run = run_create(task=of.task)
    execute_run(run.pk, provider=ScriptedProvider(script), registry=make_registry(EchoTool()))
    run.refresh_from_db()
    return run

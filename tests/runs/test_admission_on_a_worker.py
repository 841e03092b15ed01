"""Fair when full, on a real worker: one person's backlog of 500 runs does not delay another
person's chat answer (runs/admission.py)."""

import time

import pytest

from agents_app.conversations.services import conversation_create, message_post
from agents_app.models import Run, RunStatus
from agents_app.runs.services import task_submit
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration]

TURNS = 3


@pytest.mark.slow(reason="500 submissions through the service layer and a worker")
def test_another_person_s_chat_answer_starts_within_a_second_behind_500_queued_runs(
    llm, start_worker, owner, outsider, settings
):
    settings.RUNS_RUNNING_PER_USER = TURNS
    llm.script(
        [
            # The first person's runs take their model's time: held until the test ends.
            {"match": "backlog", "replies": [{"hold": "backlog"}], "repeat": True},
            {"match": "Hello from B", "replies": [{"content": "Hello, B."}]},
        ]
    )
    start_worker("fair", RUNS_RUNNING_PER_USER=str(TURNS))
    backlog = [
        task_submit(owner=owner, interface="api", text=f"backlog {n}", fast_path=True).pk
        for n in range(500)
    ]
    # Their first TURNS runs are with the model; the other 497 wait their turn.
    wait_for(
        lambda: sum("backlog" in text for text, _, _ in llm.timeline) == TURNS,
        timeout=30,
        message="the first person's runs to reach the model",
    )
    assert Run.objects.filter(pk__in=backlog, waiting_turn=True).count() == 500 - TURNS

    conversation = conversation_create(owner=outsider, interface="api")
    asked_at = time.monotonic()
    _, answer = message_post(
        conversation=conversation, actor=outsider, interface="api", text="Hello from B"
    )
    came = wait_for(
        lambda: next((c for text, c, _ in llm.timeline if "Hello from B" in text), None),
        timeout=30,
        message="the second person's request",
    )
    try:
        assert came - asked_at <= 1.0, came - asked_at
        assert wait_for(
            lambda: Run.objects.get(pk=answer.pk).status == RunStatus.SUCCEEDED, timeout=30
        )
        # Still only the first TURNS of the backlog were sent: the rest wait in the database.
        assert sum("backlog" in text for text, _, _ in llm.timeline) == TURNS
    finally:
        Run.objects.filter(pk__in=backlog, waiting_turn=True).update(status=RunStatus.CANCELLED)
        llm.release("backlog")

"""Runs queue per person (runs/admission.py): past RUNS_RUNNING_PER_USER running, a person's new
runs wait their turn in the database and go, chat answers first, as their earlier ones end;
past RUNS_QUEUED_PER_USER waiting, new work is refused with 429 on every front end."""

import pytest
from django.test import Client

from agents_app.conversations.services import conversation_create, message_post
from agents_app.core.errors import DomainError
from agents_app.models import Run, RunKind, RunStatus, Task
from agents_app.runs.admission import admit_everyone, admit_waiting
from agents_app.runs.services import task_submit
from tests.support.api import post_json
from tests.support.api import submit as submit_over_rest
from tests.support.clients import key_client, logged_in, make_api_key
from tests.support.metrics import sample, scraped
from tests.support.runs import end

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]


@pytest.fixture
def sent(monkeypatch):
    """The runs whose message went to the workers, in order (nothing is sent for real)."""
    ids: list[int] = []
    monkeypatch.setattr(
        "agents_app.runs.lifecycle.dispatch.send",
        lambda task, run_id, countdown=None: ids.append(run_id),
    )
    return ids


@pytest.fixture
def llm(settings):
    settings.LLM_BASE_URL, settings.LLM_MODEL = "http://127.0.0.1:9/v1", "scripted"


def submit(owner, text="A task"):
    return task_submit(owner=owner, interface="api", text=text)


def waiting(run: Run) -> bool:
    return Run.objects.get(pk=run.pk).waiting_turn


def test_past_the_running_limit_a_new_run_waits_and_the_chat_answer_goes_first(
    owner, outsider, settings, sent, llm
):
    settings.RUNS_RUNNING_PER_USER = 2
    first, second, third = submit(owner), submit(owner), submit(owner)
    conversation = conversation_create(owner=owner, interface="api")
    _, answer = message_post(conversation=conversation, actor=owner, interface="api", text="Hi")
    theirs = submit(outsider)

    assert sent == [first.pk, second.pk, theirs.pk]  # another person's work is not held
    assert [waiting(r) for r in (first, second, third, answer)] == [False, False, True, True]
    assert admit_waiting(owner.pk) == []  # no turn free yet

    end(first, RunStatus.SUCCEEDED)
    # One turn free: the chat answer (somebody is watching) before the older task.
    assert admit_waiting(owner.pk) == [answer.pk]
    assert sent[-1] == answer.pk and waiting(third)

    # A parked run lets its turn go too; the sweep finds it as a delivery's end would.
    Run.objects.filter(pk=second.pk).update(status=RunStatus.WAITING_APPROVAL)
    assert admit_everyone() == [third.pk]
    assert sent[-1] == third.pk and not waiting(third)


def test_background_work_of_any_kind_goes_oldest_first(owner, settings, sent, llm):
    """A contract attempt is background work like a task (only a chat answer goes first): it
    neither passes an older task nor falls behind a newer one."""
    settings.RUNS_RUNNING_PER_USER = 1
    running = submit(owner)
    order = [RunKind.TASK, RunKind.CONTRACT, RunKind.TASK]
    held = []
    for n, kind in enumerate(order):
        task = Task.objects.create(owner=owner, text=f"background {n}")
        held.append(
            Run.objects.create(
                task=task,
                owner=owner,
                kind=kind,
                max_tokens=10,
                max_tool_calls=1,
                waiting_turn=True,
            )
        )

    let_go = []
    for before in [running, *held[:-1]]:
        end(before, RunStatus.SUCCEEDED)
        let_go += admit_waiting(owner.pk)
    assert let_go == [run.pk for run in held]


def test_a_restart_and_a_team_child_wait_their_turn_like_any_new_run(owner, settings, sent, llm):
    settings.RUNS_RUNNING_PER_USER = 1
    running = submit(owner)
    queued = submit(owner)
    assert waiting(queued) and sent == [running.pk]
    end(running, RunStatus.FAILED)
    from agents_app.runs.services import run_restart

    # A turn is free, but an older run waits for it: the restart queues behind, and the older
    # one goes.
    again = run_restart(run=Run.objects.get(pk=running.pk), actor=owner, interface="api")
    assert waiting(again) and not waiting(queued)
    assert sent == [running.pk, queued.pk]


def test_a_cancelled_waiting_run_ends_at_once_and_holds_no_place(owner, settings, sent, llm):
    from agents_app.runs.services import run_cancel

    settings.RUNS_RUNNING_PER_USER, settings.RUNS_QUEUED_PER_USER = 1, 1
    running, held = submit(owner), submit(owner)
    with pytest.raises(DomainError):
        submit(owner)  # one waiting already: the queue is full
    run_cancel(run=held, actor=owner, interface="api")
    assert Run.objects.get(pk=held.pk).status == RunStatus.CANCELLED
    submit(owner)  # its place is free again
    assert sent == [running.pk]


def waiting_rows(owner, count: int) -> None:
    """`count` runs of `owner` waiting their turn, written at once (as 1000 submissions would
    leave them)."""
    tasks = Task.objects.bulk_create([Task(owner=owner, text=f"backlog {n}") for n in range(count)])
    Run.objects.bulk_create(
        [
            Run(
                task=task,
                owner=owner,
                kind=RunKind.TASK,
                max_tokens=1000,
                max_tool_calls=10,
                waiting_turn=True,
            )
            for task in tasks
        ]
    )


def test_past_the_queued_limit_rest_and_the_pages_answer_429_with_the_error_shape(
    owner, settings, sent, llm
):
    settings.RUNS_QUEUED_PER_USER = 3
    waiting_rows(owner, 3)
    before = Run.objects.count()

    client = Client()
    client.force_login(owner)
    api = submit_over_rest(key_client(make_api_key(owner)), task="one more")
    assert api.status_code == 429
    error = api.json()["error"]
    assert error["code"] == "RATE_LIMITED" and error["trace_id"]
    assert error["details"] == {"queued": 3, "max_queued": 3}

    page = client.post("/tasks/new/", {"task": "one more"}, headers={"HX-Request": "true"})
    assert page.status_code == 429
    assert "runs waiting their turn" in page.content.decode()

    conversation = conversation_create(owner=owner, interface="api")
    chat = post_json(
        key_client(make_api_key(owner, name="chat")),
        f"/api/v1/conversations/{conversation.pk}/messages",
        {"text": "hello"},
    )
    assert chat.status_code == 429 and chat.json()["error"]["code"] == "RATE_LIMITED"
    assert Run.objects.count() == before and sent == []  # nothing stored, nothing sent


def test_the_dashboard_and_metrics_show_runs_running_and_waiting_their_turn(
    owner, outsider, settings, sent, llm
):
    settings.RUNS_RUNNING_PER_USER = 2
    settings.METRICS_TOKEN = "metrics-token-for-the-queue"
    for _ in range(5):
        submit(owner)
    submit(outsider)

    page = logged_in(owner).get("/")
    shown = page.content.decode()
    assert "2 running, 3 waiting their turn" in shown

    metrics = Client().get(
        "/metrics", headers={"Authorization": "Bearer metrics-token-for-the-queue"}
    )
    parsed = scraped(metrics.content.decode())
    assert sample(parsed, "agentdesk_runs_running") == 3  # the outsider's one too
    assert sample(parsed, "agentdesk_runs_waiting_turn") == 3

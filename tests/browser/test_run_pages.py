"""The pages in a real browser: log in, submit a task, watch it run live without a reload,
reload mid-run and see the full history, cancel and restart a run, follow the dashboard."""

import json
import re

import httpx
import pytest
from django.db import transaction

from agents_app.models import AuditInterface, Run, RunEvent, RunStatus
from agents_app.runs.services import run_cancel
from tests.support.browser import PASSWORD, WAIT_MS, expect, log_in, run_id_of
from tests.support.runs import add_plan, advance, complete_step, fail, make_run, succeed
from tests.support.script import plan_reply, step, verdict

pytestmark = pytest.mark.integration


NOTES = (
    "Weekly sync, 3 March. Present: Ana, Bo, Chen. Decisions: ship the dashboard on Friday, "
    "move the import job to the night queue, review the retry budget next week."
)
STREAMED = [
    "The notes ",
    "list three ",
    "decisions: ",
    "ship Friday, ",
    "night queue, ",
    "retries.",
]


def verdict_with(reasoning, response):
    """A passing verdict whose reasoning the page should show, citing the run's first call."""
    content = {
        "task_complete": True,
        "reasoning": reasoning,
        "should_replan": False,
        "evidence": [1],
    }
    return {"content": json.dumps({**content, "response": response})}


def log_seqs(page):
    """(seq, type) of every line of the page's event log, in page order."""
    return [
        tuple(item)
        for item in page.locator("#event-log li").evaluate_all(
            "items => items.map(li => [Number(li.dataset.seq), li.dataset.type])"
        )
    ]


def stored_events(run_id):
    return list(RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", "type"))


def test_a_submitted_task_runs_live_on_its_page_without_a_reload(page, stack, owner, screenshot):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                # A moment to load the run page before anything happens.
                "replies": [
                    {
                        **plan_reply(
                            step("Write the meeting notes to notes.md", ["write_file"]),
                            step("Summarise the decisions"),
                        ),
                        "delay": 1,
                    }
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {
                        "reasoning": "The notes are long, so one write_file call keeps them whole.",
                        "tool_calls": [
                            {
                                "name": "write_file",
                                "arguments": {"path": "notes.md", "content": NOTES},
                            }
                        ],
                    },
                    {"content": "notes.md is written."},
                ],
            },
            {
                "match": "AGENTDESK:STEP 1",
                "replies": [{"chunks": STREAMED, "chunk_delay": 0.4}],
            },
            {
                "match": "AGENTDESK:VERIFY",
                "replies": [
                    verdict_with(
                        "notes.md exists and the summary names all three decisions.",
                        "notes.md holds the meeting notes; three decisions were made.",
                    )
                ],
            },
        ]
    )
    log_in(page, "owner", PASSWORD, through_form=True)
    page.click("nav a:text('New task')")
    page.fill("#task-form textarea[name=task]", "Write up this week's meeting notes")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.evaluate("window.loadedOnce = 'yes'")  # gone if the page ever navigates or reloads
    expect(page.locator("#run-live .live-indicator")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )

    # Step 2's answer streams into #stream token by token while the step is running.
    seen = page.wait_for_function(
        """first => {
            const stream = document.getElementById("stream");
            if (!stream || !stream.textContent.includes(first)) return false;
            return {
                text: stream.textContent,
                label: document.getElementById("stream-label").textContent,
                step: document.getElementById("step-1-1").dataset.status,
            };
        }""",
        arg=STREAMED[0].strip(),
        polling="raf",
        timeout=WAIT_MS,
    ).json_value()
    assert seen["step"] == "running" and seen["label"] == "Step 2"
    assert STREAMED[-1] not in seen["text"], "the whole answer arrived at once, not streamed"

    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator(".step[data-status=completed]")).to_have_count(2)
    expect(page.locator("#progress")).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#result .answer")).to_have_text(
        "notes.md holds the meeting notes; three decisions were made."
    )
    expect(page.locator("#step-1-1 .step-output")).to_have_text("".join(STREAMED))
    thoughts = page.locator("#reasoning-saved .thought")
    expect(thoughts.filter(has_text="Step 1")).to_contain_text(
        "The notes are long, so one write_file call keeps them whole."
    )
    expect(thoughts.filter(has_text="Verification")).to_contain_text(
        "notes.md exists and the summary names all three decisions."
    )
    call = page.locator("#step-1-0 .tool-call")
    arguments = '{"path":"notes.md","content":"' + NOTES + '"}'
    expect(call.locator(".tool-name")).to_have_text("write_file")
    expect(call.locator(".tool-args")).to_have_text(arguments[:80] + "…")
    expect(call.locator(".tool-args")).to_have_attribute("title", arguments)
    expect(call.locator(".badge")).to_have_attribute("data-status", "succeeded")
    assert page.evaluate("window.loadedOnce") == "yes"
    # The log followed the events to its end and shows whole rows: none cut at the top.
    log = page.evaluate(
        """() => {
            const log = document.getElementById("event-log");
            const top = log.getBoundingClientRect().top + log.clientTop;
            const rows = Array.from(log.children).map(row => row.getBoundingClientRect());
            return {
                overflows: log.scrollHeight > log.clientHeight,
                atEnd: log.scrollHeight - log.scrollTop - log.clientHeight < 2,
                cut: rows.filter(row => row.top < top - 0.5 && row.bottom > top + 0.5).length,
            };
        }"""
    )
    assert log == {"overflows": True, "atEnd": True, "cut": 0}

    run = Run.objects.get(pk=run_id_of(page))
    assert run.status == RunStatus.SUCCEEDED and run.owner == owner
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "run-page.png")


def test_a_reload_mid_run_shows_the_whole_history_and_stays_live(page, stack, owner):
    objectives = ["Fetch the data", "Clean it", "Chart it", "Describe the chart"]
    stack.llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(*map(step, objectives))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "fetched"}]},
            # The later steps wait for the reload, so it lands while they are still to come.
            *[
                {
                    "match": f"AGENTDESK:STEP {i}",
                    "replies": [{"content": f"done {i}", "hold": "reloaded"}],
                }
                for i in (1, 2, 3)
            ],
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "charted and described")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Chart last month's sign-ups")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    run_id = run_id_of(page)
    expect(page.locator("#step-1-0")).to_have_attribute("data-status", "completed", timeout=WAIT_MS)

    stored_before = stored_events(run_id)
    page.reload()
    shown = log_seqs(page)
    stored_after = stored_events(run_id)
    # Everything stored before the reload is shown, in order, each once; whatever the page
    # already got live since is the next stored events, not a gap or a repeat.
    assert shown == stored_after[: len(shown)]
    assert len(shown) >= len(stored_before)
    assert [seq for seq, _ in shown] == list(range(1, len(shown) + 1))
    completed_at_reload = page.locator(".step[data-status=completed]").count()
    assert completed_at_reload < len(objectives)
    stack.llm.release("reloaded")

    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )
    expect(page.locator(".step[data-status=completed]")).to_have_count(len(objectives))
    expect(page.locator("#event-log li[data-type=result]")).to_have_count(1)
    final = log_seqs(page)
    assert final == stored_events(run_id)
    assert [seq for seq, _ in final] == list(range(1, Run.objects.get(pk=run_id).event_seq + 1))


def test_a_cancelled_run_can_be_restarted_as_attempt_2(page, stack, owner):
    stack.llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    plan_reply(step("Collect the sources"), step("Write the report")),
                    plan_reply(step("Write the report")),
                ],
            },
            {
                "match": "AGENTDESK:STEP 0",
                # Attempt 1's step is held until Cancel was pressed while it works.
                "replies": [
                    {"content": "collected", "hold": "cancelled"},
                    {"content": "report written"},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "the report is written")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    page.goto("/tasks/new/")
    page.fill("#task-form textarea[name=task]", "Write the report")
    page.click("#task-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    first_id = run_id_of(page)
    expect(page.locator("#step-1-0")).to_have_attribute("data-status", "running", timeout=WAIT_MS)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "running")

    page.click("#cancel-run")
    expect(page.locator("#cancel-run")).to_have_text("Cancelling…")
    expect(page.locator("#cancel-run")).to_be_disabled()
    stack.llm.release("cancelled")
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "cancelled", timeout=WAIT_MS
    )
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(page.locator("#result")).to_contain_text("The run was cancelled")
    expect(page.locator("#cancel-run")).to_have_count(0)
    expect(page.locator("#restart-run")).to_be_visible()
    assert Run.objects.get(pk=first_id).status == RunStatus.CANCELLED

    page.click("#restart-run")
    page.wait_for_url(re.compile(rf"/runs/(?!{first_id}/)\d+/$"))
    second = Run.objects.get(pk=run_id_of(page))
    assert (second.attempt, second.task_id) == (2, Run.objects.get(pk=first_id).task_id)
    expect(page.locator(".eyebrow")).to_contain_text("attempt 2")
    attempts = page.locator("#attempts")
    expect(attempts.locator(".attempt.current")).to_contain_text("#2")
    earlier = attempts.locator(f"a.attempt[href='/runs/{first_id}/']")
    expect(earlier).to_contain_text("#1")
    expect(earlier.locator(".badge")).to_have_attribute("data-status", "cancelled")
    expect(page.locator("#run-status")).to_have_attribute(
        "data-status", "succeeded", timeout=WAIT_MS
    )

    earlier.click()
    page.wait_for_url(f"/runs/{first_id}/")
    expect(page.locator("#attempts a.attempt")).to_contain_text("#2")


def test_an_update_that_leaves_the_buttons_as_they_are_does_not_replace_them(page, stack, owner):
    # A page rendered mid-run replays the events after its seq, and the run's status changes
    # re-render its controls: a click landing while they are replaced would be lost.
    with transaction.atomic():
        run = make_run(owner, "Write the report")  # queued, never enqueued: nobody runs it
    log_in(page, "owner", PASSWORD)
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator(".live-indicator")).to_have_attribute("data-state", "live")
    cancel = page.locator("#cancel-run")
    cancel.focus()
    cancel.evaluate("button => { button.kept = true; }")

    advance(run, RunStatus.PLANNING)
    expect(page.locator("#run-status")).to_have_attribute("data-status", "planning")
    expect(page.locator("#event-log li[data-type=run_status]")).to_have_count(1)
    assert cancel.evaluate("button => button.kept === true")
    assert page.evaluate("document.activeElement.id") == "cancel-run"

    # A change the person should see still replaces them.
    run_cancel(run=run, actor=owner, interface=AuditInterface.WEB)
    expect(cancel).to_have_text("Cancelling…")
    assert cancel.evaluate("button => button.kept === undefined")


def test_the_dashboard_shows_a_new_run_and_its_status_live(
    page, stack, owner, api_key_for, screenshot
):
    # Runs in other states, made as the engine would make them. In a transaction because
    # make_run's run_create locks the task row, which PostgreSQL refuses in autocommit.
    with transaction.atomic():
        done = make_run(owner, "Summarise the quarterly report")
        plan = add_plan(done, ["Read the report", "Write the summary"])
        complete_step(done, plan, 0)
        complete_step(done, plan, 1)
        succeed(done, "The summary is in summary.md.")
        fail(make_run(owner, "Download the invoices from the vendor portal"), "TOOL_FAILED", "403")
        run_cancel(
            run=make_run(owner, "Translate the handbook into German"),
            actor=owner,
            interface=AuditInterface.WEB,
        )
        working = make_run(owner, "Check every link in the docs")
        complete_step(working, add_plan(working, ["List links", "Fetch each", "Report"]), 0)

    stack.llm.script(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("Write the haiku"))]},
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "written", "delay": 1}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "a haiku about queues")]},
        ]
    )
    log_in(page, "owner", PASSWORD)
    expect(page.locator("#runs tbody tr")).to_have_count(4)
    page.evaluate("window.loadedOnce = 'yes'")
    # The dashboard replays nothing: only what happens after its socket is open shows live.
    expect(page.locator("#dashboard-live .live-indicator")).to_have_attribute(
        "data-state", "live", timeout=WAIT_MS
    )

    response = httpx.post(
        f"{stack.url}/api/v1/agent/task",
        headers={"Authorization": api_key_for(owner).decode()},
        json={"task": "Write a haiku about queues"},
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run_id"]

    row = page.locator(f"#run-row-{run_id}")
    expect(row).to_be_visible(timeout=WAIT_MS)
    expect(page.locator("#runs tbody tr").first).to_have_id(f"run-row-{run_id}")
    expect(row).to_contain_text("Write a haiku about queues")
    expect(row.locator(".badge")).to_have_attribute("data-status", "succeeded", timeout=WAIT_MS)
    expect(row).to_contain_text("100%")
    expect(page.locator("#runs tbody tr")).to_have_count(5)
    statuses = page.locator("#runs tbody .badge").evaluate_all(
        "badges => badges.map(b => b.dataset.status)"
    )
    assert statuses == ["succeeded", "running", "cancelled", "failed", "succeeded"]
    assert page.evaluate("window.loadedOnce") == "yes"
    screenshot(page, "dashboard.png")

"""Contract agents driven through the database with an in-process scripted LLM (no Celery):
each attempt is a run of the one engine, a tool cycle at a time, each cycle judged against
the contract; Stop lets the answer in flight finish; budgets and repetition stop an attempt;
Restart starts a new attempt; every attempt writes its log file."""

import time

import pytest

from agents_app.contracts.logs import log_path
from agents_app.contracts.selectors import agent_state, attempts
from agents_app.contracts.services import agent_create, agent_start, agent_stop, agent_update
from agents_app.conversations.selectors import transcript
from agents_app.core.errors import DomainError
from agents_app.models import AuditEvent, RunEvent
from agents_app.worker.execution import execute_run
from tests.support.script import json_reply, tool_call
from tests.support.tools import BrokenTool, EchoTool, make_registry

from .test_chat_answers import SnapshotProvider

pytestmark = pytest.mark.django_db(transaction=True)


def evaluation(met, reason, *evidence):
    return json_reply({"met": met, "reason": reason, "evidence": list(evidence)})


@pytest.fixture
def logs(settings, tmp_path):
    settings.AGENT_LOG_DIR = tmp_path / "logs"
    return settings.AGENT_LOG_DIR


def run_attempt(run, provider, registry):
    execute_run(run.pk, provider=provider, registry=registry)
    run.refresh_from_db()
    return run


def test_an_agent_works_in_cycles_until_it_judges_its_contract_met(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo a then b.")
    assert agent.name == "Agent-1" and agent_state(agent).status == "ready"
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [
                    evaluation(False, "b is not echoed yet"),
                    evaluation(True, "a and b were echoed", 1, 2),
                ],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [
                    {**tool_call("echo", text="a"), "content": "Echoing a."},
                    tool_call("echo", text="b"),
                ],
            },
        ]
    )
    run = run_attempt(run, provider, make_registry(EchoTool()))
    assert (run.kind, run.status, run.final_response) == (
        "contract",
        "succeeded",
        "a and b were echoed",
    )
    state = agent_state(agent)
    assert (state.status, state.reason) == ("completed", "a and b were echoed")
    # The first cycle began with the contract; the second heard why the first was not enough.
    assert provider.sent[0][-1] == {"role": "user", "content": "Echo a then b."}
    second_cycle = [m for m in provider.sent if "AGENTDESK:EVALUATE" not in str(m[-1])][1]
    assert second_cycle[-1]["content"].startswith("The contract is not met yet: b is not echoed")
    evaluations = [e.payload for e in RunEvent.objects.filter(run=run, type="contract_evaluation")]
    assert [(e["cycle"], e["met"]) for e in evaluations] == [(1, False), (2, True)]
    assert [c["tool"] for c in evaluations[1]["evidence"]] == ["echo", "echo"]
    assert [(e.kind, e.text) for e in transcript(run.conversation) if e.kind != "tool_call"] == [
        ("user", "Echo a then b."),
        ("assistant", "Echoing a."),
        ("tool_result", '{"echo": "a"}'),
        ("tool_result", '{"echo": "b"}'),
    ]
    log = log_path(run).read_text()
    assert "[contract] Echo a then b." in log and "[agent] Echoing a." in log
    assert '[tool] echo {"text": "b"}' in log
    assert "[evaluation] contract met: a and b were echoed" in log


def test_an_attempt_out_of_turns_stops_and_says_so(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo forever.", max_turns=2)
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [evaluation(False, "more")], "repeat": True},
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [tool_call("echo", text="1"), tool_call("echo", text="2")],
            },
        ]
    )
    run = run_attempt(run, provider, make_registry(EchoTool()))
    assert (run.status, run.error_code) == ("failed", "BUDGET_EXCEEDED")
    state = agent_state(agent)
    assert state.status == "stopped"
    assert state.reason == "budget exhausted: turns: the attempt used 2 of its 2 cycles"


def test_the_same_call_with_the_same_result_four_times_is_stuck(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo x.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [evaluation(False, "again")],
                "repeat": True,
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [tool_call("echo", text="x")],
                "repeat": True,
            },
        ]
    )
    run = run_attempt(run, provider, make_registry(EchoTool()))
    assert (run.status, run.error_code) == ("failed", "AGENT_STUCK")
    assert run.replans == 3  # four cycles
    assert agent_state(agent).reason.startswith("stuck: the same call with the same result 4")


def test_the_same_error_three_times_is_stuck(owner, llm, logs, settings):
    agent = agent_create(owner=owner, interface="api", contract="Break it.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [evaluation(False, "again")],
                "repeat": True,
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [{**tool_call("broken"), "content": "Trying."}],
                "repeat": True,
            },
        ]
    )
    run = run_attempt(run, provider, make_registry(BrokenTool()))
    assert (run.status, run.error_code) == ("failed", "AGENT_STUCK")
    assert "the same error 3 times" in run.error_message


def test_stop_lets_the_answer_in_flight_finish_and_makes_no_further_request(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo a.")
    run = agent_start(agent=agent, actor=owner, interface="api")

    def stop_while_answering(request):
        agent_stop(agent=agent, actor=owner, interface="api")
        # The stream goes on: polled while it streams, the stop does not cut it.
        request.interrupt()
        return {"content": "Here is my answer so far.", **tool_call("echo", text="a")}

    provider = SnapshotProvider(
        [{"match": "AGENTDESK:CONTRACT", "replies": [stop_while_answering]}]
    )
    run = run_attempt(run, provider, make_registry(EchoTool()))
    assert run.status == "cancelled" and len(provider.requests) == 1
    assert agent_state(agent).status == "stopped"
    assert agent_state(agent).reason == "stopped by the person"
    rows = [(e.kind, e.text) for e in transcript(run.conversation) if e.kind != "tool_call"]
    assert rows == [
        ("user", "Echo a."),
        ("assistant", "Here is my answer so far."),
        ("tool_result", '{"error": "Stopped before this call returned."}'),
    ]
    # The log says the word the agent's tab says, and why.
    log = log_path(run).read_text()
    assert log.rstrip().endswith("[end] Stopped: stopped by the person")
    assert "cancelled" not in log


def test_stop_now_cuts_the_answer_in_flight_and_keeps_what_it_had_written(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Tell a long story.")
    run = agent_start(agent=agent, actor=owner, interface="api")

    def stopped_midway(request):
        agent_stop(agent=agent, actor=owner, interface="api")
        request.on_token("Once upon a time")
        time.sleep(0.3)  # past the poll interval (worker.hooks.POLL_SECONDS)
        request.interrupt()  # a plain Stop lets the answer go on...
        agent_stop(agent=agent, actor=owner, interface="web", now=True)
        request.on_token(" there was")
        time.sleep(0.3)
        request.interrupt()  # ...Stop now cuts it at the next piece
        raise AssertionError("the stream should have been cut")

    provider = SnapshotProvider([{"match": "AGENTDESK:CONTRACT", "replies": [stopped_midway]}])
    run = run_attempt(run, provider, make_registry(EchoTool()))

    assert run.status == "cancelled" and len(provider.requests) == 1
    assert (agent_state(agent).status, agent_state(agent).reason) == (
        "stopped",
        "stopped by the person",
    )
    assert [(e.kind, e.text) for e in transcript(run.conversation)] == [
        ("user", "Tell a long story."),
        ("assistant", "Once upon a time there was …[stopped]"),
    ]
    stops = AuditEvent.objects.filter(action="agent.stop").order_by("id")
    assert [s.details for s in stops] == [{}, {"now": True}]
    assert log_path(run).read_text().rstrip().endswith("[end] Stopped: stopped by the person")


def test_restart_starts_a_new_attempt_with_the_edited_contract(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo a.")
    first = agent_start(agent=agent, actor=owner, interface="api")
    with pytest.raises(DomainError) as busy:
        agent_start(agent=agent, actor=owner, interface="api")
    assert busy.value.code == "CONFLICT"
    with pytest.raises(DomainError) as fixed:
        agent_update(agent=agent, actor=owner, interface="api", contract="Echo b.")
    assert fixed.value.code == "CONFLICT"
    agent_stop(agent=agent, actor=owner, interface="api")
    first.refresh_from_db()
    assert first.status == "cancelled"
    agent_update(agent=agent, actor=owner, interface="api", contract="Echo b.")
    edit = AuditEvent.objects.get(action="agent.update")
    assert (edit.actor_id, edit.target, edit.details) == (
        owner.pk,
        str(agent.pk),
        {"fields": ["contract"]},
    )
    second = agent_start(agent=agent, actor=owner, interface="api")
    assert [r.pk for r in attempts(agent)] == [second.pk, first.pk]
    assert second.task.text == "Echo b." and second.conversation_id != first.conversation_id
    assert log_path(second) != log_path(first)
    assert "attempt-2" in log_path(second).name


def test_a_log_that_cannot_be_written_is_told_and_the_attempt_goes_on(
    owner, llm, settings, tmp_path
):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log directory should be")
    settings.AGENT_LOG_DIR = blocker
    agent = agent_create(owner=owner, interface="api", contract="Say hi.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [evaluation(True, "said hi")]},
            {"match": "AGENTDESK:CONTRACT", "replies": [{"content": "hi"}]},
        ]
    )
    run = run_attempt(run, provider, make_registry())
    assert run.status == "succeeded"
    failed = RunEvent.objects.filter(run=run, type="log_failed")
    assert failed.count() == 1 and "not-a-dir" in failed.get().payload["path"]


def test_an_attempts_transcript_is_no_chat_a_message_could_be_posted_to(owner, llm, logs):
    from agents_app.conversations.selectors import conversation_get, conversations_for

    agent = agent_create(owner=owner, interface="api", contract="Echo a.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    assert not conversations_for(owner).exists()
    with pytest.raises(DomainError) as missing:
        conversation_get(user=owner, conversation_id=run.conversation_id)
    assert missing.value.code == "NOT_FOUND"


def test_an_evaluation_records_the_results_it_cites_cut_to_500_characters(owner, llm, logs):
    agent = agent_create(owner=owner, interface="api", contract="Echo a long text.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = SnapshotProvider(
        [
            {"match": "AGENTDESK:EVALUATE", "replies": [evaluation(True, "echoed", 1)]},
            {"match": "AGENTDESK:CONTRACT", "replies": [tool_call("echo", text="x" * 700)]},
        ]
    )
    run = run_attempt(run, provider, make_registry(EchoTool()))
    cited = RunEvent.objects.get(run=run, type="contract_evaluation").payload["evidence"]
    assert [(c["number"], c["tool"], len(c["result"])) for c in cited] == [(1, "echo", 500)]
    assert cited[0]["result"].startswith('{"echo": "xxx')

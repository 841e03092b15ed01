"""Model exchanges recorded (issue 36, item 1): every model call's outcome is kept with the run
(ModelExchange), numbered in the order the calls were made, with a hash of the request; a run
recorded before they were kept says it cannot be replayed."""

import json
import zlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from agents_app.conversations.services import conversation_create, message_post
from agents_app.engine.exchanges import request_sha256, text_sha256, unframed, unpack_calls
from agents_app.engine.llm import LLMRequest, ToolSchema
from agents_app.models import ModelExchange, Run, Step, ToolCall
from agents_app.runs.exchanges import ModelCall, model_calls
from agents_app.worker.execution import execute_run
from tests.support.clients import logged_in
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, FinishTool, make_registry

pytestmark = pytest.mark.django_db(transaction=True)

SHA256_HEX = 64


def exchanges(run) -> list[ModelCall]:
    return model_calls(run.pk)


def planned_run(owner, text="Echo twice"):
    """A planned task: the plan, one step with two tool-call turns and an answer, the verdict."""
    run = make_run(owner, text, fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("echo twice", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {**tool_call("echo", text="one"), "reasoning": "First the one."},
                    tool_call("echo", text="two"),
                    {"content": "echoed one and two", "usage": {"prompt_tokens": 30}},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1, 2])]},
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    return run, provider


def test_a_planned_run_keeps_each_model_answer_in_the_order_it_was_asked(owner):
    run, provider = planned_run(owner)

    kept = exchanges(run)
    assert [(e.seq, e.phase) for e in kept] == [
        (1, "planning"),
        (2, "execution"),
        (3, "execution"),
        (4, "execution"),
        (5, "verification"),
    ]
    assert run.exchange_seq == 5 and run.recorded
    (step_row,) = Step.objects.filter(run=run)
    assert [e.step_id for e in kept] == [None, step_row.pk, step_row.pk, step_row.pk, None]
    assert [e.attempt for e in kept] == [1, 0, 0, 0, 1]  # the run's attempt, the step's retries
    plan, first, second, answer, judged = kept
    assert json.loads(plan.content)["steps"][0]["objective"] == "echo twice"
    assert (first.content, first.reasoning, first.finish_reason) == (
        "",
        "First the one.",
        "tool_calls",
    )
    assert first.tool_calls == [
        {"id": "call_0", "name": "echo", "arguments": {"text": "one"}, "arguments_error": None}
    ]
    assert second.tool_calls[0]["arguments"] == {"text": "two"}
    assert (answer.content, answer.tool_calls, answer.finish_reason) == (
        "echoed one and two",
        [],
        "stop",
    )
    assert json.loads(judged.content)["task_complete"] is True
    # What each call cost, as the run counted it, and which model answered.
    assert (answer.prompt_tokens, answer.completion_tokens) == (30, 7)
    assert sum(e.prompt_tokens for e in kept) == run.prompt_tokens
    assert sum(e.completion_tokens for e in kept) == run.completion_tokens
    assert {e.llm_model for e in kept} == {"scripted"}
    # Each request is hashed as the engine asked it; no two of these were the same request.
    hashes = [e.request_sha256 for e in kept]
    assert all(len(h) == SHA256_HEX and int(h, 16) >= 0 for h in hashes)
    assert len(set(hashes)) == len(hashes)
    # Each request's text is kept as it was hashed (no secret in it to redact)...
    assert [text_sha256(e.request) for e in kept] == hashes
    assert json.loads(answer.request)["messages"][-1]["role"] == "tool"
    # ...the calls of no step a row a phase, the step's three on the step's row, one frame.
    rows = ModelExchange.objects.filter(run=run).order_by("seq")
    assert [(r.seq, len(unpack_calls(r.calls)), r.phase) for r in rows] == [
        (1, 1, "planning"),
        (5, 1, "verification"),
    ]
    (frame,) = unframed(Step.objects.values_list("model_calls", flat=True).get(pk=step_row.pk))
    assert [(c["seq"], c["phase"], c["attempt"]) for c in unpack_calls(frame)] == [
        (2, "execution", 0),
        (3, "execution", 0),
        (4, "execution", 0),
    ]


def test_the_request_hash_changes_with_the_prompt_and_not_otherwise():
    def request(text, **options):
        return LLMRequest(
            messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": text}],
            tools=[ToolSchema("echo", "Echoes.", {"type": "object"})],
            **options,
        )

    same = request_sha256(request("hi"))
    # What does not reach the model: the time allowed, the callbacks.
    assert request_sha256(request("hi", timeout=5.0, on_token=print, interrupt=print)) == same
    assert request_sha256(request("hi ")) != same
    assert request_sha256(request("hi", max_tokens=100)) != same
    assert request_sha256(request("hi", tool_required=True)) != same
    assert request_sha256(request("hi", response_schema={"type": "object"})) != same
    assert request_sha256(LLMRequest(messages=request("hi").messages)) != same  # no tools
    # The same message with its keys in another order (a result read back from PostgreSQL's
    # JSON) is the same request.
    reordered = request("hi")
    reordered.messages[1] = {"content": "hi", "role": "user"}
    assert list(reordered.messages[1]) != list(request("hi").messages[1])
    assert request_sha256(reordered) == same


def test_the_same_task_asks_the_same_requests_and_another_task_another_plan_request(owner):
    first, _ = planned_run(owner, "Echo twice")
    again, _ = planned_run(owner, "Echo twice")
    other, _ = planned_run(owner, "Echo twice, please")

    assert [e.request_sha256 for e in exchanges(again)] == [
        e.request_sha256 for e in exchanges(first)
    ]
    assert exchanges(other)[0].request_sha256 != exchanges(first)[0].request_sha256


def test_a_chat_answer_keeps_each_of_its_turns(owner, llm):
    chat = conversation_create(owner=owner, interface="api")
    _, run = message_post(conversation=chat, actor=owner, interface="api", text="Echo hi")
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:CHAT",
                "replies": [
                    {**tool_call("echo", text="hi"), "reasoning": "I should echo."},
                    {"content": "It said **hi**.", "reasoning": "Done."},
                ],
            }
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))
    run.refresh_from_db()
    assert (run.kind, run.status) == ("chat", "succeeded")

    kept = exchanges(run)
    assert [(e.seq, e.phase) for e in kept] == [(1, "execution"), (2, "execution")]
    assert [e.tool_calls[0]["name"] for e in kept[:1]] == ["echo"]
    assert [(e.content, e.reasoning) for e in kept] == [
        ("", "I should echo."),
        ("It said **hi**.", "Done."),
    ]
    assert kept[0].request_sha256 != kept[1].request_sha256


def test_a_failed_model_call_is_kept_with_its_error(owner):
    run = make_run(owner, "Plan it", fast_path=False)
    provider = ScriptedProvider(
        [{"match": "AGENTDESK:PLAN", "replies": [{"raise": "RATE_LIMITED", "message": "slow"}]}]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))
    run.refresh_from_db()
    assert run.status == "failed"

    (kept,) = exchanges(run)
    assert (kept.phase, kept.error_code, kept.error, kept.content) == (
        "planning",
        "RATE_LIMITED",
        "slow",
        "",
    )


def test_a_secret_in_the_model_s_answer_is_redacted_before_it_is_kept(owner):
    token = "ghp_" + "A1b2C3d4E5" * 4  # a GitHub token's shape: redacted wherever it is seen
    run = make_run(owner, "Echo a token", fast_path=False)
    provider = ScriptedProvider(
        [
            {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("echo it", ["echo"]))]},
            {
                "match": "AGENTDESK:STEP 0",
                "replies": [
                    {**tool_call("echo", text=token), "reasoning": f"the token is {token}"},
                    {"content": f"echoed {token}"},
                ],
            },
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))

    kept = exchanges(run)
    assert len(kept) == 4
    stored = json.dumps([[e.content, e.reasoning, e.tool_calls] for e in kept])
    assert token not in stored
    assert kept[1].reasoning == "the token is [redacted]"
    # What the model was asked holds it too (the step's second request, the tool's result).
    assert all(token not in e.request for e in kept)
    assert "echoed" not in kept[2].request and kept[2].request.count("[redacted]") == 2
    assert kept[1].tool_calls[0]["arguments"] == {"text": "[redacted]"}
    assert kept[2].content == "echoed [redacted]"


@pytest.mark.dialect
def test_parallel_steps_keep_each_branch_s_answers_numbered_once(llm, owner):
    # The three steps' answers meet at the server: they can only come while all three wait.
    meet = {"name": "branches", "parties": 3}
    llm.script(
        [
            {
                "match": "AGENTDESK:PLAN",
                "replies": [
                    {
                        "content": json.dumps(
                            {
                                "steps": [
                                    step("look up the weather"),
                                    step("look up the news"),
                                    step("look up the traffic"),
                                    step("sum it up", [], [0, 1, 2]),
                                ],
                                "parallel": True,
                            }
                        )
                    }
                ],
            },
            {"match": "AGENTDESK:STEP 0", "replies": [{"content": "sunny", "meet": meet}]},
            {"match": "AGENTDESK:STEP 1", "replies": [{"content": "quiet", "meet": meet}]},
            {"match": "AGENTDESK:STEP 2", "replies": [{"content": "jammed", "meet": meet}]},
            {"match": "AGENTDESK:STEP 3", "replies": [{"content": "sunny, quiet, jammed"}]},
            {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "sunny, quiet, jammed")]},
        ]
    )
    run = make_run(owner, "Tell me about today", fast_path=False)

    execute_run(run.pk, registry=make_registry(FinishTool()))

    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    kept = exchanges(run)
    assert [e.seq for e in kept] == list(range(1, 7)) and run.exchange_seq == 6
    assert (kept[0].phase, kept[-1].phase) == ("planning", "verification")
    index = dict(Step.objects.filter(run=run).values_list("pk", "index"))
    by_step = {index[e.step_id]: e.content for e in kept if e.step_id is not None}
    assert by_step == {0: "sunny", 1: "quiet", 2: "jammed", 3: "sunny, quiet, jammed"}
    # The last step ran after the three, whose order among them is the commits'.
    assert index[kept[4].step_id] == 3
    # Answered over the wire, through the run's connection.
    assert {e.connection_id for e in kept} == {run.connection_id} and run.connection_id


def test_a_run_recorded_before_answers_were_kept_says_it_cannot_be_replayed(owner, owner_api):
    old, _ = planned_run(owner)
    new, _ = planned_run(owner)
    # What migration 0026 leaves of a run recorded before it: no exchanges, not recorded.
    ModelExchange.objects.filter(run=old).delete()
    Run.objects.filter(pk=old.pk).update(recorded=False, exchange_seq=0)

    body = owner_api.get(f"/api/v1/runs/{old.pk}").json()
    assert (body["replayable"], body["not_replayable_because"]) == (
        False,
        "Recorded before model answers were kept: cannot be replayed",
    )
    body = owner_api.get(f"/api/v1/runs/{new.pk}").json()
    assert (body["replayable"], body["not_replayable_because"]) == (True, "")
    listed = {r["id"]: r["replayable"] for r in owner_api.get("/api/v1/runs").json()["results"]}
    assert listed == {old.pk: False, new.pk: True}

    page = logged_in(owner).get(f"/runs/{old.pk}/").content.decode()
    assert "Recorded before model answers were kept: cannot be replayed" in page
    page = logged_in(owner).get(f"/runs/{new.pk}/").content.decode()
    assert "cannot be replayed" not in page


def test_a_contract_attempt_keeps_its_cycles_and_their_evaluations(owner, llm, settings, tmp_path):
    from agents_app.contracts.services import agent_create, agent_start
    from tests.conversations.test_contract_agents import evaluation

    settings.AGENT_LOG_DIR = tmp_path / "logs"
    agent = agent_create(owner=owner, interface="api", contract="Echo a then b.")
    run = agent_start(agent=agent, actor=owner, interface="api")
    provider = ScriptedProvider(
        [
            {
                "match": "AGENTDESK:EVALUATE",
                "replies": [evaluation(False, "b is missing"), evaluation(True, "both", 1, 2)],
            },
            {
                "match": "AGENTDESK:CONTRACT",
                "replies": [tool_call("echo", text="a"), tool_call("echo", text="b")],
            },
        ]
    )
    execute_run(run.pk, provider=provider, registry=make_registry(EchoTool()))
    run.refresh_from_db()
    assert (run.kind, run.status) == ("contract", "succeeded")

    kept = exchanges(run)
    assert [e.phase for e in kept] == ["execution", "verification"] * 2
    assert [e.tool_calls[0]["arguments"] for e in kept[::2]] == [{"text": "a"}, {"text": "b"}]
    assert json.loads(kept[-1].content)["met"] is True


def test_a_team_s_head_node_and_each_child_keep_their_own_answers(
    owner, seeded_profiles, queued_runs, settings
):
    from tests.orchestration.test_team_engine import deliver, direct, split, sub, team_run

    settings.AGENT_FAST_PATH_MAX_CHARS = 500
    rules = [
        {
            "match": "AGENTDESK:TEAM",
            "replies": [split("parallel", sub("Research the parsers"), sub("Implement it"))],
        },
        direct("Three parsers exist.", "Research the parsers"),
        direct("parser.py is written.", "Implement it"),
    ]
    head = deliver(team_run(owner).pk, rules)
    children = list(Run.objects.filter(parent=head).order_by("parent_step__index"))
    for child in children:
        deliver(child.pk, rules)
    head = deliver(head.pk, rules)
    assert head.status == "succeeded", (head.error_code, head.error_message)

    decomposition = exchanges(head)[0]
    assert (decomposition.seq, decomposition.phase, decomposition.step_id) == (1, "planning", None)
    assert json.loads(decomposition.content)["pattern"] == "parallel"
    answers = [[(e.phase, e.content) for e in exchanges(child)] for child in children]
    assert answers == [
        [("execution", "Three parsers exist.")],
        [("execution", "parser.py is written.")],
    ]


def test_a_deleted_run_takes_its_exchanges_with_it(owner):
    run, _ = planned_run(owner)
    other, _ = planned_run(owner)

    Run.objects.filter(pk=run.pk).delete()

    assert not ModelExchange.objects.filter(run_id=run.pk).exists()
    assert len(model_calls(other.pk)) == 5


@pytest.mark.dialect
def test_migrations_0030_and_0031_turn_a_row_a_call_into_frames_and_back(owner):
    run, _ = planned_run(owner)
    before = model_calls(run.pk)
    rows_a_call = [("agents_app", "0029_replay")]
    executor = MigrationExecutor(connection)
    executor.migrate(rows_a_call)
    try:
        # Back to a row a call, each with its request's text (zlib) and its own columns.
        old = executor.loader.project_state(rows_a_call).apps.get_model(
            "agents_app", "ModelExchange"
        )
        kept = list(old.objects.filter(run_id=run.pk).order_by("seq"))
        assert [(e.seq, e.phase, e.step_id, e.content) for e in kept] == [
            (c.seq, c.phase, c.step_id, c.content) for c in before
        ]
        assert [zlib.decompress(bytes(e.request)).decode() for e in kept] == [
            c.request for c in before
        ]
        assert kept[1].tool_calls == before[1].tool_calls and kept[1].llm_model == "scripted"
    finally:
        # Forward again, as the tests after this one in this process need every migration.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    # Frames of one call each: the calls of no step a row each, the step's on the step.
    assert ModelExchange.objects.filter(run=run).count() == 2
    assert len(unframed(Step.objects.values_list("model_calls", flat=True).get(run=run))) == 3
    assert model_calls(run.pk) == before


def test_a_step_s_calls_are_read_only_when_asked_for(owner):
    run, _ = planned_run(owner)

    # Loaded as pages and workers load steps, or reached through a tool call: left out, so a
    # step saved whole cannot write back calls it read before more were appended.
    assert "model_calls" in Step.objects.get(run=run).get_deferred_fields()
    assert "model_calls" in run.steps.get().get_deferred_fields()
    call = ToolCall.objects.filter(run=run).first()
    assert "model_calls" in call.step.get_deferred_fields()
    # Asked for, they are there.
    assert unframed(Step.objects.only("model_calls").get(run=run).model_calls)

"""Seed 001's assignment, as plain Python: the explicit preference, the features scored
against the specialisations and the matrix's roles, the secondary when the primary is at its
concurrency limit, queued when both are; the decomposition's dependencies by pattern; the
recovery table."""

import pytest

from agents_app.engine.team import (
    Decomposition,
    ProfileCard,
    Subtask,
    assign,
    normalise,
    recovery,
    task_features,
)

TEAM = [
    ProfileCard("builder_agent", "builder", ("code_generation", "implementation", "testing"), 2),
    ProfileCard("head_node", "orchestrator", ("reasoning",), 1),
    ProfileCard("research_agent", "research", ("exploration", "documentation_analysis"), 2),
    ProfileCard("synthesis_agent", "synthesis", ("code_review", "synthesis"), 2),
]


@pytest.mark.parametrize(
    ("subtask", "primary"),
    [
        ("Implement the parser function", "builder_agent"),
        ("Review the code for security issues", "synthesis_agent"),
        ("Research the existing libraries", "research_agent"),
        ("Analyze the trade-offs and decide", "synthesis_agent"),
        ("Document the API in the README", "builder_agent"),
    ],
)
def test_the_matrix_picks_the_primary_agent_of_each_characteristic(subtask, primary):
    chosen = assign(subtask, "", TEAM, busy={})
    assert (chosen.profile, chosen.reason) == (primary, "best match")


@pytest.mark.parametrize(
    ("subtask", "primary", "secondary"),
    [
        # large_context: Gemini (research) first, Claude (synthesis) second
        ("Load the entire log at once", "research_agent", "synthesis_agent"),
        # fast_iteration: Codex (builder) first, Gemini (research) second
        ("Prototype it quickly", "builder_agent", "research_agent"),
    ],
)
def test_a_large_context_and_fast_iteration_each_go_to_their_rows_primary_then_secondary(
    subtask, primary, secondary
):
    """No profile of TEAM names these features among its specialisations: the matrix alone
    scores them, 2 for the row's primary role and 1 for its secondary."""
    chosen = assign(subtask, "", TEAM, busy={})
    assert (chosen.profile, chosen.scores[primary], chosen.scores[secondary]) == (primary, 2, 1)
    assert sum(chosen.scores.values()) == 3  # nobody else scores
    assert assign(subtask, "", TEAM, busy={primary: 2}).profile == secondary


def test_an_explicit_preference_comes_first_and_is_waited_for_when_busy():
    assert assign("Implement it", "research_agent", TEAM, {}).profile == "research_agent"
    waiting = assign("Implement it", "Research_Agent", TEAM, {"research_agent": 2})
    assert (waiting.profile, waiting.waiting_for) == (None, "research_agent")


def test_the_secondary_takes_it_when_the_primary_is_at_its_limit_and_it_queues_after():
    busy = {"builder_agent": 2}
    second = assign("Implement the parser function", "", TEAM, busy)
    assert second.profile == "synthesis_agent"  # code generation: Codex, then Claude
    assert second.reason == "secondary: builder_agent is at its limit"
    queued = assign("Implement the parser function", "", TEAM, {**busy, "synthesis_agent": 2})
    assert (queued.profile, queued.waiting_for) == (None, "builder_agent")


def test_the_orchestrator_does_no_subtask_itself():
    chosen = assign("Analyze and decide", "", TEAM, {"synthesis_agent": 2, "research_agent": 2})
    assert chosen.profile is None and "head_node" not in chosen.scores


def test_features_are_read_from_the_words_of_a_subtask():
    assert {"code_generation", "testing"} <= task_features("Implement a function and test it")
    assert task_features("Say hello") == frozenset()


def test_dependencies_follow_the_pattern_and_only_point_backwards():
    plan = Decomposition(
        pattern="pipeline",
        subtasks=[
            Subtask(description="a", depends_on=[1, 5]),
            Subtask(description="b"),
            Subtask(description="c", depends_on=[0]),
        ],
    )
    assert [s.depends_on for s in normalise(plan).subtasks] == [[], [0], [0]]
    loose = normalise(
        Decomposition(
            pattern="whatever", subtasks=[Subtask(description="a"), Subtask(description="b")]
        )
    )
    assert loose.pattern == "parallel" and [s.depends_on for s in loose.subtasks] == [[], []]


@pytest.mark.parametrize(
    ("code", "message", "kind", "limit"),
    [
        ("REQUEST_TIMEOUT", "slow", "timeout", 2),
        ("RATE_LIMITED", "429", "rate_limit", 5),
        (
            "INVALID_RESPONSE",
            "the request exceeds the available context size",
            "context_overflow",
            3,
        ),
        ("PLANNING_FAILED", "not JSON", "invalid_output", 2),
        ("CONNECTION_REFUSED", "down", "network", 5),
    ],
)
def test_the_recovery_table_retries_each_kind_up_to_its_limit(code, message, kind, limit):
    tries = [recovery(code, message, tried) for tried in range(limit + 1)]
    assert [t.kind for t in tries[:limit]] == [kind] * limit
    assert tries[limit] is None


def test_backoff_doubles_and_a_timeout_doubles_the_time():
    assert [recovery("RATE_LIMITED", "", n).delay for n in range(3)] == [2.0, 4.0, 8.0]
    assert recovery("EXECUTION_TIMEOUT", "", 0).time_factor == 2.0
    assert recovery("TOOL_FAILED", "broke", 0) is None
    assert recovery("CANCELLED", "", 0) is None


def test_the_schema_a_server_keeps_to_allows_a_micro_agent_and_the_profiles_by_name():
    from agents_app.engine.team import decomposition_schema

    schema = decomposition_schema(["builder_agent", "research_agent"], 4)
    subtask = schema["properties"]["subtasks"]["items"]
    assert subtask["properties"]["preferred_profile"]["enum"] == [
        "",
        "builder_agent",
        "research_agent",
    ]
    micro = subtask["properties"]["micro"]
    assert micro["required"] == ["persona"]
    # What the schema allows, the model's answer accepts.
    Subtask.model_validate(
        {"description": "x", "micro": {"persona": "p", "available_actions": ["a"], "max_steps": 3}}
    )

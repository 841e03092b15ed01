"""Per-profile metrics from SQL over the runs: counts by outcome, the average completion time,
tokens and the error rate; a user's own runs only, everyone's for staff; the same figures on
SQLite and PostgreSQL."""

from datetime import timedelta

import pytest

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import RunStatus
from agents_app.orchestration.metrics import NO_PROFILE, profile_metrics, site_profile_metrics
from tests.support.metrics import START, shaped_run

pytestmark = pytest.mark.dialect


def by_name(figures):
    return {row.name: row for row in figures}


@pytest.fixture
def research(seeded_profiles):
    return seeded_profiles["research_agent"]


def test_a_profiles_runs_are_counted_by_outcome_with_tokens_time_and_error_rate(owner, research):
    shaped_run(owner, research, seconds=10, prompt_tokens=100, completion_tokens=20)
    shaped_run(owner, research, seconds=20, prompt_tokens=50, completion_tokens=5)
    shaped_run(owner, research, RunStatus.FAILED, seconds=99, prompt_tokens=7)
    shaped_run(owner, research, RunStatus.CANCELLED, seconds=99)
    shaped_run(owner, research, RunStatus.RUNNING, completion_tokens=3)

    row = by_name(profile_metrics(user=owner))["research_agent"]

    assert (row.runs, row.succeeded, row.failed, row.cancelled, row.active) == (5, 2, 1, 1, 1)
    assert (row.prompt_tokens, row.completion_tokens, row.tokens) == (157, 28, 185)
    # Only the succeeded runs' wall time: (10 + 20) / 2.
    assert row.average_completion_seconds == 15.0
    # failed / (succeeded + failed): the cancellation is no error.
    assert row.error_rate == pytest.approx(1 / 3)
    assert row.role == "research" and row.profile_id == research.pk


def test_every_profile_has_a_row_by_name_even_without_runs(owner, seeded_profiles):
    figures = profile_metrics(user=owner)

    assert [row.name for row in figures] == sorted(seeded_profiles)
    builder = by_name(figures)["builder_agent"]
    assert (builder.runs, builder.tokens, builder.timed) == (0, 0, 0)
    assert builder.average_completion_seconds is None
    assert builder.error_rate is None


def test_runs_without_a_profile_are_one_row_at_the_end(owner, seeded_profiles):
    shaped_run(owner, None, seconds=3, prompt_tokens=9)
    shaped_run(owner, None, RunStatus.FAILED)

    figures = profile_metrics(user=owner)

    assert figures[-1].name == NO_PROFILE and figures[-1].profile_id is None
    assert (figures[-1].runs, figures[-1].succeeded, figures[-1].failed) == (2, 1, 1)
    assert figures[-1].average_completion_seconds == 3.0
    assert figures[-1].error_rate == 0.5


def test_no_profile_row_is_shown_while_every_run_has_a_profile(owner, research):
    shaped_run(owner, research, seconds=1)

    assert NO_PROFILE not in by_name(profile_metrics(user=owner))


def test_a_user_reads_only_their_own_runs(owner, outsider, research):
    shaped_run(owner, research, seconds=4, prompt_tokens=10)
    shaped_run(outsider, research, RunStatus.FAILED, prompt_tokens=1000)
    shaped_run(outsider, None, seconds=50)

    mine = by_name(profile_metrics(user=owner))
    theirs = by_name(profile_metrics(user=outsider))

    assert (mine["research_agent"].runs, mine["research_agent"].tokens) == (1, 10)
    assert mine["research_agent"].error_rate == 0.0
    assert NO_PROFILE not in mine
    assert (theirs["research_agent"].failed, theirs[NO_PROFILE].runs) == (1, 1)


def test_staff_may_read_everyones_runs(owner, outsider, staff, research):
    shaped_run(owner, research, seconds=4)
    shaped_run(outsider, research, RunStatus.FAILED)

    everyone = by_name(profile_metrics(user=staff, everyone=True))
    own = by_name(profile_metrics(user=staff))

    assert (everyone["research_agent"].succeeded, everyone["research_agent"].failed) == (1, 1)
    assert own["research_agent"].runs == 0


def test_only_staff_may_read_everyones_runs(owner):
    with pytest.raises(DomainError) as raised:
        profile_metrics(user=owner, everyone=True)

    assert raised.value.code == ErrorCode.FORBIDDEN


def test_the_site_figures_count_every_users_runs(owner, outsider, research):
    shaped_run(owner, research, seconds=2)
    shaped_run(outsider, research, seconds=4)

    assert by_name(site_profile_metrics())["research_agent"].average_completion_seconds == 3.0


def test_since_keeps_the_runs_created_from_then_on(owner, research):
    shaped_run(owner, research, created_at=START - timedelta(days=8))
    shaped_run(owner, research, RunStatus.FAILED, created_at=START - timedelta(days=1))

    row = by_name(profile_metrics(user=owner, since=START - timedelta(days=7)))["research_agent"]

    assert (row.runs, row.succeeded, row.failed) == (1, 0, 1)


def test_a_succeeded_run_without_timestamps_is_not_timed(owner, research):
    shaped_run(owner, research, seconds=6)
    shaped_run(owner, research)  # succeeded, never started: no wall time to count

    row = by_name(profile_metrics(user=owner))["research_agent"]

    assert (row.succeeded, row.timed, row.average_completion_seconds) == (2, 1, 6.0)


def test_durations_average_to_the_microsecond_across_days(owner, research):
    # SQLite subtracts to microseconds, PostgreSQL to an interval of days and seconds: both
    # must give these exact figures.
    long = timedelta(days=2, hours=3, seconds=0.25).total_seconds()
    shaped_run(owner, research, seconds=1.000001)
    shaped_run(owner, research, seconds=long)

    row = by_name(profile_metrics(user=owner))["research_agent"]

    assert row.completion_time == timedelta(seconds=1.000001) + timedelta(seconds=long)
    assert row.average_completion_seconds == pytest.approx((1.000001 + long) / 2, abs=1e-6)


def test_the_figures_take_two_queries_however_many_runs(
    owner, research, seeded_profiles, django_assert_num_queries
):
    for profile in [*seeded_profiles.values(), None]:
        for status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            shaped_run(owner, profile, status, seconds=1)

    with django_assert_num_queries(2):
        figures = profile_metrics(user=owner)

    assert sum(row.runs for row in figures) == 10

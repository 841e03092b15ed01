"""A parallel plan's script and checks (worker.parallel): the plan's reply, and the run's
events checked gapless."""

import json

from agents_app.models import Run, RunEvent


def plan_of(*steps, parallel=True):
    return {
        "content": json.dumps({"steps": list(steps), **({"parallel": True} if parallel else {})})
    }


def gapless(run) -> list[str]:
    """The run's event types, after checking their seqs are 1..n without a hole."""
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "type"))
    assert [seq for seq, _ in events] == list(range(1, len(events) + 1))
    assert Run.objects.get(pk=run.pk).event_seq == len(events)
    return [type for _, type in events]


def usage_heard(run) -> int:
    """The tokens of the run's llm_usage events."""
    return sum(
        e["prompt_tokens"] + e["completion_tokens"]
        for e in RunEvent.objects.filter(run=run, type="llm_usage").values_list(
            "payload", flat=True
        )
    )

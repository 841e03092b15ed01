"""At most LLM_MAX_IN_FLIGHT requests in flight to one LLM server over every worker
(worker/llm_gate.py): the rest wait their turn and are answered, none times out."""

import pytest

from agents_app.core.slots import _redis
from agents_app.runs.services import task_submit
from agents_app.worker.llm_gate import server_key
from tests.support.waiting import wait_for_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.integration, pytest.mark.dialect]


def test_two_workers_keep_to_the_cap_on_requests_in_flight_and_every_run_is_answered(
    llm, start_worker, owner
):
    llm.script([{"replies": [{"content": "The answer.", "delay": 0.4}], "repeat": True}])
    # Places an earlier test's killed worker held on this server expire within their life
    # (tests/core/test_slots.py); this test does not wait for them.
    _redis().delete(server_key(llm.base_url))
    # Two workers of 8 threads each could have 12 requests in flight; the cap is 2 over both.
    start_worker("one", LLM_MAX_IN_FLIGHT="2", LLM_REQUEST_TIMEOUT="1")
    start_worker("two", LLM_MAX_IN_FLIGHT="2", LLM_REQUEST_TIMEOUT="1")
    ids = [
        task_submit(owner=owner, interface="api", text=f"Request {n}", fast_path=True).pk
        for n in range(12)
    ]
    finished = [wait_for_run(run_id, timeout=60) for run_id in ids]

    assert [run.status for run in finished] == ["succeeded"] * 12
    # Twelve answers of 0.4 s two at a time take 2.4 s, longer than a request's timeout (1 s):
    # the wait for a place is not the request's.
    assert llm.peak_in_flight() == 2

"""An approval's timeout deciding it in this process: not before it is due, and never over a
person's decision."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents_app.approvals.decisions import approval_decide, approval_expire
from agents_app.models import Approval
from tests.support.approvals import pending

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.dialect]


def test_an_approval_not_yet_due_stays_pending_and_says_how_long_to_wait(owner):
    approval = pending(owner, expires_at=timezone.now() + timedelta(seconds=30), on_timeout="deny")

    remaining = approval_expire(approval.pk)

    assert 25 < remaining <= 30
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_an_expiry_that_a_person_beat_to_the_decision_leaves_theirs_standing(owner):
    approval = pending(owner, expires_at=timezone.now() - timedelta(seconds=1), on_timeout="deny")

    def person_approves():
        try:
            approval_decide(
                approval_id=approval.pk, decision="approve", actor=owner, interface="web"
            )
        finally:
            connection.close()  # this thread's own connection (django.db.connection is per thread)

    def a_person_decides_once_the_expiry_has_read_it_pending(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not decided and sql.lstrip().upper().startswith("SELECT") and "approval" in sql:
            # Another process: its own thread and database connection.
            person = threading.Thread(target=person_approves)
            person.start()
            person.join()
            decided.append(True)
        return result

    decided = []
    with connection.execute_wrapper(a_person_decides_once_the_expiry_has_read_it_pending):
        assert approval_expire(approval.pk) == 0

    assert decided
    approval = Approval.objects.get(pk=approval.pk)
    assert (approval.status, approval.decided_by, approval.expired) == ("approved", owner, False)

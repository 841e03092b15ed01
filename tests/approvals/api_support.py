"""Helpers for the approvals REST API tests: pending approvals, decisions and JSON requests."""

import json
from datetime import timedelta

from django.utils import timezone

from agents_app.models import Approval
from tests.api.support import post_json
from tests.approvals.support import SendTool
from tests.support.runs import make_run

APPROVALS = "/api/v1/approvals"


def pending(owner, tool="send", minutes_ago=0, **fields) -> Approval:
    """A pending approval on a queued run, without executing anything."""
    return Approval.objects.create(
        run=make_run(owner),
        owner=owner,
        tool=tool,
        arguments={"to": "ann", "text": "hi"},
        input_schema=SendTool.spec.input_schema,
        created_at=timezone.now() - timedelta(minutes=minutes_ago),
        **fields,
    )


def decide(client, approval_id, **body):
    return post_json(client, f"{APPROVALS}/{approval_id}", body)


def as_json(data):
    return json.loads(json.dumps(data))


def ids(results):
    return [item["id"] for item in results]


def put_json(client, path, body):
    return client.put(path, data=json.dumps(body), content_type="application/json")

"""The approvals REST API: list, read and decide approvals, bulk decisions, rules, YOLO
preferences, and the approval options of a task. Runs are parked and continued in-process."""

import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from agents_app.approvals import approval_payload
from agents_app.decisions import rule_create, yolo_grant
from agents_app.errors import DomainError
from agents_app.models import (
    Approval,
    ApprovalRule,
    AuditEvent,
    Run,
    Step,
    Task,
    ToolCall,
    UserPreferences,
)
from agents_app.services import run_create, task_submit
from tests.api.support import assert_error, key_client, make_api_key, post_json, submit
from tests.approvals.support import SCRIPT, SendTool, drive, parked
from tests.support.runs import make_run
from tests.support.scripted_provider import ScriptedProvider

pytestmark = pytest.mark.django_db(transaction=True)

APPROVALS = "/api/v1/approvals"
BULK = "/api/v1/approvals/bulk"
RULES = "/api/v1/approval-rules"
PREFERENCES = "/api/v1/preferences"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def staff(db):
    """Staff, not superuser: may decide anyone's approval, holds no permission by default."""
    return get_user_model().objects.create_user("staff", password="staff-pass-123", is_staff=True)


@pytest.fixture
def owner_client(owner) -> Client:
    return key_client(make_api_key(owner))


@pytest.fixture
def outsider_client(outsider) -> Client:
    return key_client(make_api_key(outsider))


@pytest.fixture
def staff_client(staff) -> Client:
    return key_client(make_api_key(staff))


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


# --- the list ---------------------------------------------------------------------------------


def test_the_list_holds_only_the_callers_approvals_newest_first(
    owner, outsider, owner_client, outsider_client
):
    older = pending(owner, minutes_ago=5)
    newer = pending(owner, minutes_ago=1)
    theirs = pending(outsider)

    body = owner_client.get(APPROVALS).json()

    assert body["success"] is True
    assert (body["count"], body["limit"], body["offset"]) == (2, 20, 0)
    assert ids(body["results"]) == [newer.pk, older.pk]
    assert ids(outsider_client.get(APPROVALS).json()["results"]) == [theirs.pk]


def test_the_list_shows_each_approval_as_its_payload(owner, owner_client, registry):
    _, _, approval = parked(owner, registry)

    [item] = owner_client.get(APPROVALS).json()["results"]

    assert item == as_json(approval_payload(approval))
    assert item["step_index"] == 0 and item["tool_call_id"] is not None


def test_the_list_filters_by_status_run_and_tool(owner, owner_client):
    send = pending(owner, minutes_ago=3)
    shell = pending(owner, tool="shell", minutes_ago=2)
    denied = pending(owner, minutes_ago=1, status="denied")

    def listed(query):
        return ids(owner_client.get(f"{APPROVALS}?{query}").json()["results"])

    assert listed("status=pending") == [shell.pk, send.pk]
    assert listed("status=denied") == [denied.pk]
    assert listed(f"run_id={send.run_id}") == [send.pk]
    assert listed("tool=shell") == [shell.pk]
    assert listed("status=pending&tool=send") == [send.pk]


def test_the_list_pages_with_limit_and_offset(owner, owner_client):
    made = [pending(owner, minutes_ago=10 - i) for i in range(5)]
    newest_first = [a.pk for a in reversed(made)]

    body = owner_client.get(f"{APPROVALS}?limit=2&offset=2").json()

    assert (body["count"], body["limit"], body["offset"]) == (5, 2, 2)
    assert ids(body["results"]) == newest_first[2:4]


@pytest.mark.parametrize(
    "query", ["status=waiting", "status=PENDING", "limit=0", "limit=101", "offset=-1"]
)
def test_the_list_refuses_bad_query_values(owner_client, query):
    assert_error(owner_client.get(f"{APPROVALS}?{query}"), 400, "VALIDATION_ERROR")


def test_the_list_costs_the_same_queries_however_long(
    owner, owner_client, registry, django_assert_max_num_queries
):
    for _ in range(3):
        _, _, approval = parked(owner, registry)
    Approval.objects.filter(pk=approval.pk).update(status="approved", decided_by=owner)
    owner_client.get(APPROVALS)  # the key's first use writes last_used_at

    with django_assert_max_num_queries(3):
        body = owner_client.get(APPROVALS).json()

    assert body["count"] == 3 and body["results"][0]["decided_by"] == "owner"


def test_an_anonymous_client_cannot_list_approvals(db):
    assert_error(Client(enforce_csrf_checks=True).get(APPROVALS), 401, "UNAUTHORIZED")


# --- one approval -----------------------------------------------------------------------------


def test_the_owner_reads_an_approval(owner, owner_client):
    approval = pending(owner)

    response = owner_client.get(f"{APPROVALS}/{approval.pk}")

    assert response.status_code == 200
    assert response.json() == as_json(approval_payload(approval))


def test_an_outsider_hears_404_for_another_users_approval(owner, outsider_client):
    approval = pending(owner)

    error = assert_error(outsider_client.get(f"{APPROVALS}/{approval.pk}"), 404, "NOT_FOUND")
    assert_error(decide(outsider_client, approval.pk, decision="approve"), 404, "NOT_FOUND")

    assert "not found" in error["message"]
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.decided_by is None
    assert not AuditEvent.objects.filter(action="approval.decide").exists()


def test_an_unknown_approval_is_404(owner_client):
    assert_error(owner_client.get(f"{APPROVALS}/999999"), 404, "NOT_FOUND")
    assert_error(decide(owner_client, 999999, decision="approve"), 404, "NOT_FOUND")


# --- deciding a parked run --------------------------------------------------------------------


def test_approve_runs_the_call_once_and_records_the_api(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    response = decide(owner_client, approval.pk, decision="approve")

    assert response.status_code == 200
    body = response.json()
    assert (body["id"], body["status"], body["decided_by"], body["decided_via"]) == (
        approval.pk,
        "approved",
        "owner",
        "api",
    )
    assert send.calls == []  # a decision only queues the run again
    run.refresh_from_db()
    assert run.status == "running"
    drive(run, provider, registry)
    assert run.status == "succeeded"
    assert send.calls == [{"to": "ann", "text": "hi"}]
    audit = AuditEvent.objects.get(action="approval.decide", run_id=run.pk)
    assert (audit.interface, audit.actor, audit.details["decision"]) == ("api", owner, "approve")


def test_a_second_decision_is_a_conflict_and_the_first_wins(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)
    assert decide(owner_client, approval.pk, decision="approve").status_code == 200

    error = assert_error(decide(owner_client, approval.pk, decision="deny"), 409, "CONFLICT")
    assert_error(decide(owner_client, approval.pk, decision="approve"), 409, "CONFLICT")

    assert error["details"]["status"] == "approved"
    assert error["details"]["approval"]["decided_via"] == "api"
    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert AuditEvent.objects.filter(action="approval.decide").count() == 1


def test_modify_runs_the_edited_arguments(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    response = decide(
        owner_client, approval.pk, decision="modify", arguments={"to": "bob", "text": "hello"}
    )

    body = response.json()
    assert response.status_code == 200
    assert body["status"] == "modified"
    assert body["decision_arguments"] == {"to": "bob", "text": "hello"}
    assert body["arguments"] == {"to": "ann", "text": "hi"}  # what the model asked stays
    drive(run, provider, registry)
    assert run.status == "succeeded"
    assert send.calls == [{"to": "bob", "text": "hello"}]
    assert ToolCall.objects.get(run=run).arguments == {"to": "bob", "text": "hello"}


@pytest.mark.parametrize(
    ("arguments", "path"),
    [({"to": 5, "text": "hi"}, "to"), ({"to": "bob"}, ""), ({"to": "b", "text": "x", "cc": 1}, "")],
)
def test_modify_with_arguments_that_do_not_fit_is_refused(
    owner, owner_client, send, registry, arguments, path
):
    run, _, approval = parked(owner, registry)

    response = decide(owner_client, approval.pk, decision="modify", arguments=arguments)

    error = assert_error(response, 400, "INVALID_ARGUMENTS")
    assert error["details"]["tool"] == "send"
    assert error["details"]["errors"][0]["path"] == path
    assert all(e["message"] for e in error["details"]["errors"])
    approval.refresh_from_db()
    run.refresh_from_db()
    assert approval.status == "pending" and run.status == "waiting_approval"
    assert send.calls == []


def test_modify_without_arguments_is_refused(owner, owner_client, registry):
    _, _, approval = parked(owner, registry)

    error = assert_error(
        decide(owner_client, approval.pk, decision="modify"), 400, "INVALID_ARGUMENTS"
    )

    assert error["details"] == {"field": "arguments"}
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_skip_skips_the_step(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="skip").json()["status"] == "skipped"

    drive(run, provider, registry)
    assert send.calls == []
    assert Step.objects.get(run=run, index=0).status == "skipped"
    assert ToolCall.objects.get(run=run).status == "skipped"


def test_cancel_cancels_the_run(owner, owner_client, send, registry):
    run, _, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="cancel").json()["status"] == "cancelled"

    run.refresh_from_db()
    assert run.status == "cancelled" and send.calls == []
    assert "owner" in run.error_message


def test_deny_refuses_the_call_and_the_run_goes_on(owner, owner_client, send, registry):
    run, provider, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="deny").json()["status"] == "denied"

    drive(run, provider, registry)
    assert run.status == "succeeded" and send.calls == []
    assert ToolCall.objects.get(run=run).status == "denied"
    last = [r for r in provider.requests if "AGENTDESK:STEP 0" in r.messages[0]["content"]][-1]
    assert "denied" in last.messages[-1]["content"]


def test_approve_and_remember_the_tool_creates_a_rule_that_spares_the_next_run(
    owner, owner_client, send, registry
):
    _, _, approval = parked(owner, registry)

    assert decide(owner_client, approval.pk, decision="approve", remember="tool").status_code == 200

    rule = ApprovalRule.objects.get(owner=owner)
    assert (rule.tool, rule.arguments_sha256, rule.created_via) == ("send", "", "api")
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and Approval.objects.filter(run=run).count() == 0


def test_a_plan_approval_is_approved_through_the_api(owner, owner_client, send, registry):
    rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")
    run = run_create(task=Task.objects.create(owner=owner, text="Do it", approve_plan=True))
    provider = ScriptedProvider(SCRIPT)
    drive(run, provider, registry)
    approval = Approval.objects.get(run=run)
    assert approval.kind == "plan"

    assert_error(decide(owner_client, approval.pk, decision="skip"), 400, "VALIDATION_ERROR")
    assert decide(owner_client, approval.pk, decision="approve").status_code == 200

    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"decision": "maybe"},
        {"decision": "APPROVE"},
        {"decision": 1},
        {"decision": "approve", "remember": "forever"},
        {"decision": "deny", "remember": "tool"},
        {"decision": "approve", "arguments": {"to": "bob", "text": "x"}},
        {"decision": "modify", "arguments": "to bob"},
        ["approve"],
    ],
)
def test_a_bad_decision_body_is_refused(owner, owner_client, registry, body):
    run, _, approval = parked(owner, registry)

    assert_error(
        post_json(owner_client, f"{APPROVALS}/{approval.pk}", body), 400, "VALIDATION_ERROR"
    )

    approval.refresh_from_db()
    assert approval.status == "pending"
    assert not ApprovalRule.objects.exists()


def test_a_body_that_is_not_json_is_refused(owner, owner_client):
    approval = pending(owner)

    response = owner_client.post(
        f"{APPROVALS}/{approval.pk}", data="decision=approve", content_type="application/json"
    )

    assert_error(response, 400, "VALIDATION_ERROR")


def test_staff_decide_another_users_approval(owner, staff, staff_client, send, registry):
    run, provider, approval = parked(owner, registry)

    assert staff_client.get(f"{APPROVALS}/{approval.pk}").status_code == 200
    body = decide(staff_client, approval.pk, decision="approve").json()

    assert (body["status"], body["decided_by"]) == ("approved", "staff")
    drive(run, provider, registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    # Staff see it, but it is not theirs: their own list stays empty.
    assert staff_client.get(APPROVALS).json()["count"] == 0


def test_a_session_decision_needs_the_csrf_token(owner):
    approval = pending(owner)
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)

    assert_error(decide(client, approval.pk, decision="deny"), 403, "FORBIDDEN")
    approval.refresh_from_db()
    assert approval.status == "pending"

    client.get("/admin/login/")
    token = client.cookies["csrftoken"].value
    response = post_json(
        client, f"{APPROVALS}/{approval.pk}", {"decision": "deny"}, headers={"x-csrftoken": token}
    )
    assert response.status_code == 200 and response.json()["decided_via"] == "api"


# --- bulk -------------------------------------------------------------------------------------


def test_bulk_by_tool_decides_only_the_callers_pending_calls_of_that_tool(
    owner, outsider, owner_client, send, registry
):
    first_run, provider, first = parked(owner, registry)
    _, _, second = parked(owner, registry)
    shell = pending(owner, tool="shell")
    done = pending(owner, status="denied")
    theirs = pending(outsider)

    response = post_json(owner_client, BULK, {"decision": "approve", "tool": "send"})

    assert response.status_code == 200
    body = response.json()
    assert sorted(ids(body["decided"])) == sorted([first.pk, second.pk])
    assert {a["status"] for a in body["decided"]} == {"approved"}
    assert body["refused"] == []
    statuses = dict(Approval.objects.values_list("pk", "status"))
    assert statuses[shell.pk] == "pending" and statuses[theirs.pk] == "pending"
    assert statuses[done.pk] == "denied"
    drive(first_run, provider, registry)
    assert first_run.status == "succeeded" and len(send.calls) == 1
    assert AuditEvent.objects.filter(action="approval.decide", interface="api").count() == 2


def test_bulk_by_ids_reports_each_one_it_cannot_decide(owner, outsider, owner_client):
    mine = pending(owner)
    decided = pending(owner, status="approved")
    theirs = pending(outsider)

    body = post_json(
        owner_client,
        BULK,
        {"decision": "deny", "ids": [mine.pk, theirs.pk, decided.pk, 999999, mine.pk]},
    ).json()

    assert ids(body["decided"]) == [mine.pk]
    assert [(r["id"], r["code"]) for r in body["refused"]] == [
        (theirs.pk, "NOT_FOUND"),
        (decided.pk, "CONFLICT"),
        (999999, "NOT_FOUND"),
    ]
    theirs.refresh_from_db()
    assert theirs.status == "pending"


def test_staff_bulk_decide_another_users_approvals_by_id(owner, staff_client):
    approval = pending(owner)

    body = post_json(staff_client, BULK, {"decision": "skip", "ids": [approval.pk]}).json()

    assert ids(body["decided"]) == [approval.pk] and body["refused"] == []
    approval.refresh_from_db()
    assert approval.status == "skipped"


@pytest.mark.parametrize(
    "body",
    [
        {"decision": "approve"},
        {"decision": "approve", "tool": "send", "ids": [1]},
        {"decision": "approve", "tool": ""},
        {"decision": "modify", "tool": "send"},
        {"decision": "yes", "tool": "send"},
        {"decision": "approve", "ids": "1,2"},
        {"decision": "approve", "ids": list(range(1, 1002))},
    ],
)
def test_a_bad_bulk_body_is_refused(owner, owner_client, body):
    approval = pending(owner)

    assert_error(post_json(owner_client, BULK, body), 400, "VALIDATION_ERROR")

    approval.refresh_from_db()
    assert approval.status == "pending"


def test_bulk_accepts_a_thousand_ids(owner_client):
    body = post_json(owner_client, BULK, {"decision": "deny", "ids": list(range(1, 1001))}).json()

    assert body["decided"] == [] and len(body["refused"]) == 1000


# --- rules ------------------------------------------------------------------------------------


def test_a_rule_for_a_tool_is_created_listed_and_lets_calls_through(
    owner, owner_client, send, registry
):
    response = post_json(owner_client, RULES, {"tool": "send"})

    assert response.status_code == 201
    rule = response.json()
    assert {k: rule[k] for k in ("tool", "exact", "arguments", "arguments_sha256")} == {
        "tool": "send",
        "exact": False,
        "arguments": None,
        "arguments_sha256": "",
    }
    assert rule["created_via"] == "api" and rule["created_at"]
    assert owner_client.get(RULES).json() == {"results": [rule]}
    audit = AuditEvent.objects.get(action="approval_rule.create")
    assert (audit.interface, audit.actor, audit.target) == ("api", owner, "send")
    assert audit.details["rule_id"] == rule["id"]
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert not Approval.objects.exists()


def test_an_exact_rule_matches_only_its_call(owner, owner_client, send, registry):
    other = post_json(owner_client, RULES, {"tool": "send", "arguments": {"to": "x", "text": "hi"}})
    assert other.json()["exact"] is True and len(other.json()["arguments_sha256"]) == 64
    parked(owner, registry)  # the model's call is another one: it still asks

    same = post_json(
        owner_client, RULES, {"tool": "send", "arguments": {"text": "hi", "to": "ann"}}
    )

    assert same.status_code == 201
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and send.calls == [{"to": "ann", "text": "hi"}]


def test_creating_an_existing_rule_answers_with_it(owner_client):
    first = post_json(owner_client, RULES, {"tool": "send"}).json()
    again = post_json(owner_client, RULES, {"tool": "send", "arguments": None})

    assert again.status_code == 201 and again.json()["id"] == first["id"]
    assert ApprovalRule.objects.count() == 1
    assert AuditEvent.objects.filter(action="approval_rule.create").count() == 1


@pytest.mark.parametrize(
    "body", [{}, {"tool": ""}, {"tool": "   "}, {"tool": "send", "arguments": ["to"]}]
)
def test_a_bad_rule_is_refused(owner_client, body):
    assert_error(post_json(owner_client, RULES, body), 400, "VALIDATION_ERROR")
    assert not ApprovalRule.objects.exists()


def test_the_owner_revokes_a_rule_and_calls_ask_again(owner, owner_client, registry):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    response = owner_client.delete(f"{RULES}/{rule.pk}")

    assert response.status_code == 204
    assert not ApprovalRule.objects.exists()
    audit = AuditEvent.objects.get(action="approval_rule.revoke")
    assert (audit.interface, audit.actor, audit.details["rule_id"]) == ("api", owner, rule.pk)
    parked(owner, registry)


def test_an_outsider_neither_sees_nor_revokes_anothers_rule(owner, outsider_client):
    rule = rule_create(owner_id=owner.pk, tool="send", arguments=None, actor=owner, interface="web")

    assert outsider_client.get(RULES).json() == {"results": []}
    assert_error(outsider_client.delete(f"{RULES}/{rule.pk}"), 404, "NOT_FOUND")
    assert_error(outsider_client.delete(f"{RULES}/999999"), 404, "NOT_FOUND")

    assert ApprovalRule.objects.filter(pk=rule.pk).exists()
    assert not AuditEvent.objects.filter(action="approval_rule.revoke").exists()


# --- preferences ------------------------------------------------------------------------------


def put_json(client, path, body):
    return client.put(path, data=json.dumps(body), content_type="application/json")


def test_preferences_start_with_yolo_off_and_not_permitted(owner_client):
    assert owner_client.get(PREFERENCES).json() == {"yolo": False, "yolo_permitted": False}


def test_yolo_cannot_be_turned_on_without_the_permission(owner, owner_client, registry):
    error = assert_error(put_json(owner_client, PREFERENCES, {"yolo": True}), 403, "FORBIDDEN")

    assert error["details"] == {"permission": "agents_app.use_yolo_mode"}
    assert not UserPreferences.objects.filter(user=owner, yolo=True).exists()
    assert not AuditEvent.objects.filter(action="yolo.enable").exists()
    parked(owner, registry)


def test_with_the_permission_yolo_turns_on_and_calls_stop_asking(
    owner, staff, owner_client, send, registry
):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    assert owner_client.get(PREFERENCES).json() == {"yolo": False, "yolo_permitted": True}

    response = put_json(owner_client, PREFERENCES, {"yolo": True})

    assert response.status_code == 200
    assert response.json() == {"yolo": True, "yolo_permitted": True}
    audit = AuditEvent.objects.get(action="yolo.enable")
    assert (audit.interface, audit.actor) == ("api", owner)
    run = make_run(owner)
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "succeeded" and len(send.calls) == 1
    assert not Approval.objects.exists()
    call = AuditEvent.objects.get(run_id=run.pk, action="tool.call")
    assert call.details["approval"] == "yolo"


def test_yolo_is_turned_off_again(owner, staff, owner_client, registry):
    yolo_grant(user=owner, granted=True, actor=staff, interface="admin")
    put_json(owner_client, PREFERENCES, {"yolo": True})

    response = put_json(owner_client, PREFERENCES, {"yolo": False})

    assert response.json() == {"yolo": False, "yolo_permitted": True}
    assert AuditEvent.objects.filter(action="yolo.disable", interface="api").count() == 1
    parked(owner, registry)


@pytest.mark.parametrize("body", [{}, {"yolo": "sometimes"}, {"yolo": None}])
def test_a_bad_preferences_body_is_refused(owner_client, body):
    assert_error(put_json(owner_client, PREFERENCES, body), 400, "VALIDATION_ERROR")


# --- the task's approval options --------------------------------------------------------------


def test_a_task_takes_its_approval_options(owner, owner_client, llm_configured, send, registry):
    response = submit(
        owner_client, approve_plan=True, approval_timeout=30, approval_on_timeout="skip"
    )

    assert response.status_code == 202
    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        True,
        30,
        "skip",
    )
    run = Run.objects.get(pk=response.json()["run_id"])
    drive(run, ScriptedProvider(SCRIPT), registry)
    assert run.status == "waiting_approval" and send.calls == []
    approval = Approval.objects.get(run=run)
    assert (approval.kind, approval.on_timeout) == ("plan", "skip")
    assert (
        timedelta(seconds=29) < approval.expires_at - approval.created_at <= timedelta(seconds=31)
    )


def test_a_task_without_approval_options_keeps_the_defaults(owner_client, llm_configured):
    assert submit(owner_client).status_code == 202

    task = Task.objects.get()
    assert (task.approve_plan, task.approval_timeout, task.approval_on_timeout) == (
        False,
        None,
        "",
    )


@pytest.mark.parametrize(
    "options",
    [
        {"approval_timeout": 0},
        {"approval_timeout": -5},
        {"approval_timeout": 1.5},
        {"approval_timeout": "soon"},
        {"approval_timeout": 2**31},
        {"approval_on_timeout": "explode"},
        {"approval_on_timeout": "approve"},
        {"approve_plan": "maybe"},
    ],
)
def test_a_task_with_bad_approval_options_is_refused(owner_client, llm_configured, options):
    error = assert_error(submit(owner_client, **options), 400, "VALIDATION_ERROR")

    assert error["details"]["errors"][0]["field"] == next(iter(options))
    assert not Task.objects.exists()


@pytest.mark.parametrize(
    "options", [{"approval_timeout": 0}, {"approval_timeout": True}, {"approval_on_timeout": "x"}]
)
def test_task_submit_refuses_bad_approval_options_from_any_front_end(
    owner, llm_configured, options
):
    with pytest.raises(DomainError) as refused:
        task_submit(owner=owner, interface="mcp", text="Do it", **options)

    assert refused.value.code == "VALIDATION_ERROR"
    assert refused.value.details["field"] == next(iter(options))
    assert not Task.objects.exists()


def test_runs_waiting_for_approval_are_listed_by_that_status(owner, owner_client, registry):
    run, _, _ = parked(owner, registry)
    make_run(owner)

    body = owner_client.get("/api/v1/runs?status=waiting_approval").json()

    assert [r["id"] for r in body["results"]] == [run.pk]
    assert body["results"][0]["status"] == "waiting_approval"

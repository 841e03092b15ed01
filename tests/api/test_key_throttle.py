"""Refused API keys are throttled per address (core/throttle): past API_KEY_FAILURE_LIMIT
every key from there hears 429 in the error envelope, with Retry-After, and each refusal is
audited."""

import pytest
from asgiref.sync import async_to_sync

from agents_app.api.site import api
from agents_app.models import ApiKey, AuditEvent
from tests.support.api import assert_error
from tests.support.clients import key_client, make_api_key
from tests.support.runs import make_run
from tests.support.sockets import api_socket, refusal

pytestmark = pytest.mark.dialect  # the counts are kept in Redis

RUNS = "/api/v1/runs"
ATTACKER = "203.0.113.66"
HOME = "198.51.100.7"


def random_keys(times: int, **extra) -> list[int]:
    """The statuses of `times` requests, each with a key nobody holds."""
    return [key_client(ApiKey.generate()).get(RUNS, **extra).status_code for _ in range(times)]


def test_fifty_random_keys_from_one_address_end_in_429_with_the_envelope_and_retry_after(
    db, settings
):
    statuses = random_keys(50, REMOTE_ADDR=ATTACKER)

    limit = settings.API_KEY_FAILURE_LIMIT
    assert statuses == [401] * limit + [429] * (50 - limit)
    response = key_client(ApiKey.generate()).get(RUNS, REMOTE_ADDR=ATTACKER)
    error = assert_error(response, 429, "RATE_LIMITED")
    retry_after = int(response["Retry-After"])
    assert 0 < retry_after <= settings.AUTH_FAILURE_WINDOW_SECONDS
    assert error["details"] == {"retry_after_seconds": retry_after}
    assert "Wait 15 minutes" in error["message"]


def test_a_valid_key_is_refused_from_a_throttled_address_and_accepted_from_another(owner):
    raw = make_api_key(owner)
    random_keys(50, REMOTE_ADDR=ATTACKER)

    assert_error(key_client(raw).get(RUNS, REMOTE_ADDR=ATTACKER), 429, "RATE_LIMITED")
    assert key_client(raw).get(RUNS, REMOTE_ADDR=HOME).status_code == 200


def test_a_refused_key_is_audited_with_the_address_and_never_the_key(owner):
    revoked = make_api_key(owner, revoked=True)
    unknown = ApiKey.generate()

    key_client(unknown).get(RUNS, REMOTE_ADDR=ATTACKER)
    key_client(revoked).get(RUNS, REMOTE_ADDR=ATTACKER)

    events = list(AuditEvent.objects.filter(action="api_key.refuse").order_by("id"))
    assert [(e.interface, e.actor_label, e.details) for e in events] == [
        ("api", "anonymous", {"address": ATTACKER, "api_key_id": None}),
        ("api", "anonymous", {"address": ATTACKER, "api_key_id": ApiKey.objects.get().pk}),
    ]
    stored = " ".join(f"{e.target} {e.details}" for e in events)
    assert unknown not in stored and revoked not in stored


def test_a_client_cannot_leave_its_count_behind_by_writing_x_forwarded_for(db, settings):
    statuses = [
        key_client(ApiKey.generate())
        .get(RUNS, REMOTE_ADDR=ATTACKER, HTTP_X_FORWARDED_FOR=f"192.0.2.{n}")
        .status_code
        for n in range(settings.API_KEY_FAILURE_LIMIT + 1)
    ]

    assert statuses[-1] == 429


def test_behind_a_trusted_proxy_the_address_it_forwarded_is_counted(owner, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.1"
    raw = make_api_key(owner)
    random_keys(50, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"192.0.2.1, {ATTACKER}")

    # The entry left of the proxy's own is the client's to write: it changes nothing.
    spoofed = key_client(raw).get(
        RUNS, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=f"{HOME}, {ATTACKER}"
    )
    assert_error(spoofed, 429, "RATE_LIMITED")
    other = key_client(raw).get(RUNS, REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=HOME)
    assert other.status_code == 200


def test_an_ipv6_client_is_counted_by_its_64_bit_network(owner):
    raw = make_api_key(owner)
    random_keys(50, REMOTE_ADDR="2001:db8:1:2::1")

    elsewhere_in_it = key_client(raw).get(RUNS, REMOTE_ADDR="2001:db8:1:2:ffff::9")
    assert_error(elsewhere_in_it, 429, "RATE_LIMITED")
    assert key_client(raw).get(RUNS, REMOTE_ADDR="2001:db8:1:3::1").status_code == 200


def test_the_api_schema_declares_429_wherever_a_key_is_checked(db):
    operations = [
        operation
        for methods in api.get_openapi_schema()["paths"].values()
        for operation in methods.values()
        if operation.get("security")
    ]

    assert operations
    assert all("429" in {str(s) for s in op["responses"]} for op in operations)


@pytest.mark.django_db(transaction=True)  # the socket reads the key from another thread
def test_an_api_socket_from_a_throttled_address_is_closed_with_4429_a_valid_key_too(
    owner, api_key_for, settings
):
    """Sockets count refused keys against their address as REST does (the API socket's
    keys): past the limit every key is refused before it is looked up, with 4429."""
    run = make_run(owner)
    valid = api_key_for(owner)
    limit = settings.API_KEY_FAILURE_LIMIT

    async def codes(auth: bytes, times: int) -> list[int]:
        return [await refusal(api_socket(run.pk, auth)) for _ in range(times)]

    wrong = f"Bearer {ApiKey.generate()}".encode()
    assert async_to_sync(codes)(wrong, limit + 1) == [4401] * limit + [4429]
    assert async_to_sync(codes)(valid, 1) == [4429]
    assert AuditEvent.objects.filter(action="api_key.refuse").count() == limit

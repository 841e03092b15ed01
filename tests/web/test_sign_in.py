"""Failed sign-ins are throttled per account and address and per address (core/throttle), on
the site's /login/ and the admin's /admin/login/, and audited."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from agents_app.models import AuditEvent
from tests.support.throttle import seconds_left, sign_in, signed_in, throttle_keys

pytestmark = pytest.mark.dialect  # the counts are kept in Redis

LOGIN = "/login/"
ADMIN_LOGIN = "/admin/login/"
ATTACKER = "203.0.113.66"
HOME = "198.51.100.7"


def wrong_passwords(path: str, username: str, times: int, address: str = ATTACKER) -> None:
    for attempt in range(times):
        assert not signed_in(sign_in(path, username, f"guess-{attempt}", address))


def assert_told_to_wait(response) -> None:
    assert response.status_code == 200  # the form again, with its error
    page = response.content.decode()
    assert "Too many failed sign-ins from your address" in page
    assert "Wait 15 minutes and try again" in page
    assert not signed_in(response)


def test_after_fifty_wrong_passwords_the_right_one_is_refused_with_a_message_to_wait(owner):
    wrong_passwords(LOGIN, "owner", 50)

    assert_told_to_wait(sign_in(LOGIN, "owner", "owner-pass-123", ATTACKER))


def test_wrong_passwords_from_one_address_do_not_lock_the_account_out_from_another(owner):
    wrong_passwords(LOGIN, "owner", 50)
    assert_told_to_wait(sign_in(LOGIN, "owner", "owner-pass-123", ATTACKER))

    assert signed_in(sign_in(LOGIN, "owner", "owner-pass-123", HOME))


def test_wrong_passwords_from_many_addresses_do_not_lock_the_account_out_from_a_fresh_one(owner):
    for host in range(1, 21):
        wrong_passwords(LOGIN, "owner", 6, address=f"192.0.2.{host}")
        assert_told_to_wait(sign_in(LOGIN, "owner", "owner-pass-123", f"192.0.2.{host}"))

    assert signed_in(sign_in(LOGIN, "owner", "owner-pass-123", HOME))


def test_an_address_that_tries_many_accounts_is_throttled_for_every_account(owner):
    for account in range(25):
        wrong_passwords(LOGIN, f"user{account}", 2)

    assert_told_to_wait(sign_in(LOGIN, "owner", "owner-pass-123", ATTACKER))
    assert signed_in(sign_in(LOGIN, "owner", "owner-pass-123", HOME))


def test_the_admin_login_refuses_the_right_password_after_fifty_wrong_ones(staff):
    wrong_passwords(ADMIN_LOGIN, "staff", 50)

    assert_told_to_wait(sign_in(ADMIN_LOGIN, "staff", "staff-pass-123", ATTACKER))
    assert signed_in(sign_in(ADMIN_LOGIN, "staff", "staff-pass-123", HOME))


def test_a_failed_sign_in_is_audited_with_the_account_and_address_never_the_password(owner):
    sign_in(LOGIN, "owner", "not-the-password-42", ATTACKER)
    sign_in(ADMIN_LOGIN, "owner", "not-the-password-43", ATTACKER)

    events = list(AuditEvent.objects.filter(action="login.fail").order_by("id"))
    assert [(e.interface, e.target, e.actor_label) for e in events] == [
        ("web", "owner", "anonymous"),
        ("admin", "owner", "anonymous"),
    ]
    assert all(e.details == {"address": ATTACKER} for e in events)
    stored = " ".join(f"{e.target} {e.details} {e.actor_label}" for e in events)
    assert "not-the-password" not in stored


def test_throttling_is_audited_once_a_window_not_once_an_attempt(owner):
    wrong_passwords(LOGIN, "owner", 5)
    for _ in range(3):
        assert_told_to_wait(sign_in(LOGIN, "owner", "owner-pass-123", ATTACKER))

    throttled = AuditEvent.objects.filter(action="login.throttle")
    assert AuditEvent.objects.filter(action="login.fail").count() == 5
    assert [(e.target, e.details["address"]) for e in throttled] == [("owner", ATTACKER)]


def test_failures_are_counted_in_redis_for_the_window(owner, settings):
    wrong_passwords(LOGIN, "owner", 1)

    keys = throttle_keys()
    assert len(keys) == 2  # the account at the address, and the address
    assert all(ATTACKER in key and "owner" not in key for key in keys)
    assert all(0 < seconds_left(key) <= settings.AUTH_FAILURE_WINDOW_SECONDS for key in keys)


@pytest.mark.django_db(transaction=True)  # the threads' connections see the committed rows
def test_of_thirty_simultaneous_guesses_only_the_limit_get_a_password_checked(settings):
    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(
            pool.map(lambda n: sign_in(LOGIN, "owner", f"guess-{n}", ATTACKER), range(30))
        )

    told_to_wait = [a for a in answers if b"Too many failed sign-ins" in a.content]
    assert len(told_to_wait) == 30 - settings.LOGIN_FAILURE_LIMIT
    assert AuditEvent.objects.filter(action="login.fail").count() == settings.LOGIN_FAILURE_LIMIT

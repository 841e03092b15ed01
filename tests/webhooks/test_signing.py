import time

from agents_app.webhooks.services import sign, verify_signature

SECRET = "whsec_test"
BODY = b'{"event":"run.finished","data":{"run_id":1}}'


def now() -> str:
    return str(int(time.time()))


def test_a_signature_verifies_with_verify_signature():
    timestamp = now()
    assert verify_signature(SECRET, timestamp, BODY, sign(SECRET, timestamp, BODY))


def test_a_tampered_body_fails_verification():
    timestamp = now()
    header = sign(SECRET, timestamp, BODY)
    assert not verify_signature(SECRET, timestamp, BODY.replace(b"1", b"2"), header)


def test_another_secret_or_timestamp_fails_verification():
    timestamp = now()
    header = sign(SECRET, timestamp, BODY)
    assert not verify_signature("whsec_other", timestamp, BODY, header)
    assert not verify_signature(SECRET, str(int(timestamp) + 1), BODY, header)


def test_an_old_signature_is_refused_as_a_replay():
    old = str(int(time.time()) - 3600)
    header = sign(SECRET, old, BODY)
    assert not verify_signature(SECRET, old, BODY, header)
    assert verify_signature(SECRET, old, BODY, header, max_age_seconds=None)


def test_a_receiver_may_name_the_arguments():
    timestamp = now()
    header = sign(SECRET, timestamp, BODY)
    assert verify_signature(secret=SECRET, timestamp=timestamp, body=BODY, header=header)


def test_a_timestamp_that_is_not_a_number_fails_verification():
    header = sign(SECRET, "yesterday", BODY)
    assert not verify_signature(SECRET, "yesterday", BODY, header)

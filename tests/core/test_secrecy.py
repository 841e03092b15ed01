"""The one redaction point (agents_app.core.secrecy): a secret is hidden in each of its common
encodings, in text that arrives in pieces, and in every log line."""

import base64
import io
import logging
import logging.config
from urllib.parse import quote

import pytest
from django.conf import settings

from agents_app.core.secrecy import REDACTED, StreamRedactor, redact, redact_all

SECRET = "sk-gw-Unit/Test+Key0123456789abcdefXYZ"
RAW = SECRET.encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def urlsafe(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


ENCODED = {
    "upper case": SECRET.upper(),
    "lower case": SECRET.lower(),
    "hex": RAW.hex(),
    "hex upper case": RAW.hex().upper(),
    "URL-encoded, lower-case escapes": quote(SECRET, safe="").lower(),
    "base64": b64(RAW),
    "base64 without padding": b64(RAW).rstrip("="),
    "URL-safe base64": urlsafe(RAW),
    "URL-safe base64 without padding": urlsafe(RAW).rstrip("="),
    "base64 of Bearer <key>": b64(b"Bearer " + RAW),
    "base64 of basic auth user:<key>": b64(b"deploy-bot:" + RAW),
    "URL-safe base64 of a JSON body holding it": urlsafe(b'{"api_key": "' + RAW + b'"}'),
}


@pytest.mark.parametrize("encoding", ENCODED)
def test_a_secret_is_redacted_in_each_of_its_common_encodings(encoding):
    text = f"the gateway said: {ENCODED[encoding]} (and more)"

    redacted = redact(text, [SECRET])

    assert REDACTED in redacted
    # Whatever is left around the cut (base64 shares a character or two with its neighbours)
    # decodes to no part of the key longer than a few bytes.
    for form in ENCODED.values():
        assert form not in redacted
    assert redacted.startswith("the gateway said: ") and redacted.endswith(" (and more)")


def test_a_registered_secret_is_redacted_from_nested_values_without_being_passed(monkeypatch):
    monkeypatch.setenv("UNIT_TEST_API_TOKEN", SECRET)

    value = redact_all({"error": {"message": f"Bearer {SECRET}", "items": [SECRET.upper(), 3]}})

    assert value == {"error": {"message": f"Bearer {REDACTED}", "items": [REDACTED, 3]}}


def test_a_secret_set_in_the_environment_later_is_redacted_from_then_on(monkeypatch):
    """What the environment holds is worked out once and again only when it changed: a
    variable set (or changed) after the first redaction is still hidden."""
    first, second = "plainfirst" + "f" * 30, "plainsecond" + "s" * 30
    assert redact(f"before: {first}") == f"before: {first}"  # not a secret yet
    monkeypatch.setenv("UNIT_TEST_LATER_TOKEN", first)
    assert redact(f"now: {first}") == f"now: {REDACTED}"
    monkeypatch.setenv("UNIT_TEST_LATER_TOKEN", second)
    assert redact(f"{first} {second}") == f"{first} {REDACTED}"


@pytest.mark.parametrize("cut", range(1, 60, 4))
def test_a_secret_split_across_streamed_pieces_is_still_redacted(cut):
    text = f"Your key is {SECRET}, keep it safe. Then a long tail of words that follow it."
    stream = StreamRedactor([SECRET])

    shown = [
        stream.feed(text[:cut]),
        stream.feed(text[cut : cut + 9]),
        stream.feed(text[cut + 9 :]),
    ]
    shown.append(stream.finish())

    assert "".join(shown) == redact(text, [SECRET])
    assert all(SECRET[:12] not in piece for piece in shown)


def test_no_log_line_carries_a_secret_whichever_logger_wrote_it(monkeypatch):
    monkeypatch.setenv("UNIT_TEST_LLM_KEY", SECRET)
    out = io.StringIO()
    config = {**settings.LOGGING, "handlers": {**settings.LOGGING["handlers"]}}
    config["handlers"]["console"] = {**config["handlers"]["console"], "stream": out}
    logging.config.dictConfig(config)
    try:
        logging.getLogger("openai._base_client").info("sent Authorization: Bearer %s", SECRET)
        try:
            raise ValueError(f"refused {b64(RAW)}")
        except ValueError:
            logging.getLogger("agents_app.worker").exception("failed")
    finally:
        logging.config.dictConfig(settings.LOGGING)

    written = out.getvalue()
    assert "sent Authorization: Bearer [redacted]" in written
    assert "ValueError: refused [redacted]" in written
    assert SECRET not in written and b64(RAW) not in written

"""The default connection's health as health reports it (connections.freshness): probed when
older than a few seconds, with a short timeout, so a server that never answers cannot hold
up the caller."""

import socket
import time

import pytest

from agents_app.connections.freshness import (
    PROBE_TIMEOUT,
    LLMState,
    default_connection_checked,
    llm_state,
)


@pytest.fixture
def silent_server(settings):
    """A port that accepts connections (the kernel's backlog) and never answers."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    settings.LLM_BASE_URL = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
    settings.LLM_MODEL = "scripted"
    yield silent
    silent.close()


@pytest.mark.django_db
def test_a_server_that_never_answers_is_down_after_the_short_probe_timeout(silent_server):
    started = time.monotonic()
    connection = default_connection_checked()
    elapsed = time.monotonic() - started

    assert llm_state(connection) == LLMState.DOWN
    assert "ReadTimeout" in connection.last_error
    # The admin's Check now waits 10 s; the health probe about PROBE_TIMEOUT (and some load).
    assert elapsed < PROBE_TIMEOUT + 4


@pytest.mark.django_db
def test_a_fresh_check_is_answered_from_the_row_without_asking_again(llm):
    first = default_connection_checked()
    assert llm_state(first) == LLMState.CONNECTED

    second = default_connection_checked()

    assert second.last_checked_at == first.last_checked_at


@pytest.mark.django_db
def test_no_configured_llm_is_not_configured(settings):
    settings.LLM_BASE_URL = ""

    assert llm_state(default_connection_checked()) == LLMState.NOT_CONFIGURED


@pytest.mark.django_db
def test_a_malformed_base_url_is_down_with_its_reason_not_a_crash(settings):
    settings.LLM_BASE_URL = "http://[::1/v1"  # an unclosed IPv6 bracket: httpx.InvalidURL
    settings.LLM_MODEL = "scripted"

    connection = default_connection_checked()

    assert llm_state(connection) == LLMState.DOWN
    assert "InvalidURL" in connection.last_error

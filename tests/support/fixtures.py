"""Fixtures more than one test folder uses, other than the personas (personas.py). Registered
for every test by `pytest_plugins` in tests/conftest.py."""

import pytest

from agents_app.core import dispatch
from tests.support.profiles import seed_profiles
from tests.support.tools import SendTool


@pytest.fixture
def llm_configured(settings):
    """An LLM configured for the web side (submitting needs one); nothing ever calls it."""
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.LLM_MODEL = "scripted"
    return settings


@pytest.fixture
def seeded_profiles(db):
    """Seed 001's four agent profiles by name. Asked for, not taken from the migration's rows:
    a transactional test's flush empties the tables, and those tests run first."""
    return seed_profiles()


@pytest.fixture
def allow_private(settings):
    """Webhooks may go to private addresses: the test receivers listen on 127.0.0.1. (A worker
    the test starts needs WEBHOOK_ALLOW_PRIVATE in its own environment.)"""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    return settings


@pytest.fixture
def send():
    """The `send` tool of an in-process registry (external side effects: it asks unless a rule
    allows it); `send.calls` are the calls that ran."""
    return SendTool()


@pytest.fixture
def queued_runs(monkeypatch) -> list[int]:
    """The runs queued for a worker, in order; nothing is sent to a broker (a child started
    in a test's transaction that commits would otherwise be queued for no worker)."""
    sent: list[int] = []
    monkeypatch.setattr(dispatch, "send", lambda task, *args, countdown=None: sent.append(args[0]))
    return sent

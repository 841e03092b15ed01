"""Every page's header shows staff the default LLM connection's state beside the MCP servers':
as last checked (by /api/v1/health, *Check now* or a worker's real call), never probed by the
page itself; why it is down and when it was checked are in its title."""

import re

import pytest

from agents_app.connections.health import connection_mark
from agents_app.connections.services import connection_ensure_default


def llm_state(html: str) -> str | None:
    found = re.search(r'<span id="llm-state"[^>]*>.*?</span>[^<]*</span>', html, re.S)
    return found[0] if found else None


@pytest.mark.django_db
def test_every_page_shows_staff_the_llm_state_and_why_it_is_down(client, staff, llm_configured):
    connection = connection_ensure_default()
    connection_mark(connection.pk, ok=False, reason="cannot reach the LLM server: refused")
    client.force_login(staff)

    html = client.get("/").content.decode()

    state = llm_state(html)
    assert state is not None and "LLM: " in state and "down" in state and "dot-broken" in state
    assert "cannot reach the LLM server: refused" in state and "checked" in state
    assert html.index('id="llm-state"') < html.index('id="servers-summary"')


@pytest.mark.django_db
def test_the_header_shows_staff_an_llm_that_works_as_connected(client, staff, llm_configured):
    connection = connection_ensure_default()
    connection_mark(connection.pk, ok=True)
    client.force_login(staff)

    state = llm_state(client.get("/").content.decode())

    assert "connected" in state and "dot-active" in state


@pytest.mark.django_db
def test_others_see_no_llm_state_in_the_header(client, owner, llm_configured):
    connection = connection_ensure_default()
    connection_mark(connection.pk, ok=False, reason="cannot reach the LLM server: refused")
    client.force_login(owner)

    html = client.get("/").content.decode()

    assert llm_state(html) is None and "cannot reach the LLM server" not in html

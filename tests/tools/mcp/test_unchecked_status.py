"""A server nobody has checked yet is "not checked yet" in every page's header, in a neutral
colour: never counted or coloured as broken, which only a failed check makes it."""

import re

import pytest

from tools_app.models import MCPServer


def summary(html: str) -> str:
    return re.search(r'<span id="servers-summary"[^>]*>(.*?)</span>\s*</summary>', html, re.S)[1]


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["staff", "owner"])
def test_a_never_checked_server_is_not_shown_broken_in_the_header(client, persona, request):
    MCPServer.objects.create(name="files", transport="stdio", command="npx")
    client.force_login(request.getfixturevalue(persona))

    html = client.get("/").content.decode()

    head = summary(html)
    assert re.sub(r"<[^>]+>", "", head).strip() == "MCP servers: 0 active · 1 not checked yet"
    assert "dot-unchecked" in head and "dot-broken" not in head
    assert '<span class="badge" data-status="unchecked">not checked yet</span>' in html
    assert 'data-status="broken"' not in html and "Connecting…" in html


@pytest.mark.django_db
def test_a_failed_check_is_what_makes_a_server_broken_in_the_header(client, staff):
    server = MCPServer.objects.create(name="files", transport="stdio", command="npx")
    server.mark("broken", error="spawn npx ENOENT")
    client.force_login(staff)

    html = client.get("/").content.decode()

    head = summary(html)
    assert re.sub(r"<[^>]+>", "", head).strip() == "MCP servers: 0 active · 1 broken"
    assert "dot-broken" in head and "spawn npx ENOENT" in html

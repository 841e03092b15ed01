import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tools_app.models import MCPServer, Transport


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser(
        "staff", "", None
    )  # force_login: no slow hashing


@pytest.fixture
def staff_client(staff):
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def make_server(db):
    def make(name: str = "files", **fields) -> MCPServer:
        fields.setdefault("transport", Transport.STDIO)
        if fields["transport"] == Transport.STDIO:
            fields.setdefault("command", "npx")
        else:
            fields.setdefault("url", "https://mcp.example.com/mcp")
        server = MCPServer(name=name, **fields)
        server.full_clean()
        server.save()
        return server

    return make

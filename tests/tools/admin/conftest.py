import pytest

from tools_app.models import MCPServer, Transport


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

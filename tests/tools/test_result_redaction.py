"""What a tool answers passes through the one redaction point (agents_app.core.secrecy) before
the model, the rows or the pages see it: a tool that prints its environment, or a server whose
error quotes the key it was sent, gives away no secret of AgentDesk's."""

import base64
from pathlib import Path

from tests.support.tools import EchoTool, make_registry
from tools_app.registry import ToolContext, ToolError

SECRET = "tool-Result-Key0123456789abcdefXYZ"
BASIC = base64.b64encode(b"bot:" + SECRET.encode()).decode()


class QuotingTool(EchoTool):
    """Fails quoting the key in base64, as an HTTP server's error body might."""

    def run(self, arguments, context):
        raise ToolError(f"401: Authorization: Basic {BASIC}")


def context() -> ToolContext:
    return ToolContext(run_id=1, workspace=Path("/nonexistent"), timeout=5.0)


def test_a_tools_result_and_error_come_back_without_the_processes_secrets(monkeypatch):
    monkeypatch.setenv("TOOL_TEST_API_KEY", SECRET)

    echoed = make_registry(EchoTool()).call("echo", {"text": f"env: {SECRET}"}, context())
    failed = make_registry(QuotingTool()).call("echo", {"text": "x"}, context())

    assert echoed.content == {"echo": "env: [redacted]"}
    assert "[redacted]" in failed.error
    assert BASIC[8:-4] not in failed.error

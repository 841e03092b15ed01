"""Runs that ask for approval on a real worker: `write_file` made moderate, and a script for
the scripted LLM in which each run writes one file once it is allowed to."""

import json

from tests.integration.test_worker_runs import plan_reply, step, verdict
from tools_app.models import Tool, ToolSource

TOOL = "write_file"


def make_tool_ask(level: str = "moderate") -> None:
    """Staff's setting: every write_file call asks (unless a rule allows it, for moderate)."""
    Tool.objects.update_or_create(
        name=TOOL,
        defaults={
            "source": ToolSource.BUILTIN,
            "approval_level": level,
            "side_effects": "workspace_write",
        },
    )


def write_call(path: str = "note.txt", content: str = "hello") -> dict:
    return {"tool_calls": [{"name": TOOL, "arguments": {"path": path, "content": content}}]}


def asking_script(
    path: str = "note.txt", content: str = "hello", complete: bool = True, summary: bool = True
) -> list:
    """Plan one write and (with `summary`) a summary after it; the write's step answers once
    its tool result (or a denial) is in the conversation. Every rule repeats, so any number of
    runs can use it."""
    steps = [step("write", [TOOL])] + ([step("sum up", [], [0])] if summary else [])
    return [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(*steps)], "repeat": True},
        {
            "match": ["AGENTDESK:STEP 0", "bytes_written"],
            "replies": [{"content": "written"}],
            "repeat": True,
        },
        {
            "match": ["AGENTDESK:STEP 0", "denied"],
            "replies": [{"content": "not allowed"}],
            "repeat": True,
        },
        {"match": "AGENTDESK:STEP 0", "replies": [write_call(path, content)], "repeat": True},
        {"match": "AGENTDESK:STEP 1", "replies": [{"content": "summed up"}], "repeat": True},
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(complete, "all done")], "repeat": True},
    ]


def asked(llm, marker: str) -> bool:
    return any(marker in json.dumps(body["messages"]) for body in llm.requests)

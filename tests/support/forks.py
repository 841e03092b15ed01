"""A five-step run whose steps change one file, and its fork, driven in the test's own process
(issue 36, item 3): the source from a ScriptedProvider, a fork from the scripted LLM server
through the LLM connection it runs on (so the model it asks is the one the run names)."""

from agents_app.models import LLMConnection, Run
from agents_app.worker.execution import execute_run
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import EchoTool, make_registry
from tools_app.builtin.files import ReadFileTool, WriteFileTool

TOOLS = ["write_file", "read_file", "echo"]
# What each of the source's five steps does: step 4 changes a.txt again.
SOURCE_CALLS = [
    tool_call("write_file", path="a.txt", content="a after step 1"),
    tool_call("write_file", path="b.txt", content="b after step 2"),
    tool_call("write_file", path="a.txt", content="a after step 3"),
    tool_call("write_file", path="a.txt", content="a after step 4"),
    tool_call("echo", text="five"),
]


def registry():
    return make_registry(
        WriteFileTool(max_bytes=10_000), ReadFileTool(max_bytes=10_000), EchoTool()
    )


def five_step_run(owner) -> Run:
    """A succeeded run of five steps (step k's output "step k done")."""
    run = make_run(owner, "Change some files", fast_path=False)
    script = [
        {
            "match": "AGENTDESK:PLAN",
            "replies": [plan_reply(*(step(f"step {k + 1}", TOOLS) for k in range(5)))],
        },
        *(
            {
                "match": f"AGENTDESK:STEP {k}",
                "replies": [call, {"content": f"step {k + 1} done"}],
            }
            for k, call in enumerate(SOURCE_CALLS)
        ),
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
    ]
    execute_run(run.pk, provider=ScriptedProvider(script), registry=registry())
    run.refresh_from_db()
    assert run.status == "succeeded", (run.error_code, run.error_message)
    return run


def fork_script(*, step_4_reads: str = "a.txt") -> list[dict]:
    """What a fork after step 3 is answered: step 4 reads `step_4_reads`, step 5 echoes."""
    return [
        {
            "match": "AGENTDESK:STEP 3",
            "replies": [tool_call("read_file", path=step_4_reads), {"content": "step 4 read"}],
        },
        {
            "match": "AGENTDESK:STEP 4",
            "replies": [tool_call("echo", text="FIVE"), {"content": "step 5 done"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
    ]


def other_connection(llm) -> LLMConnection:
    """An enabled connection to the scripted LLM server under another model's name."""
    return LLMConnection.objects.create(name="other", base_url=llm.base_url, model="other-model")


def executed(run: Run) -> Run:
    """`run` executed to its end on its own connection (the scripted server)."""
    execute_run(run.pk, registry=registry())
    run.refresh_from_db()
    return run

"""The workspace journal (issue 36, item 2): after each tool call what changed in the run's
workspace is recorded, whichever tool changed it (write_file, or a tool writing straight to the
disk as an MCP server or sandboxed code does), each content stored once by its hash; past the
run's quota the journal stops and says up to where it is complete."""

import hashlib
import os

import pytest

from agents_app.models import Run, Step, ToolCall, WorkspaceChange
from agents_app.runs.files import workspace_dir
from agents_app.runs.journal import BLOBS, WorkspaceJournal, blob_path
from agents_app.worker.execution import execute_run
from tests.support.journal import run_steps
from tests.support.runs import make_run
from tests.support.script import plan_reply, step, tool_call, verdict
from tests.support.scripted_provider import ScriptedProvider
from tests.support.tools import DiskTool, EchoTool, make_registry
from tests.support.workspaces import own_workspaces

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["own_workspaces"]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def journal(run: Run) -> list[tuple]:
    return [
        (c.seq, c.kind, c.path, c.sha256, c.size)
        for c in WorkspaceChange.objects.filter(run=run).order_by("seq")
    ]


def blobs(root) -> list[str]:
    found = []
    for _, _, names in os.walk(root / BLOBS):
        found += [name for name in names if not name.startswith(".tmp")]
    return found


def test_writes_overwrites_and_deletes_by_any_tool_are_journaled_in_order_with_their_hashes(
    owner, own_workspaces
):
    run = run_steps(
        owner,
        [
            tool_call("write_file", path="notes/a.txt", content="one"),
            tool_call("disk", path="b.txt", content="bee"),
        ],
        [
            tool_call("disk", path="notes/a.txt", content="two!"),
            tool_call("echo", text="nothing changes"),
            tool_call("disk", path="b.txt", delete=True),
        ],
    )

    assert journal(run) == [
        (1, "write", "notes/a.txt", sha("one"), 3),
        (2, "write", "b.txt", sha("bee"), 3),
        (3, "write", "notes/a.txt", sha("two!"), 4),
        (4, "delete", "b.txt", "", 0),
    ]
    calls = {c.pk: (c.tool, c.arguments.get("path")) for c in ToolCall.objects.filter(run=run)}
    changes = WorkspaceChange.objects.filter(run=run).order_by("seq")
    assert [calls[c.tool_call_id] for c in changes] == [
        ("write_file", "notes/a.txt"),
        ("disk", "b.txt"),
        ("disk", "notes/a.txt"),
        ("disk", "b.txt"),
    ]
    steps = dict(Step.objects.filter(run=run).values_list("pk", "index"))
    assert [steps[c.step_id] for c in changes] == [0, 0, 1, 1]
    assert blob_path(sha("two!")).read_bytes() == b"two!"
    assert run.journal_seq == 4 and run.journal_bytes == 10 and run.journal_complete_until is None


def test_the_same_content_twice_is_stored_once(owner, own_workspaces):
    run = run_steps(
        owner,
        [
            tool_call("write_file", path="a.txt", content="same"),
            tool_call("disk", path="copy/b.txt", content="same"),
        ],
    )

    assert [c[3] for c in journal(run)] == [sha("same"), sha("same")]
    assert blobs(own_workspaces) == [sha("same")[2:]]
    assert run.journal_bytes == 4  # a content counts once against the quota


def test_a_symlink_is_recorded_as_a_link_and_never_followed(owner, own_workspaces, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the workspace")
    run = run_steps(owner, [tool_call("disk", path="leak", target=str(secret))])

    assert journal(run) == [(1, "link", "leak", "", len(str(secret)))]
    assert blobs(own_workspaces) == []


def test_past_its_quota_the_journal_stops_and_the_run_is_not_forkable_past_that_point(
    owner, own_workspaces, settings
):
    settings.WORKSPACE_JOURNAL_MAX_BYTES = 10
    run = run_steps(
        owner,
        [tool_call("disk", path="a.txt", content="12345")],
        [
            tool_call("disk", path="b.txt", content="123456"),  # 11 bytes: over
            tool_call("disk", path="c.txt", content="x"),
        ],
    )

    kept = journal(run)
    assert kept[0] == (1, "write", "a.txt", sha("12345"), 5)
    assert [(seq, kind) for seq, kind, *_ in kept] == [(1, "write"), (2, "stopped")]
    assert "WORKSPACE_JOURNAL_MAX_BYTES" in kept[1][2]
    assert run.journal_complete_until == 1 and run.journal_bytes == 5
    assert blobs(own_workspaces) == [sha("12345")[2:]]  # nothing stored past the quota


def test_a_workspace_of_too_many_entries_stops_the_journal_instead_of_scanning_it(
    owner, own_workspaces, settings
):
    settings.WORKSPACE_JOURNAL_MAX_FILES = 3
    run = run_steps(
        owner,
        [
            tool_call("disk", path="a.txt", content="a"),
            tool_call("disk", path="d/b.txt", content="b"),
        ],
        [
            tool_call("disk", path="c.txt", content="c"),
            tool_call("disk", path="e.txt", content="e"),
        ],
    )

    kinds = [(seq, kind) for seq, kind, *_ in journal(run)]
    assert kinds == [(1, "write"), (2, "write"), (3, "stopped")]
    assert run.journal_complete_until == 2


def test_files_already_in_the_workspace_are_recorded_before_the_first_call(owner, own_workspaces):
    run = make_run(owner, "Change some files", fast_path=False)
    directory = workspace_dir(run)
    directory.mkdir(parents=True)
    (directory / "given.txt").write_text("from before")
    script = [
        {"match": "AGENTDESK:PLAN", "replies": [plan_reply(step("s", ["disk"]))]},
        {
            "match": "AGENTDESK:STEP 0",
            "replies": [tool_call("disk", path="new.txt", content="n"), {"content": "done"}],
        },
        {"match": "AGENTDESK:VERIFY", "replies": [verdict(True, "done", evidence=[1])]},
    ]
    execute_run(
        run.pk, provider=ScriptedProvider(script), registry=make_registry(DiskTool(), EchoTool())
    )

    changes = list(WorkspaceChange.objects.filter(run=run).order_by("seq"))
    assert [(c.path, c.tool_call_id is None) for c in changes] == [
        ("given.txt", True),
        ("new.txt", False),
    ]


def test_a_later_delivery_starts_from_the_journal_and_records_only_what_changed_in_between(
    owner, own_workspaces
):
    # A delivery after a crash has no state in memory: it rebuilds the workspace's last state
    # from the journal's rows, reads again only what it cannot tell unchanged by its stat (the
    # rows keep no mtime), and records what differs with no call.
    run = run_steps(
        owner,
        [
            tool_call("disk", path="same.txt", content="kept"),
            tool_call("disk", path="edited.txt", content="abcd"),
            tool_call("disk", path="gone.txt", content="bye"),
        ],
    )
    directory = workspace_dir(run)
    (directory / "edited.txt").write_text("wxyz")  # the same size, another content
    (directory / "gone.txt").unlink()
    (directory / "new.txt").write_text("kept")  # a content the journal stored before

    pending: list[WorkspaceChange] = []
    WorkspaceJournal(run).before_call(workspace=directory, step_id=None, pending=pending)

    assert [(c.kind, c.path, c.sha256, c.tool_call_id) for c in pending] == [
        ("write", "edited.txt", sha("wxyz"), None),
        ("write", "new.txt", sha("kept"), None),
        ("delete", "gone.txt", "", None),
    ]
    # Only a new content counts against the quota: "kept" was stored before.
    assert [c.counted for c in pending] == [4, 0, 0]

    unchanged: list[WorkspaceChange] = []
    (directory / "edited.txt").write_text("abcd")
    (directory / "gone.txt").write_text("bye")
    (directory / "new.txt").unlink()
    later = WorkspaceJournal(Run.objects.get(pk=run.pk))
    later.before_call(workspace=directory, step_id=None, pending=unchanged)
    assert unchanged == []
    assert later.bytes == run.journal_bytes

"""The git tools never start a program the workspace controls (issue 34): `git` is approved
without a person, so a model that wrote a config naming a program, then called git, would
otherwise run code with nobody asked. Each vector's program would leave a marker file in the
workspace; against real bubblewrap, as root, the marker never appears and the call either
fails saying git was not run, or gives git's ordinary output."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.sandbox import working_sandbox
from tools_app.builtin import GitCommitTool, GitTool, WriteFileTool
from tools_app.builtin.git_policy import GIT, GIT_ENV, GIT_FIXED, SAFE_KEYS, guarded
from tools_app.registry import ToolContext, ToolRegistry, ToolResult
from tools_app.sandbox import Sandbox

MARKER = "ran"
# Leaves the marker, then behaves as each driver must (a filter copies stdin, textconv prints).
PROGRAM = f'#!/bin/sh\ntouch /workspace/{MARKER}\nexec cat "$@"\n'
# The machine's git, used only to build nested repositories: no configuration of the machine.
HOST_GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t.invalid",
}


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    return working_sandbox(tmp_path / "slots")


@pytest.fixture
def registry(sandbox) -> ToolRegistry:
    """The tools a model may call with nobody asked: git (auto) and write_file (auto), and
    git_commit."""
    registry = ToolRegistry()
    for tool in (GitTool(sandbox), GitCommitTool(sandbox), WriteFileTool(max_bytes=100_000)):
        registry.register(tool)
    return registry


@pytest.fixture
def context(tmp_path) -> ToolContext:
    return ToolContext(run_id=1, workspace=tmp_path / "workspaces" / "run-1", timeout=10.0)


def git(registry, context, subcommand, *args) -> ToolResult:
    return registry.call("git", {"subcommand": subcommand, "args": list(args)}, context)


def commit(registry, context, message="change", **more) -> ToolResult:
    return registry.call("git_commit", {"message": message, **more}, context)


def write_file(registry, context, path, content) -> ToolResult:
    return registry.call("write_file", {"path": path, "content": content}, context)


def committed_repository(registry, context) -> Path:
    """A repository with a.txt committed and then changed (so status and diff have work)."""
    workspace = context.workspace
    assert git(registry, context, "init").ok
    (workspace / "a.txt").write_text("one\n")
    assert git(registry, context, "add", "a.txt").ok
    assert commit(registry, context, "first").content["exit_code"] == 0
    (workspace / "a.txt").write_text("two\n")
    program = workspace / "mark.sh"
    program.write_text(PROGRAM)
    program.chmod(0o755)
    return workspace


def configure(workspace: Path, config: str, attributes: str = "") -> None:
    with (workspace / ".git" / "config").open("a") as file:
        file.write(config)
    if attributes:
        (workspace / ".gitattributes").write_text(attributes)


def assert_contained(result: ToolResult, workspace: Path) -> None:
    assert not (workspace / MARKER).exists(), "a program of the workspace ran"
    if not result.ok:
        assert result.error.startswith("git was not run"), result.error


PROGRAM_KEYS = {
    "a filter's clean command": ('[filter "x"]\n\tclean = ./mark.sh\n', "* filter=x\n"),
    "a filter's process": ('[filter "x"]\n\tprocess = ./mark.sh\n', "* filter=x\n"),
    "a diff driver's textconv": ('[diff "x"]\n\ttextconv = ./mark.sh\n', "* diff=x\n"),
    "a diff driver's command": ('[diff "x"]\n\tcommand = ./mark.sh\n', "* diff=x\n"),
    "an external diff": ("[diff]\n\texternal = ./mark.sh\n", ""),
    "an alias": ("[alias]\n\tst = !./mark.sh\n\tdiff = !./mark.sh\n", ""),
    "an include of a filter": ("[include]\n\tpath = filter.cfg\n", "* filter=x\n"),
    "a signature check": ("[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ./mark.sh\n", ""),
    "a pager": ("[core]\n\tpager = ./mark.sh\n[pager]\n\tlog = ./mark.sh\n", ""),
    "an editor": ("[core]\n\teditor = ./mark.sh\n", ""),
    "an ssh command": ("[core]\n\tsshCommand = ./mark.sh\n", ""),
    "a worktree elsewhere": ("[core]\n\tworktree = /tmp\n\tattributesFile = x\n", ""),
}


@pytest.mark.parametrize("vector", PROGRAM_KEYS, ids=list(PROGRAM_KEYS))
def test_a_program_named_by_the_repositorys_config_never_runs(registry, context, vector):
    workspace = committed_repository(registry, context)
    config, attributes = PROGRAM_KEYS[vector]
    (workspace / ".git" / "filter.cfg").write_text('[filter "x"]\n\tclean = ./mark.sh\n')
    configure(workspace, config, attributes)

    for call in (
        lambda: git(registry, context, "status"),
        lambda: git(registry, context, "diff"),
        lambda: git(registry, context, "log", "-p", "-n", "2"),
        lambda: git(registry, context, "add", "a.txt"),
        lambda: commit(registry, context, all=True),
    ):
        assert_contained(call(), workspace)


def test_a_repository_config_naming_a_filter_is_refused_naming_the_key(registry, context):
    workspace = committed_repository(registry, context)
    configure(workspace, '[filter "x"]\n\tclean = ./mark.sh\n', "* filter=x\n")

    result = git(registry, context, "add", "a.txt")

    assert not result.ok
    assert "filter.x.clean" in result.error
    assert not (workspace / MARKER).exists()


def test_hooks_in_the_repository_run_on_no_commit(registry, context):
    workspace = committed_repository(registry, context)
    hooks = workspace / ".git" / "hooks"  # where git looks with no key set, as code run before
    for name in ("pre-commit", "commit-msg", "post-commit", "post-index-change"):
        (hooks / name).write_text(PROGRAM)
        (hooks / name).chmod(0o755)

    added = git(registry, context, "add", "a.txt")
    committed = commit(registry, context)

    assert added.ok and committed.ok and committed.content["exit_code"] == 0, committed.content
    assert not (workspace / MARKER).exists()


# Keys that name a program, each refused though GIT_FIXED would replace some of them.
PROGRAM_NAMING_KEYS = {
    "core.fsmonitor": "[core]\n\tfsmonitor = /workspace/mark.sh\n",
    "core.hookspath": "[core]\n\thooksPath = hooks\n",
    "core.pager": "[core]\n\tpager = ./mark.sh\n",
    "core.editor": "[core]\n\teditor = ./mark.sh\n",
    "core.sshcommand": "[core]\n\tsshCommand = ./mark.sh\n",
    "core.askpass": "[core]\n\taskPass = ./mark.sh\n",
    "diff.external": "[diff]\n\texternal = ./mark.sh\n",
    "sequence.editor": "[sequence]\n\teditor = ./mark.sh\n",
    "gpg.program": "[gpg]\n\tprogram = ./mark.sh\n",
    "gpg.ssh.program": '[gpg "ssh"]\n\tprogram = ./mark.sh\n',
    "credential.helper": "[credential]\n\thelper = !./mark.sh\n",
}


@pytest.mark.parametrize("key", PROGRAM_NAMING_KEYS, ids=list(PROGRAM_NAMING_KEYS))
def test_a_config_key_naming_a_program_is_refused_naming_it_even_where_overridden(
    registry, context, key
):
    workspace = committed_repository(registry, context)
    configure(workspace, PROGRAM_NAMING_KEYS[key])

    result = git(registry, context, "status")

    assert not result.ok
    assert result.error.startswith(f"git was not run: the repository's config sets {key},")
    assert not (workspace / MARKER).exists()


def test_the_reviewers_fsmonitor_written_by_write_file_never_runs(registry, context):
    """The reproduction of issue 34's review, with only the tools approved without a person:
    a config naming an fsmonitor shell command, written by write_file over an index, and then
    `git status`."""
    workspace = context.workspace
    assert write_file(registry, context, "a.txt", "a\n").ok
    assert git(registry, context, "init").ok
    assert git(registry, context, "add", "a.txt").ok
    config = (workspace / ".git" / "config").read_text()

    written = write_file(
        registry,
        context,
        ".git/config",
        config
        + "[core]\n\tfsmonitor = echo FSMONITOR-RAN uid=$(id -u) >> /workspace/MARKER; true\n",
    )
    status = git(registry, context, "status", "--short")

    assert not (workspace / "MARKER").exists(), "the monitor ran"
    assert not written.ok
    assert "the repository's own files are written by git only" in written.error
    assert status.ok and status.content["stdout"] == "A  a.txt\n", status.content


def test_the_guards_own_look_at_the_index_starts_no_fsmonitor(sandbox, registry, context):
    """Even were the key check to let core.fsmonitor through (as code running in a parallel
    step could set it just after the check), the guard's own git calls carry the overrides."""
    workspace = committed_repository(registry, context)  # an index, which starts the monitor
    configure(workspace, f"[core]\n\tfsmonitor = touch /workspace/{MARKER}; true\n")
    command, _ = guarded([GIT, *GIT_FIXED, "status", "--short"])
    command[command.index(SAFE_KEYS.pattern)] = ".*"  # every key passes the check

    outcome = sandbox.run(command, workspace=workspace, env=GIT_ENV)

    assert outcome.exit_code == 0, outcome.as_dict()
    assert not (workspace / MARKER).exists()


@pytest.mark.parametrize(
    ("subcommand", "args", "refused"),
    [
        ("diff", ["--ext-diff"], "--ext-diff"),
        ("diff", ["--textconv"], "--textconv"),
        ("log", ["-p", "--ext-diff"], "--ext-diff"),
        ("log", ["-p", "--textconv"], "--textconv"),
        ("log", ["-p", "-n", "--ext-diff"], "--ext-diff"),
        ("diff", ["-c", "diff.x.command=./mark.sh"], "-c"),
        ("log", ["--exec-path=/workspace"], "--exec-path=/workspace"),
        ("diff", ["--output=/workspace/out"], "--output=/workspace/out"),
        ("log", ["--show-signature"], "--show-signature"),
        ("add", ["-p"], "-p"),
        ("status", ["--ignore-submodules=none"], "--ignore-submodules=none"),
        ("init", ["--template=/workspace"], "--template=/workspace"),
    ],
)
def test_arguments_that_could_start_a_program_are_refused(
    registry, context, subcommand, args, refused
):
    workspace = committed_repository(registry, context)
    # The driver is defined where git would look for it, as by code run before.
    configure(workspace, '[diff "x"]\n\tcommand = ./mark.sh\n\ttextconv = ./mark.sh\n')
    (workspace / ".gitattributes").write_text("* diff=x\n")

    result = git(registry, context, subcommand, *args)

    assert not result.ok
    assert result.error.startswith(f"git was not run: the argument '{refused}'"), result.error
    assert not (workspace / MARKER).exists()


@pytest.mark.parametrize(
    ("subcommand", "args", "refused"),
    [
        ("diff", ["/etc/passwd", "/workspace/a.txt"], "/etc/passwd"),
        ("diff", ["../../etc/passwd", "a.txt"], "../../etc/passwd"),
        ("diff", ["--", "a.txt", "/workspace/../etc/passwd"], "/workspace/../etc/passwd"),
        ("log", ["-p", "--", "sub/../../x"], "sub/../../x"),
        ("add", ["/tmp"], "/tmp"),
        ("init", ["/tmp/elsewhere"], "/tmp/elsewhere"),
    ],
)
def test_a_path_outside_the_workspace_is_refused_even_with_no_repository(
    registry, context, subcommand, args, refused
):
    """Outside a repository `git diff a b` compares the files as `--no-index` would, an option
    refused by name: paths outside the workspace are refused whatever git would do with them."""
    assert write_file(registry, context, "a.txt", "a\n").ok

    result = git(registry, context, subcommand, *args)

    assert not result.ok
    assert result.error.startswith(
        f"git was not run: the path '{refused}' is outside the workspace"
    ), result.error


def test_a_workspace_written_to_look_like_a_bare_repository_is_not_taken_for_one(registry, context):
    for path, content in {
        "HEAD": "ref: refs/heads/main\n",
        "config": "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
        "objects/.keep": "",
        "refs/.keep": "",
    }.items():
        assert write_file(registry, context, path, content).ok

    result = git(registry, context, "log")

    assert "cannot use bare repository" in result.content["stderr"], result.content


def host_git(directory: Path, *command: str) -> None:
    subprocess.run(
        ["git", "-c", "safe.directory=*", *command], cwd=directory, env=HOST_GIT_ENV, check=True
    )


@pytest.mark.parametrize("gitmodules", ["", '[submodule "sub"]\n\tpath = sub\n\tignore = none\n'])
def test_a_nested_repositorys_own_filter_never_runs(registry, context, gitmodules):
    workspace = committed_repository(registry, context)
    if gitmodules:  # asking git to look into it whatever its defaults
        (workspace / ".gitmodules").write_text(gitmodules)
    nested = workspace / "sub"
    nested.mkdir()
    (nested / "b.txt").write_text("b\n")
    (nested / ".gitattributes").write_text("* filter=y\n")
    host_git(nested, "init", "-q")
    host_git(nested, "add", ".")
    host_git(nested, "commit", "-qm", "nested")
    host_git(workspace, "add", "sub")
    host_git(workspace, "commit", "-qm", "with a nested repository")
    # Only now the nested repository's filter, and changes for git to look at.
    with (nested / ".git" / "config").open("a") as config:
        config.write('[filter "y"]\n\tclean = /workspace/mark.sh\n')
    (nested / "b.txt").write_text("changed\n")
    os.utime(nested / "b.txt", (1, 1))

    for call in (
        lambda: git(registry, context, "status"),
        lambda: git(registry, context, "diff"),
        lambda: git(registry, context, "add", "-A"),
        lambda: commit(registry, context, all=True),
    ):
        result = call()
        assert_contained(result, workspace)
        assert "nested repository (sub)" in result.error


def test_plain_git_still_works_with_the_common_options(registry, context):
    workspace = committed_repository(registry, context)

    status = git(registry, context, "status", "--short")
    diff = git(registry, context, "diff", "--stat", "HEAD", "--", "/workspace/a.txt")
    log = git(registry, context, "log", "--oneline", "-n", "1", "--", "x/../a.txt")
    # A range's `..` is no path climbing out.
    ranged = git(registry, context, "log", "--oneline", "HEAD..HEAD~0", "--", "a.txt")

    assert status.content["stdout"] == " M a.txt\n?? mark.sh\n"
    assert "a.txt | 2 +-" in diff.content["stdout"]
    assert log.content["stdout"].endswith(" first\n")
    assert ranged.ok and ranged.content["exit_code"] == 0 and ranged.content["stdout"] == ""
    assert not (workspace / MARKER).exists()

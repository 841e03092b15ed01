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
from tools_app.builtin import GitCommitTool, GitTool
from tools_app.registry import ToolContext, ToolRegistry, ToolResult

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
def registry(tmp_path) -> ToolRegistry:
    sandbox = working_sandbox(tmp_path / "slots")
    registry = ToolRegistry()
    for tool in (GitTool(sandbox), GitCommitTool(sandbox)):
        registry.register(tool)
    return registry


@pytest.fixture
def context(tmp_path) -> ToolContext:
    return ToolContext(run_id=1, workspace=tmp_path / "workspaces" / "run-1", timeout=10.0)


def git(registry, context, subcommand, *args) -> ToolResult:
    return registry.call("git", {"subcommand": subcommand, "args": list(args)}, context)


def commit(registry, context, message="change", **more) -> ToolResult:
    return registry.call("git_commit", {"message": message, **more}, context)


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


def test_a_hook_path_of_the_workspace_runs_no_hook_on_commit(registry, context):
    workspace = committed_repository(registry, context)
    hooks = workspace / "hooks"
    hooks.mkdir()
    for name in ("pre-commit", "commit-msg", "post-commit", "post-index-change"):
        (hooks / name).write_text(PROGRAM)
        (hooks / name).chmod(0o755)
    configure(workspace, "[core]\n\thooksPath = hooks\n")

    added = git(registry, context, "add", "a.txt")
    committed = commit(registry, context)

    assert added.ok and committed.ok and committed.content["exit_code"] == 0, committed.content
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
    diff = git(registry, context, "diff", "--stat")
    log = git(registry, context, "log", "--oneline", "-n", "1", "--", "a.txt")

    assert status.content["stdout"] == " M a.txt\n?? mark.sh\n"
    assert "a.txt | 2 +-" in diff.content["stdout"]
    assert log.content["stdout"].endswith(" first\n")
    assert not (workspace / MARKER).exists()

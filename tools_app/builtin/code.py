"""The tools that run code in the run's workspace, each call inside the sandbox
(tools_app.sandbox): run_python, run_command, git and git_commit. Where the sandbox cannot run
they are still listed, their description saying why, and every call fails with that reason:
nothing here ever runs outside the sandbox."""

import shutil
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tools_app.builtin.git_policy import (
    ALLOWED,
    GIT,
    GIT_ENV,
    GIT_FIXED,
    REFUSED_EXIT,
    GitRefused,
    git_argv,
    guarded,
    refusal,
)
from tools_app.registry import (
    ApprovalLevel,
    SideEffects,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)
from tools_app.sandbox import (
    COMMAND_DIRS,
    PATH,
    WORKSPACE,
    Sandbox,
    SandboxBusy,
    SandboxCancelled,
    SandboxUnavailable,
    WorkspaceTooLarge,
)

CODE_MAX_CHARS = 100_000
ARGS_MAX = 64
RESULT_NOTE = (
    "Returns stdout, stderr, exit_code, duration_ms, cut (true when the output passed its cap "
    "and the command was stopped there) and killed (why it was ended early: 'time limit', "
    "'output limit', 'cancelled', or ''). "
)
SANDBOX_NOTE = (
    f"It runs in a sandbox: the workspace is the current directory ({WORKSPACE}), there is no "
    "network, nothing of the machine outside /usr is visible, and time, memory, processes and "
    "output are limited. "
)


class SandboxTool(Tool):
    """A tool whose calls run one command in the sandbox."""

    def __init__(self, sandbox: Sandbox, spec: ToolSpec) -> None:
        self.sandbox = sandbox
        spec = replace(spec, timeout=sandbox.limits.wall_seconds)
        reason = sandbox.unavailable_reason()
        if reason:
            spec = replace(spec, description=f"Unavailable: {reason}. {spec.description}")
        self.spec = spec

    def sandboxed(
        self,
        argv: list[str],
        context: ToolContext,
        env: dict[str, str] | None = None,
        refused: Callable[[str], str] | None = None,
    ) -> ToolResult:
        """The command's outcome as the tool's result. `refused` reads a guard's stdout: what
        it returns (when the exit code says refused) is the call's error."""
        try:
            outcome = self.sandbox.run(
                argv,
                workspace=context.workspace,
                env=env,
                # Never past what the run has left.
                limits=replace(
                    self.sandbox.limits,
                    wall_seconds=min(self.sandbox.limits.wall_seconds, context.timeout),
                ),
                cancelled=context.cancelled,
            )
        except SandboxUnavailable as exc:
            raise ToolError(f"The sandbox is unavailable, so nothing was run: {exc}") from None
        except SandboxBusy as exc:
            raise ToolError(f"Nothing was run: {exc}; try again later") from None
        except SandboxCancelled as exc:
            raise ToolError(f"Nothing was run: {exc}") from None
        except WorkspaceTooLarge as exc:
            raise ToolError(
                f"Nothing was run: {exc}; remove files the task does not need "
                "(SANDBOX_WORKSPACE_ENTRIES sets the most)"
            ) from None
        if refused is not None and outcome.exit_code == REFUSED_EXIT:
            reason = refused(outcome.stdout)
            if reason:
                raise ToolError(reason)
        content = outcome.as_dict()
        if outcome.killed in ("time limit", "cancelled"):
            return ToolResult(
                ok=False,
                content=content,
                error=f"The command was stopped ({outcome.killed}) after {outcome.duration_ms} ms",
            )
        return ToolResult(ok=True, content=content)


def _spec(name: str, description: str, schema: dict[str, Any], **rest: Any) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        input_schema={"type": "object", "additionalProperties": False, **schema},
        domain="code",
        sandboxed=True,
        **rest,
    )


ARGS_SCHEMA = {
    "type": "array",
    "items": {"type": "string", "maxLength": 4096},
    "maxItems": ARGS_MAX,
    "default": [],
}


class RunPythonTool(SandboxTool):
    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(
            sandbox,
            _spec(
                "run_python",
                "Run Python 3 code in the workspace: either `code` (a snippet) or `path` (a .py "
                "file in the workspace), with optional command-line `args`. "
                + SANDBOX_NOTE
                + RESULT_NOTE,
                {
                    "properties": {
                        "code": {"type": "string", "minLength": 1, "maxLength": CODE_MAX_CHARS},
                        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                        "args": ARGS_SCHEMA,
                    },
                    "oneOf": [{"required": ["code"]}, {"required": ["path"]}],
                },
                capabilities=frozenset({"CODE_EXECUTE"}),
                side_effects=SideEffects.CODE_EXECUTION,
                approval_level=ApprovalLevel.MANUAL,
            ),
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        args = arguments.get("args", [])
        if "code" in arguments:
            return self.sandboxed(["/usr/bin/python3", "-c", arguments["code"], *args], context)
        # The path is read inside the sandbox, where only the workspace exists.
        return self.sandboxed(["/usr/bin/python3", "--", arguments["path"], *args], context)


class RunCommandTool(SandboxTool):
    def __init__(self, sandbox: Sandbox, *, allowed: tuple[str, ...]) -> None:
        self.allowed = allowed
        names = ", ".join(allowed) or "none"
        super().__init__(
            sandbox,
            _spec(
                "run_command",
                f"Run one program in the workspace, given as argv (no shell). Allowed programs: "
                f"{names}. Run tests with ['python3', '-m', 'unittest', ...]. "
                + SANDBOX_NOTE
                + RESULT_NOTE,
                {
                    "properties": {
                        "argv": {
                            "type": "array",
                            "items": ARGS_SCHEMA["items"],
                            "minItems": 1,
                            "maxItems": ARGS_MAX,
                        },
                    },
                    "required": ["argv"],
                },
                capabilities=frozenset({"CODE_EXECUTE"}),
                side_effects=SideEffects.CODE_EXECUTION,
                approval_level=ApprovalLevel.MANUAL,
            ),
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        program, *rest = arguments["argv"]
        if program not in self.allowed:
            raise ToolError(
                f"'{program}' is not an allowed program; allowed: {', '.join(self.allowed)}"
            )
        found = shutil.which(program, path=":".join(COMMAND_DIRS))
        if found is None:
            raise ToolError(f"'{program}' is not installed on the sandbox's PATH ({PATH})")
        return self.sandboxed([found, *rest], context)


def _git_checked(tool: SandboxTool, argv: list[str], context: ToolContext) -> ToolResult:
    """git's `argv` run behind the guard that checks the repository's config (git_policy)."""
    command, token = guarded(argv)
    return tool.sandboxed(command, context, GIT_ENV, lambda stdout: refusal(stdout, token))


class GitTool(SandboxTool):
    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(
            sandbox,
            _spec(
                "git",
                "Run git in the workspace: init, status, diff, add or log, with optional "
                "arguments (e.g. ['--stat'], ['-p', '-n', '3'], ['mathx.py']). Commit with "
                "git_commit. Only common options are accepted; git never starts a program of "
                "the workspace (hooks, filters, diff drivers, pagers, aliases: a repository "
                "whose config sets one is refused). " + SANDBOX_NOTE + RESULT_NOTE,
                {
                    "properties": {
                        "subcommand": {"type": "string", "enum": list(ALLOWED)},
                        "args": ARGS_SCHEMA,
                    },
                    "required": ["subcommand"],
                },
                capabilities=frozenset({"VERSION_CONTROL"}),
                side_effects=SideEffects.WORKSPACE_WRITE,
                approval_level=ApprovalLevel.AUTO,
            ),
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Runs git as tools_app.builtin.git_policy allows: arguments off its allow-list, or a
        repository config that names a program, are a ToolError and nothing runs."""
        try:
            argv = git_argv(arguments["subcommand"], arguments.get("args", []))
        except GitRefused as exc:
            raise ToolError(f"git was not run: {exc}") from None
        return _git_checked(self, argv, context)


class GitCommitTool(SandboxTool):
    def __init__(self, sandbox: Sandbox) -> None:
        super().__init__(
            sandbox,
            _spec(
                "git_commit",
                "Commit what is staged in the workspace's git repository (stage with git add), "
                "or every tracked change with all=true, with the given message. The author is "
                "AgentDesk's agent; hooks, filters and signing programs never run (a repository "
                "whose config names one is refused). " + SANDBOX_NOTE + RESULT_NOTE,
                {
                    "properties": {
                        "message": {"type": "string", "minLength": 1, "maxLength": 10_000},
                        "all": {"type": "boolean", "default": False},
                    },
                    "required": ["message"],
                },
                capabilities=frozenset({"VERSION_CONTROL"}),
                side_effects=SideEffects.WORKSPACE_WRITE,
                approval_level=ApprovalLevel.MODERATE,
            ),
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        rest = ["--no-verify", "--no-gpg-sign", "-m", arguments["message"]]
        if arguments.get("all"):
            rest.insert(0, "--all")
        return _git_checked(self, [GIT, *GIT_FIXED, "commit", *rest], context)

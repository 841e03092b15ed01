"""What the code tools' git may run, so that it never starts a program the workspace controls.

The `git` tool is approved without a person (`auto`), and a workspace is written by the model:
a `.gitattributes` naming a filter or diff driver that the repository's `.git/config` defines
(`filter.x.clean`, `diff.x.textconv`, `diff.x.command`), `core.pager`, `core.editor`,
`core.sshCommand`, hooks, `core.fsmonitor`, `gpg.program`, aliases, includes, a nested
repository's own config, or an argument such as `--ext-diff`, `--textconv` or `--output` would
otherwise let it run code with nobody asked. Four layers, each enough for what it covers:

1. **Arguments**: per subcommand, an allow-list (`ALLOWED`); anything else starting with `-` is
   refused before the sandbox starts. Revisions and paths are free inside the workspace; a path
   outside it (absolute elsewhere, or `..` climbing out) is refused, so that `git diff` outside
   a repository cannot act as the refused `--no-index` on the sandbox's other files. After
   `--` everything is a path.
2. **Overrides** (`GIT_FIXED`, `GIT_ENV`): the keys git would use to start a program are set on
   the command line, which wins over the repository's config (hooks, fsmonitor, pager, editor,
   ssh, gpg, external diff, submodules ignored), no system or global config or attributes, no
   repository found by the workspace looking like a bare one, and `--no-ext-diff
   --no-textconv` for diff and log. Every git the guard runs has them too: reading the index
   alone starts `core.fsmonitor`.
3. **The repository's config, checked inside the same sandbox** (`GUARD`): before git runs,
   `git config --list --show-scope` (includes followed) lists every key the repository sets;
   git runs only if each is a plain setting (`SAFE_KEYS`). A key that names a program
   (`core.fsmonitor`, `core.hooksPath`, `core.pager`, `core.editor`, `core.sshCommand`,
   `diff.external`, `gpg.*`, `credential.*`, a filter or diff driver, an alias, ...) refuses
   the call, naming the key, even where an override would replace it: the overrides are one
   layer, not the only one. So does an include or any key not known to be inert. Without
   their definition in the config, drivers named in `.gitattributes` do nothing.
4. **Nested repositories** (gitlinks in the index): refused by the same check. `add -A` and
   `commit --all` run `git status` inside one, with that repository's own config, whatever
   the options; `status` and `diff` also ignore submodules (`--ignore-submodules=all`).

The config could still change between the check and git's start: the auto tools cannot do
it (write_file refuses any path through a `.git`), only code a person approved to run
(run_python, run_command) in a parallel step of the same workspace.
"""

import posixpath
import re
import secrets

from tools_app.sandbox import WORKSPACE

GIT = "/usr/bin/git"
# A program that does nothing and fails: what git is given wherever config could name one.
NOTHING = "/usr/bin/false"
GIT_FIXED = [
    *("-c", "core.hooksPath=/dev/null"),
    *("-c", "core.fsmonitor=false"),
    *("-c", "core.pager=cat"),
    *("-c", f"core.editor={NOTHING}"),
    *("-c", f"core.sshCommand={NOTHING}"),
    *("-c", "diff.external="),
    *("-c", "diff.ignoreSubmodules=all"),
    *("-c", "submodule.recurse=false"),
    *("-c", "status.submoduleSummary=false"),
    *("-c", "log.showSignature=false"),
    *("-c", "commit.gpgSign=false"),
    *("-c", "gpg.format=openpgp"),
    *("-c", f"gpg.program={NOTHING}"),
    *("-c", f"gpg.ssh.program={NOTHING}"),
    *("-c", f"gpg.x509.program={NOTHING}"),
    *("-c", "gc.auto=0"),
    *("-c", "maintenance.auto=false"),
    *("-c", "user.name=AgentDesk agent"),
    *("-c", "user.email=agent@agentdesk.invalid"),
    *("-c", "init.defaultBranch=main"),
    # The workspace is written by the model: a HEAD, config and objects/ there must not make
    # it a (bare) repository whose config the guard's check and git could read apart.
    *("-c", "safe.bareRepository=explicit"),
]
# git reads no configuration but the repository's own; the rest is fixed above.
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_EDITOR": NOTHING,
    "GIT_SEQUENCE_EDITOR": NOTHING,
    "GIT_SSH_COMMAND": NOTHING,
    "GIT_ASKPASS": NOTHING,
    "GIT_OPTIONAL_LOCKS": "0",
}
# Keys of the repository's config that name no program (section and name lower-cased, as git
# lists them). Anything else refuses the call, a key GIT_FIXED replaces too.
SAFE_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase"
    r"|precomposeunicode|symlinks|autocrlf|eol|safecrlf|quotepath|checkstat|trustctime"
    r"|abbrev)"
    r"|(user|author|committer)\.(name|email)"
    r"|init\.defaultbranch|extensions\.objectformat|i18n\.(commitencoding|logoutputencoding)"
    r"|branch\.[^\n]*\.(remote|merge|rebase|description)|remote\.[^\n]*\.(url|pushurl|fetch)"
    r"|color\.[^\n]*"
    r"|diff\.(renames|algorithm|mnemonicprefix|noprefix|context|indentheuristic"
    r"|ignoresubmodules)"
    r"|status\.(showuntrackedfiles|short|branch|relativepaths|renames|submodulesummary)"
    r"|log\.(date|decorate|abbrevcommit|showroot|showsignature)"
    r"|commit\.gpgsign|gc\.auto|maintenance\.auto|submodule\.recurse"
)
# Options each subcommand accepts (a full match); VALUED take the next argument as their value,
# which must match the pattern given.
_DIFF_OPTIONS = (
    r"-p|--patch|-s|--no-patch|--stat(=\d{1,4}(,\d{1,4})?)?|--numstat|--shortstat|--summary"
    r"|--name-only|--name-status|-U\d{1,4}|--unified=\d{1,4}|-w|--ignore-all-space"
    r"|-b|--ignore-space-change|--word-diff|--minimal|--patience|--histogram"
    r"|-M|--find-renames|--no-renames|--no-color|--color=never|--raw|--abbrev(=\d{1,2})?"
)
ALLOWED = {
    "init": re.compile(r"-q|--quiet|--initial-branch=[\w./-]{1,100}"),
    "status": re.compile(
        r"-s|--short|-b|--branch|--long|--porcelain(=v[12])?|-z|--ignored|--no-renames"
        r"|-u(no|normal|all)?|--untracked-files(=(no|normal|all))?|-v|--verbose"
    ),
    "diff": re.compile(rf"{_DIFF_OPTIONS}|--cached|--staged|--exit-code|--quiet"),
    "add": re.compile(
        r"-A|--all|--no-all|-u|--update|-v|--verbose|-n|--dry-run|-f|--force"
        r"|-N|--intent-to-add|--ignore-removal|--ignore-errors"
    ),
    "log": re.compile(
        rf"{_DIFF_OPTIONS}|-n\d{{1,6}}|-\d{{1,6}}|--max-count=\d{{1,6}}|--skip=\d{{1,6}}"
        r"|--oneline|--graph|--decorate|--no-decorate|--reverse|--all|--first-parent"
        r"|--merges|--no-merges|--follow|--abbrev-commit|--no-abbrev-commit"
        r"|--(format|pretty)=[^\n]{0,500}|--(author|committer|grep)=[^\n]{1,500}"
        r"|--(since|until|after|before)=[\w :.+-]{1,100}"
        r"|--date=(relative|local|iso|iso-strict|rfc|short|raw|human|unix|default)"
    ),
}
VALUED = {"log": {"-n": re.compile(r"\d{1,6}")}}
# status and diff would otherwise run `git status` inside a nested repository.
SUBCOMMAND_FIXED = {
    "status": ["--ignore-submodules=all"],
    "diff": ["--no-ext-diff", "--no-textconv", "--ignore-submodules=all"],
    "log": ["--no-ext-diff", "--no-textconv"],
}
REFUSED_EXIT = 125

# Run by the sandbox's python3 (-I: neither the workspace nor the environment on sys.path):
# argv is the token, the pattern of safe keys, then git's argv, which starts with GIT and
# GIT_FIXED. It lists the repository's config and the index's gitlinks, each git with those
# same overrides and GIT_ENV (reading the index starts core.fsmonitor); if a key is not safe or
# a gitlink is there, it prints the token and what it found and exits, else it becomes git.
GUARD = """
import os, re, subprocess, sys
token, safe, *git = sys.argv[1:]
os.environ.update(GIT_ENV)
fixed = git[:FIXED_COUNT]
listed = subprocess.run(
    [*fixed, "config", "--list", "-z", "--show-scope"],
    stdin=subprocess.DEVNULL, capture_output=True,
)
if listed.returncode != 0:
    print(token, "!", listed.stderr.decode(errors="replace").strip()[:500])
    sys.exit(REFUSED_EXIT)
fields = listed.stdout.decode(errors="replace").split("\\0")
keys = [
    entry.split("\\n", 1)[0]
    for scope, entry in zip(fields[0::2], fields[1::2])
    if scope != "command"
]
bad = [key for key in keys if not re.fullmatch(safe, key)]
if bad:
    print(token, " ".join(sorted(set(bad))[:10]))
    sys.exit(REFUSED_EXIT)
staged = subprocess.run(
    [*fixed, "ls-files", "--stage", "-z"], stdin=subprocess.DEVNULL, capture_output=True
)
nested = [
    entry.split("\\t", 1)[-1]
    for entry in staged.stdout.decode(errors="replace").split("\\0")
    if entry.startswith("160000 ")
]
if nested:
    print(token, "@", " ".join(nested[:5]))
    sys.exit(REFUSED_EXIT)
os.execv(git[0], git)
"""
for name, value in {
    "REFUSED_EXIT": REFUSED_EXIT,
    "FIXED_COUNT": 1 + len(GIT_FIXED),
    "GIT_ENV": repr(GIT_ENV),
}.items():
    GUARD = GUARD.replace(name, str(value))


class GitRefused(Exception):
    """The call would let git run something the workspace controls; nothing was run."""


def git_argv(subcommand: str, rest: list[str]) -> list[str]:
    """git's argv for `subcommand` with the model's `rest`, checked against ALLOWED. Raises
    GitRefused naming the first argument that is not allowed or a path outside the workspace."""
    allowed, valued = ALLOWED.get(subcommand), VALUED.get(subcommand, {})
    if allowed is None:
        raise GitRefused(f"git {subcommand} is not offered")
    value: re.Pattern | None = None
    paths = False
    for argument in rest:
        if value is not None:
            if not value.fullmatch(argument):
                raise GitRefused(f"the argument '{argument}' is not a value git {subcommand} takes")
            value = None
        elif paths or not argument.startswith("-"):
            _inside_workspace(subcommand, argument)
        elif argument == "--":
            paths = True
        elif argument in valued:
            value = valued[argument]
        elif not allowed.fullmatch(argument):
            raise GitRefused(
                f"the argument '{argument}' is not allowed for git {subcommand} "
                "(options that could start a program, write elsewhere or read other "
                "configuration are refused)"
            )
    return [GIT, *GIT_FIXED, subcommand, *SUBCOMMAND_FIXED.get(subcommand, []), *rest]


def _inside_workspace(subcommand: str, argument: str) -> None:
    """Raise GitRefused when `argument`, read as a path from the workspace (git's current
    directory), names something outside it. A revision such as `HEAD~2..HEAD` stays inside."""
    where = posixpath.normpath(posixpath.join(WORKSPACE, argument))
    if where != WORKSPACE and not where.startswith(f"{WORKSPACE}/"):
        raise GitRefused(
            f"the path '{argument}' is outside the workspace ({WORKSPACE}); git {subcommand} "
            "takes paths inside it only"
        )


def guarded(argv: list[str]) -> tuple[list[str], str]:
    """`argv` (git's, starting with GIT and GIT_FIXED, whose overrides GUARD's own git calls
    take from it) wrapped in GUARD, and the token a refusal starts with."""
    if argv[: 1 + len(GIT_FIXED)] != [GIT, *GIT_FIXED]:
        raise ValueError("git's argv must start with GIT and GIT_FIXED")
    token = secrets.token_hex(16)
    return ["/usr/bin/python3", "-I", "-S", "-c", GUARD, token, SAFE_KEYS.pattern, *argv], token


def refusal(stdout: str, token: str) -> str:
    """Why GUARD refused (from its output), or "" when git ran."""
    first = stdout.split("\n", 1)[0]
    if not first.startswith(f"{token} "):
        return ""
    said = first[len(token) + 1 :]
    if said.startswith("! "):
        return f"git was not run: its configuration could not be read: {said[2:]}"
    if said.startswith("@ "):
        return (
            f"git was not run: the repository holds a nested repository ({said[2:]}), inside "
            "which git would run with that repository's own config; remove it from the index "
            "(git rm --cached, by a person) or keep nested repositories out of the workspace"
        )
    return (
        f"git was not run: the repository's config sets {said}, which git could use to start "
        "a program of the workspace; only plain settings are allowed (remove those keys from "
        ".git/config, which write_file does not write: a person approves code that does)"
    )

"""Secrets in MCP server configurations: spotting a literal one, and hiding substituted ones.

A server's row holds `${NAME}` references, never a secret (`literal_secret_problem`,
`arg_problems`); the values substituted for them at connect time are hidden (`redact`) from
everything AgentDesk stores, logs or shows about the server: its error text, the tail of its
stderr, the results of its tools. The redaction is `agents_app.core.secrecy`'s, AgentDesk's one
redaction point, re-exported here.
"""

import math
import re
from collections import Counter
from urllib.parse import parse_qsl, urlsplit

# The redaction itself is AgentDesk's one redaction point, shared with the worker and engine.
from agents_app.core.secrecy import (  # noqa: F401 (re-exported for tools_app and migrations)
    KNOWN_TOKENS,
    REDACT_MIN_CHARS,
    REDACTED,
    SECRET_NAME_PARTS,
    SECRET_NAME_WORDS,
    looks_secret,
    name_parts,
    redact,
    redact_all,
)

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# A command-line option is a secret's when its last part is one of these (--api-key, --token,
# --client-secret, --db-password; not --token-file or --no-auth).
SECRET_OPTION_ENDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pass", "pwd", "pat", "auth"}
    | {"credential", "credentials"}
)
# What may stand before the reference in a secret value: one scheme word ("Bearer ${TOKEN}").
SCHEME_PREFIX = re.compile(r"[A-Za-z]+ ")

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
# A run of characters a random token is made of ('/' and '.' end it, so paths do not count).
TOKEN_RUN = re.compile(r"[A-Za-z0-9+=_-]{20,}")
HEX_RUN = re.compile(r"[0-9a-fA-F]{32,}")
# Bits per character above which a run of 20 or more looks random rather than written; words
# and identifiers (MY_APPLICATION_SETTING_1, a UUID) stay below it.
ENTROPY_BITS = 4.0


def is_reference(value: str) -> bool:
    """Whether `value` is only references, optionally after a scheme word ("Bearer ${T}")."""
    literal = REFERENCE.sub("", value)
    return literal == "" or (
        value.startswith(literal)
        and literal != value
        and SCHEME_PREFIX.fullmatch(literal) is not None
    )


def entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_random(text: str) -> bool:
    """Whether `text` holds a run that looks like a generated token rather than a word."""
    for run in TOKEN_RUN.findall(text):
        kinds = sum(bool(re.search(p, run)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
        if kinds >= 2 and entropy(run) >= ENTROPY_BITS:
            return True
    return any(
        re.search("[0-9]", run) and re.search("[a-fA-F]", run) for run in HEX_RUN.findall(text)
    )


def url_problem(url: str) -> str:
    """Why a URL (its references already removed) carries a secret, or ""."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    userinfo = parts.netloc.rpartition("@")[0]
    user, has_password, password = userinfo.partition(":")
    if has_password and password:
        return f"the URL {parts.scheme}://{user}:…@{parts.hostname or ''} carries a password"
    if user and (looks_random(user) or KNOWN_TOKENS.search(user)):
        return f"the URL {parts.scheme}://…@{parts.hostname or ''} carries a token as its user"
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and looks_secret(name):
            return f"the URL's query parameter '{name}' carries a secret"
    return ""


def literal_secret_problem(value: str, *, random_strings: bool = True) -> str:
    """Why `value` holds a literal secret whatever its name — a URL with a password or a token
    in its user or query, a token of a known shape, or (with `random_strings`) a string that
    looks generated — or "". References are not secrets and are ignored."""
    literal = REFERENCE.sub("", value)
    for url in URL.findall(literal):
        if problem := url_problem(url):
            return problem
    if KNOWN_TOKENS.search(literal):
        return "it holds what looks like an API token or private key"
    if random_strings and looks_random(literal):
        return "it holds what looks like a generated secret (a long random string)"
    return ""


def option_name(arg: str) -> str:
    """The option an argument names ("--api-key" and "--api-key=x" → "api-key"), or ""."""
    if not arg.startswith("-") or arg.startswith("---") or len(arg) < 2:
        return ""
    return arg.lstrip("-").partition("=")[0]


def secret_option(arg: str) -> bool:
    parts = name_parts(option_name(arg))
    return bool(parts) and parts[0] != "no" and parts[-1] in SECRET_OPTION_ENDS


# A variable named like a secret but holding where it is (TOKEN_FILE, KEY_PATH) is not one.
LOCATION_PARTS = frozenset({"file", "path", "dir", "url"})


def secret_variable(name: str) -> bool:
    """Whether the variable `name` holds a secret (by its name), not the place of one."""
    parts = name_parts(name)
    return looks_secret(name) and not (parts and parts[-1] in LOCATION_PARTS)


def secret_arg_references(args: list[str]) -> list[tuple[int, str]]:
    """(index, variable) for each reference in `args` to a secret: a variable named like one,
    or the value of a secret's option (`--api-key ${X}`, `--token=${X}`). A process's
    arguments are readable by anyone on the machine (ps, /proc/<pid>/cmdline), so such a value
    must reach the server through its environment instead."""
    found = []
    for index, arg in enumerate(args):
        after_option = index > 0 and "=" not in args[index - 1] and secret_option(args[index - 1])
        own_option = bool(option_name(arg)) and "=" in arg and secret_option(arg)
        for name in REFERENCE.findall(arg):
            if after_option or own_option or secret_variable(name):
                found.append((index, name))
    return found


def secret_args_message(references: list[tuple[int, str]]) -> str:
    """Why secrets may not be passed in args, and what to write instead."""
    shown = ", ".join(f"args[{index}] ${{{name}}}" for index, name in references)
    name = references[0][1]
    return (
        f"pass a secret on the command line ({shown}), where anyone on the machine can read it "
        f'(ps); put it in env instead, e.g. "{name}": "${{{name}}}", for the server to read '
        "from its environment"
    )


def arg_problems(args: list[str]) -> list[str]:
    """Why each argument that holds a literal secret is refused: the value of a secret's option
    (`--api-key VALUE`, `--token=VALUE`), or a URL or token of a known shape anywhere."""
    problems = []
    option_value = False  # this argument is the value of the secret option before it
    for index, arg in enumerate(args):
        if option_value:
            option_value = False
            continue
        name, value = option_name(arg), arg
        if name and "=" in arg:
            value = arg.partition("=")[2]
        if secret_option(arg):
            if "=" not in arg and index + 1 < len(args) and not args[index + 1].startswith("-"):
                value, option_value = args[index + 1], True
            if value != arg and value and not is_reference(value):
                problems.append(f"the value of --{name} looks like a secret")
                continue
        if problem := literal_secret_problem(value, random_strings=False):
            # Named by position or option, never quoted: the message must not repeat the secret.
            problems.append(f"{f'--{name}' if name else f'args[{index}]'}: {problem}")
    return problems

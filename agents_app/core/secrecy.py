"""The one redaction point: every text that comes from outside AgentDesk (a model server's
errors and words, an MCP server's stderr and results, a tool's error, an HTTP body) passes
through `redact` before it is stored, logged, published or answered.

What is hidden, as "[redacted]":
- each secret this process knows (`known_secrets`): the values `secret_register` was given
  (an LLM connection's key when a worker builds its provider, the values substituted into an
  MCP server's configuration), the values of this process's environment variables whose names
  say they hold one (OPENAI_API_KEY, DB_PASSWORD, GH_PAT...), and any `secrets` the caller
  passes; each in its common encodings (`encodings`): as is in any letter case, URL-encoded,
  hex, and base64 (standard and URL-safe, with or without padding) at each of the 3 byte
  alignments it can have inside a longer base64 text, so "Bearer <key>", "user:<key>" (HTTP
  basic auth) and a key inside a base64 JSON blob are caught, not only the key encoded alone;
- tokens whose shape gives them away whatever their name (`KNOWN_TOKENS`: GitHub, GitLab,
  OpenAI, Stripe, Slack, AWS and Google keys, PEM private keys).

Text streamed in pieces (a model's tokens) goes through a `StreamRedactor`, which holds back
the end of each piece that could be the start of a secret (or of a token of a known shape)
until the next piece shows whether it is.

Plain Python (no Django): the engine and tools_app use it too.
"""

import base64
import logging
import os
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
# Shorter values (a port, a flag) are left in place: hiding every "1" would hide the text, not
# a secret.
REDACT_MIN_CHARS = 4
# An environment variable's value is taken for a secret from this length on (a name like
# SSH_AUTH_SOCK or USE_TOKEN_CACHE=yes says little about a short value).
ENV_SECRET_MIN_CHARS = 8

# Tokens whose shape gives them away, whatever their name.
KNOWN_TOKENS = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|sk_live_[A-Za-z0-9]{16,}|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|-----BEGIN [A-Z ]*PRIVATE KEY-----)"
)

# A name is a secret's when it contains one of these...
SECRET_NAME_WORDS = ("key", "token", "secret", "password", "passwd", "auth", "credential", "cookie")
# ...or has one of these as a whole part (DB_PASS, GH_PAT, SENTRY_DSN; not PATH or PASSTHROUGH).
SECRET_NAME_PARTS = frozenset({"pass", "pwd", "pat", "dsn", "jwt", "sas", "otp", "pin"})

_registered: set[str] = set()
_registered_lock = threading.Lock()


def name_parts(name: str) -> list[str]:
    """`name` split at separators and camelCase, lower-cased: "ghPAT_token" → gh, pat, token."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [part.lower() for part in re.split(r"[^A-Za-z0-9]+", spaced) if part]


@lru_cache(maxsize=1024)
def looks_secret(name: str) -> bool:
    """Whether an env variable, header or query parameter of this name holds a secret."""
    lowered = name.lower()
    return any(word in lowered for word in SECRET_NAME_WORDS) or any(
        part in SECRET_NAME_PARTS for part in name_parts(name)
    )


def secret_register(*values: str | None) -> None:
    """Remember `values` as secrets this process must never let out (from now on, for every
    `redact` of this process)."""
    fresh = {v for v in values if v and len(v) >= REDACT_MIN_CHARS}
    if fresh - _registered:
        with _registered_lock:
            _registered.update(fresh)


_environment: tuple[int, frozenset[str]] = (0, frozenset())


def environment_secrets() -> frozenset[str]:
    """The values of this process's environment variables named like secrets (not paths).
    Worked out again only when the environment changed: `redact` asks on every write of a
    run (a dozen times a step), and decoding every variable each time cost more than the
    writes' SQL."""
    global _environment
    # os.environ keeps its variables as bytes in `_data`; their hashes are kept with them.
    fingerprint = hash(frozenset(getattr(os.environ, "_data", os.environ).items()))
    seen, secrets = _environment
    if seen != fingerprint or not seen:
        secrets = frozenset(
            value
            for name, value in os.environ.items()
            if len(value) >= ENV_SECRET_MIN_CHARS
            and not value.startswith("/")
            and looks_secret(name)
        )
        _environment = (fingerprint, secrets)
    return secrets


def known_secrets(extra: Iterable[str] = ()) -> frozenset[str]:
    """Every secret `redact` hides in this process, with `extra`."""
    with _registered_lock:
        registered = frozenset(_registered)
    return (
        registered
        | environment_secrets()
        | {s for s in extra if s and isinstance(s, str) and len(s) >= REDACT_MIN_CHARS}
    )


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters that depend only on `raw`, at each of the 3 alignments `raw` can
    have inside a longer encoded text (1 or 2 characters at each end are shared with the bytes
    around it, so they cannot be known): standard and URL-safe."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw + b"\0\0").decode()
        first = -(-8 * offset // 6)  # the first character made of `raw` bits only
        last = (8 * (offset + len(raw))) // 6  # one past the last such character
        core = encoded[first:last]
        if len(core) >= REDACT_MIN_CHARS:
            cores.add(core)
            cores.add(core.translate(str.maketrans("+/", "-_")))
    return cores


def encodings(secret: str) -> tuple[set[str], set[str]]:
    """(forms matched in any letter case, forms matched exactly) of one secret: itself,
    URL-encoded and hex in any case; base64 as is."""
    raw = secret.encode("utf-8", "surrogatepass")
    any_case = {secret, quote(secret, safe=""), quote_plus(secret, safe=""), raw.hex()}
    exact = _base64_cores(raw)
    # A secret encoded alone, padding and all, goes whole (not only its core).
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        padded = encode(raw).decode()
        exact.update({padded, padded.rstrip("=")})
    return {f for f in any_case if len(f) >= REDACT_MIN_CHARS}, exact


@lru_cache(maxsize=32)
def _pattern(secrets: frozenset[str]) -> re.Pattern[str]:
    any_case: set[str] = set()
    exact: set[str] = set()
    for secret in secrets:
        folded, kept = encodings(secret)
        any_case |= folded
        exact |= kept
    # Longest first, so a secret inside a longer one does not leave the longer one's rest.
    alternatives = sorted(
        [(f, True) for f in any_case] + [(f, False) for f in exact - any_case],
        key=lambda item: len(item[0]),
        reverse=True,
    )
    parts = [f"(?i:{re.escape(f)})" if fold else re.escape(f) for f, fold in alternatives]
    parts.append(KNOWN_TOKENS.pattern)
    return re.compile("|".join(parts))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every secret this process knows and every `secrets`, in each of its common
    encodings, and every token of a known shape, replaced by "[redacted]"."""
    if not text or not isinstance(text, str):
        return text
    return _pattern(known_secrets(secrets)).sub(REDACTED, text)


def redact_all(value: Any, secrets: Iterable[str] = ()) -> Any:
    """Every string inside `value` (dicts, lists, tuples) redacted; other values as they are."""
    pattern = _pattern(known_secrets(secrets))
    return redact_with(pattern, value)


def redaction() -> re.Pattern[str]:
    """What `redact` replaces, as one pattern, for a caller that redacts many texts at once:
    `redaction().sub(REDACTED, text)` is `redact(text)`."""
    return _pattern(known_secrets())


def redact_with(pattern: re.Pattern[str], value: Any) -> Any:
    """redact_all with the pattern given (`redaction`)."""
    if isinstance(value, str):
        return pattern.sub(REDACTED, value) if value else value
    if isinstance(value, dict):
        return {redact_with(pattern, k): redact_with(pattern, v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_with(pattern, item) for item in value)
    return value


# How a token of a known shape begins (KNOWN_TOKENS): a streamed text ending in one, or in the
# start of one, is held back until it is seen whole.
TOKEN_STARTS = (
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "sk-", "sk_live_",
    "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "AKIA", "AIza",
)  # fmt: skip
TOKEN_TAIL = re.compile(
    "(?:" + "|".join(re.escape(start) for start in TOKEN_STARTS) + r")[A-Za-z0-9_-]*\Z"
)
# The most a token of a known shape is held back for (a redactor's memory is bounded).
TOKEN_HOLD_MAX = 512


@lru_cache(maxsize=32)
def _prefixes(secrets: frozenset[str]) -> tuple[frozenset[str], frozenset[str], int]:
    """(proper prefixes matched exactly, proper prefixes matched lower-cased, the longest)
    of every form of `secrets` and every start of a known token."""
    exact, folded = set(), set()
    for secret in secrets:
        any_case, kept = encodings(secret)
        for form in any_case:
            folded.update(form.lower()[:k] for k in range(1, len(form)))
        for form in kept:
            exact.update(form[:k] for k in range(1, len(form)))
    for start in TOKEN_STARTS:
        exact.update(start[:k] for k in range(1, len(start)))
    longest = max((len(p) for p in exact | folded), default=0)
    return frozenset(exact), frozenset(folded), longest


class StreamRedactor:
    """Redacts a text that arrives in pieces: `feed` a piece, get what can be let out now;
    `finish` at the end for the rest. The end of what was fed that could be the start of a
    secret (in any of its forms) or of a token of a known shape is held back until the next
    piece says whether it is, so a secret split across two pieces is caught as if it came
    whole; everything else goes at once."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        known = known_secrets(secrets)
        self._pattern = _pattern(known)
        self._exact, self._folded, self._longest = _prefixes(known)
        self._pending = ""

    def feed(self, piece: str) -> str:
        text = self._pending + piece
        cut = self._held_from(text, 0)
        # A secret seen whole goes whole, even when an end held back starts inside it.
        for match in self._pattern.finditer(text):
            if match.start() < cut < match.end():
                cut = self._held_from(text, match.end())
        self._pending = text[cut:]
        return self._pattern.sub(REDACTED, text[:cut])

    def finish(self) -> str:
        rest, self._pending = self._pending, ""
        return self._pattern.sub(REDACTED, rest)

    def _held_from(self, text: str, first: int) -> int:
        """Where the end that may still grow into a secret begins, from `first` on (len(text):
        nothing held)."""
        end = len(text)
        for start in range(max(first, end - self._longest), end):
            tail = text[start:]
            if tail in self._exact or tail.lower() in self._folded:
                end = start
                break
        token = TOKEN_TAIL.search(text, first)
        if token is not None and len(text) - token.start() <= TOKEN_HOLD_MAX:
            end = min(end, token.start())
        return end


class RedactingFilter(logging.Filter):
    """A logging filter (on a handler) that redacts each record's message, arguments included,
    so no log line carries a secret whichever logger wrote it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is logging's to report, not ours
            return True
        redacted = redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.msg, record.args = redacted, None
        return True

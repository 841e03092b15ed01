"""What the files a task writes must hold, as the task names it, and answers that are no
answer: both checked before a run may succeed (runs.evidence).

What a file must hold is read from the task's structure, not from a model: quoted text
("Create notes.md containing 'buy milk'"), content named by the word that names it ("the word
banana", "the number 42"), a number alone ("Put 42 in answer.json"), the file's own name
("Write hello to hello.txt") and counts ("with 3 bullet points"). What is only described ("a
greeting", "the answer", "a summary of report.pdf") is left to the verifier. A file holds a
text when the text stands in it as whole words, ignoring case and spacing, so correct work
with more around it ("Hello, World!" for hello) is never refused."""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from agents_app.engine.evidence import (
    DETERMINERS,
    FINISH_TOOL,
    NEGATIONS,
    READ_VERBS,
    SOURCE_WORDS,
    TARGET_WORDS,
    URL,
    WRITE_VERBS,
    CallRecord,
    files_to_write,
)

# Words after which the rest of the sentence is what the file holds ("containing 'x'").
_CONTENT_MARKERS = frozenset(
    ["with", "containing", "contains", "contain", "saying", "says", "reading", "holding", "holds"]
)
# Words that name the literal after them ("the word banana", "the number 42").
_NAMING_WORDS = frozenset(["word", "words", "number", "text", "string", "phrase"])
_COUNT_WORDS = {
    word: n
    for n, word in enumerate(
        [
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ],
        start=1,
    )
}
# Units a file's lines can be counted in: a list's items, or its lines.
_LIST_UNITS = frozenset(["bullet", "bullets", "item", "items", "entry", "entries"])
_LINE_UNITS = frozenset(["line", "lines"])

_FILE = r"(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,9}"
# Quoted text, each pair of quotes: ASCII, typographic, guillemets, corner brackets (a
# typographic single quote is made ASCII first); an apostrophe inside a word opens none.
_QUOTES = "|".join(
    rf"{opening}(?P<q{i}>[^{closing}\n]+){closing}{after}"
    for i, (opening, closing, after) in enumerate(
        [("(?<!\\w)'", "'", "(?!\\w)"), ('"', '"', ""), ("`", "`", ""),
         ("\u201c", "\u201d", ""), ("\u00ab", "\u00bb", ""), ("\u201e", "\u201c", ""),
         ("\u300c", "\u300d", "")]
    )
)  # fmt: skip
_CONTENT_TOKEN = re.compile(
    rf"(?P<quote>{_QUOTES})"
    rf"|(?P<file>(?<![\w/.~-]){_FILE}(?![\w/]))"
    r"|(?P<number>(?<![\w.])\d+(?:[.,]\d+)*(?![\w]))"
    r"|(?P<word>[^\W\d_][\w'-]*)"
    r"|(?P<end>[.!?;:](?=\s|$)|\n)"
    r"|(?P<comma>,)"
)
_BULLET = re.compile(r"^(?P<indent>\s*)(?:[-*+\u2022\u2013]|\d+[.)])\s+\S")


@dataclass(frozen=True)
class ContentRule:
    """What one of `files` (the files its sentence writes) must hold: `text`, or `count`
    items of a list (`unit` "items") or lines (`unit` "lines"); `said` is how the task put it."""

    files: tuple[str, ...]
    said: str
    text: str = ""
    count: int = 0
    unit: str = ""

    def holds(self, content: str) -> bool:
        if self.count:
            return _count(content, self.unit) == self.count
        return _contains(content, self.text)

    def found(self, content: str) -> str:
        """What the file holds instead, as a person reads it in the failure."""
        if self.count:
            return f"{_count(content, self.unit)} {self.unit}"
        text = " ".join(content.split())
        return f"“{text[:80]}{'…' if len(text) > 80 else ''}”" if text else "nothing"


@dataclass(frozen=True)
class _Token:
    kind: str  # quote | file | number | word | end | comma
    text: str


def content_rules(task_text: str) -> list[ContentRule]:
    """What the files `task_text` asks to write must hold, as the task names it."""
    text = URL.sub(" ", task_text.replace("\u2019", "'").replace("\u2018", "'"))
    rules: list[ContentRule] = []
    sentence: list[_Token] = []
    start = 0
    for match in _CONTENT_TOKEN.finditer(text + "\n"):
        if match.group("quote"):
            # The text between the quotes, whichever pair matched; a quoted file is a file.
            inner = next(v for k, v in match.groupdict().items() if k[1:].isdigit() and v)
            token = _Token("file" if re.fullmatch(_FILE, inner) else "quote", inner)
        else:
            token = _Token(match.lastgroup or "", match.group(0))
        if token.kind != "end":
            sentence.append(token)
            continue
        written = tuple(files_to_write(text[start : match.end()]))
        if written:
            rules.extend(rule for rule in _rules_in(sentence, written) if rule not in rules)
        sentence, start = [], match.end()
    return rules


def _rules_in(tokens: list[_Token], written: tuple[str, ...]) -> list[ContentRule]:
    """The spans after a write verb or a content marker, each up to the next file, verb,
    target ("to", "in" …) or source ("of", "from" …) word, read as content."""
    rules: list[ContentRule] = []
    span: list[_Token] | None = None
    previous = ""
    for position, token in enumerate(tokens):
        word = token.text.lower() if token.kind == "word" else ""
        closes = token.kind == "file" or word in TARGET_WORDS or word in SOURCE_WORDS
        opens_verb = (word in WRITE_VERBS or word in READ_VERBS) and previous not in DETERMINERS
        if span is not None and (closes or opens_verb or word in _CONTENT_MARKERS):
            following = tokens[position + 1] if position + 1 < len(tokens) else None
            # "the first 10 lines of a.txt": what is made from a file is not named here.
            from_file = word in SOURCE_WORDS and following is not None and following.kind == "file"
            if not from_file:
                # A number or a word alone is content only where the writing goes next
                # ("Put 42 in answer.json"), not before another verb ("Write 2 copies …").
                rules.extend(_read_span(span, written, bare=not opens_verb))
            span = None
        if opens_verb:
            span = [] if word in WRITE_VERBS and previous not in NEGATIONS else None
        elif word in _CONTENT_MARKERS:
            span = []
        elif span is not None and token.kind != "comma":
            span.append(token)
        if word:
            previous = word
    if span is not None:
        rules.extend(_read_span(span, written, bare=True))
    return rules


def _read_span(span: list[_Token], written: tuple[str, ...], *, bare: bool) -> list[ContentRule]:
    rules = [ContentRule(written, f"“{t.text}”", text=t.text) for t in span if t.kind == "quote"]
    if rules:
        return rules
    words = [t.text for t in span]
    lowered = [w.lower() for w in words]
    for i, word in enumerate(lowered):
        count = int(word) if word.isdigit() else _COUNT_WORDS.get(word, 0)
        # "3 bullet points", "three short lines": the unit within the next three words.
        for j in range(i + 1, min(i + 4, len(lowered))):
            if count and lowered[j] in _LIST_UNITS | _LINE_UNITS:
                unit = "lines" if lowered[j] in _LINE_UNITS else "items"
                said = " ".join(words[i : j + 1 + (lowered[j + 1 : j + 2] == ["points"])])
                return [ContentRule(written, said, count=count, unit=unit)]
    body = lowered[1:] if lowered and lowered[0] in DETERMINERS else lowered
    for i, word in enumerate(body[:-1]):
        if word in _NAMING_WORDS and i <= 1:
            literal = " ".join(words[len(words) - len(body) + i + 1 :])
            return [ContentRule(written, " ".join(words), text=literal)]
    if not bare or len(span) != 1:
        return []
    if span[0].kind == "number":
        return [ContentRule(written, span[0].text, text=span[0].text)]
    stems = {name.rsplit("/", 1)[-1].split(".", 1)[0].lower() for name in written}
    if span[0].kind == "word" and lowered[0] in stems:
        return [ContentRule(written, span[0].text, text=span[0].text)]
    return []


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


def _contains(content: str, text: str) -> bool:
    """Whether `text` stands in `content` as whole words, ignoring case and spacing."""
    wanted = _normal(text)
    return bool(wanted) and re.search(rf"(?<!\w){re.escape(wanted)}(?!\w)", _normal(content))


def _count(content: str, unit: str) -> int:
    """A file's items (its bulleted or numbered lines at their outermost level, else its
    lines) or its lines, blank lines aside."""
    lines = [line for line in content.splitlines() if line.strip()]
    if unit == "items":
        bullets = [m for m in map(_BULLET.match, lines) if m]
        if bullets:
            outer = min(len(m.group("indent")) for m in bullets)
            return sum(len(m.group("indent")) == outer for m in bullets)
    return len(lines)


def content_problem(task_text: str, read: Callable[[str], str | None]) -> str:
    """Why the files `task_text` writes do not hold what it names, or "". `read` gives a
    file's text, None when it is not there (the files check says so)."""
    for rule in content_rules(task_text):
        held = {name: read(name) for name in rule.files}
        present = {name: text for name, text in held.items() if text is not None}
        if not present or any(rule.holds(text) for text in present.values()):
            continue
        name, text = next(iter(present.items()))
        names = " or ".join(present)
        return f"the task asks for {names} to hold {rule.said}, but it holds {rule.found(text)}"
    return ""


# --- answers that are no answer -----------------------------------------------------------

# How programs and tools write an error, whatever the person's language: "Error: …",
# "Traceback (most recent call last)", "FileNotFoundError: …".
_ERROR = re.compile(
    r"^\W{0,3}(?:(?i:error|exception|traceback|fatal)|[A-Za-z]+(?:Error|Exception))\b\s*[:(]"
)
_CALL_TEXT = re.compile(r"^\W{0,3}(?P<name>[\w.-]+)\s*(?::|\()\s*[\[{]")
_CALL_KEYS = ({"name", "arguments"}, {"name", "parameters"}, {"tool_calls"}, {"function_call"})


def answer_problem(answer: str, calls: list[CallRecord]) -> str:
    """Why `answer` is no answer, or "": it is an error message (as programs write one, or a
    failed call's own error) or a tool call written out (a tool's name and its arguments or
    result, or a call as JSON)."""
    text = answer.strip()
    shown = f"“{' '.join(text.split())[:80]}{'…' if len(text) > 80 else ''}”"
    failed = [c.result for c in calls if not c.ok and len(c.result.strip()) >= 12]
    if _ERROR.match(text) or any(_normal(error) in _normal(text) for error in failed):
        return f"the answer is an error message, not an answer: {shown}"
    called = {call.tool for call in calls} | {FINISH_TOOL}
    found = _CALL_TEXT.match(text)
    if (found and found.group("name") in called) or _is_call_json(text):
        return f"the answer is a raw tool call, not an answer: {shown}"
    return ""


def _is_call_json(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and any(keys <= value.keys() for keys in _CALL_KEYS)

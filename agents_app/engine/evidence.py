"""What a run can show for itself: its tool calls as the verifier sees them, and the files its
task asks to write (which must then be in the workspace for the run to succeed)."""

import re
from dataclasses import dataclass
from typing import Any

FINISH_TOOL = "finish_task"


@dataclass(frozen=True)
class CallRecord:
    """One tool call of the run, numbered across the run (1, 2, …) in the order it was made.
    `step_index` is its step's index in the plan being verified, None for an earlier plan's."""

    number: int
    step_index: int | None
    tool: str
    arguments: dict[str, Any]
    ok: bool
    result: str  # the result as text when ok, else the error

    @property
    def citable(self) -> bool:
        """Whether a verdict may cite it: a successful call that did work (finish_task only
        repeats the model's claim)."""
        return self.ok and self.tool != FINISH_TOOL


def citable_numbers(calls: list[CallRecord]) -> list[int]:
    return [call.number for call in calls if call.citable]


# --- files a task asks to write ---------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRITE_VERBS = _words(
    """write writes writing wrote written save saves saved saving create creates created
    creating store stores stored storing append appends appended appending put puts putting
    output outputs outputting generate generates generated generating produce produces produced
    export exports exported dump dumps dumped copy copies copied move moves moved rename
    renames renamed"""
)
READ_VERBS = _words(
    """read reads reading open opens opening summarise summarises summarize summarizes list
    lists listing show shows print prints count counts check checks load loads parse parses
    analyse analyses analyze analyzes inspect inspects look looks view views display displays
    describe describes explain explains fetch fetches download downloads compare compares
    find finds search searches delete deletes remove removes use uses tell"""
)
# After these a verb is a noun ("save the list as files.md", "write the output to out.txt").
DETERMINERS = _words("the a an this that its his her their my your our each every")
# A file right after these is where the writing goes ("to out.txt", "save it as list.md").
TARGET_WORDS = frozenset(["to", "into", "in", "as", "called", "named"])
# A file right after these is what the writing is made from ("a summary of report.pdf").
SOURCE_WORDS = frozenset(["of", "from", "about", "on", "with"])
# Words that may stand between such a word and the file ("to a new file called x.txt").
_FILLER_WORDS = frozenset(["the", "a", "an", "new", "file", "files", "text", "empty", "called"])
_LIST_WORDS = frozenset(["and", "or"])
NEGATIONS = _words("not don't dont never without doesn't no")
_NOT_FILES = frozenset(["e.g", "i.e", "etc", "vs"])

URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;:](?:\s|$)|\n")
# A relative file name with an extension; not after "/" or "~" (absolute or home paths) and
# without "..", which leave the workspace anyway.
_TOKEN = re.compile(
    r"(?P<file>(?<![\w/.~-])(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,9}(?![\w/]))"
    r"|(?P<word>[A-Za-z][A-Za-z']*)"
    r"|(?P<comma>,)"
)


def files_to_write(task_text: str) -> list[str]:
    """The relative file names `task_text` asks to be written (saved, created, appended to …),
    in order of mention, without the ones it only reads."""
    found: list[str] = []
    text = URL.sub(" ", task_text.replace("\u2019", "'"))
    for sentence in _SENTENCE_END.split(text):
        for name in _written_in(sentence):
            if name not in found:
                found.append(name)
    return found


def files_named(task_text: str) -> list[str]:
    """Every relative file name `task_text` mentions, in order of mention."""
    found: list[str] = []
    for token in _TOKEN.finditer(URL.sub(" ", task_text)):
        name = token.group("file")
        if name and name.lower() not in _NOT_FILES and ".." not in name and name not in found:
            found.append(name)
    return found


def _written_in(sentence: str) -> list[str]:
    """A write verb governs the files after it until the next verb; among them, those after
    "to"/"as"/"in"… are its targets when there are any, else all but those after "of"/"from"."""
    written: list[str] = []
    scope: list[tuple[str, str]] = []  # (file, role) with role target | source | plain
    writing = False
    previous = ""
    role = "plain"

    def close() -> None:
        targets = [name for name, kind in scope if kind == "target"]
        chosen = targets or [name for name, kind in scope if kind == "plain"]
        written.extend(chosen)
        scope.clear()

    for token in _TOKEN.finditer(sentence):
        if token.group("file"):
            name = token.group("file")
            if name.lower() not in _NOT_FILES and ".." not in name and writing:
                scope.append((name, role))
            # "to a.txt and b.txt": a list keeps the role of its first member.
            continue
        if token.group("comma"):
            continue
        word = token.group("word").lower()
        if (word in WRITE_VERBS or word in READ_VERBS) and previous not in DETERMINERS:
            if writing:
                close()
            writing = word in WRITE_VERBS and previous not in NEGATIONS
            role = "plain"
        elif word in TARGET_WORDS:
            role = "target"
        elif word in SOURCE_WORDS:
            role = "source"
        elif word in _LIST_WORDS or word in _FILLER_WORDS:
            pass
        else:
            role = "plain"
        previous = word
    if writing:
        close()
    return written


_WORD = re.compile(r"[^\W_]+")


def echoes_task(answer: str, task_text: str) -> bool:
    """Whether `answer` only repeats the task's words: two or more words (numbers count)
    that stand in the task together and in that order, as "2+2" does in "What is 2+2?". A
    single word ("blue", "yes") is an answer even when the task offered it."""
    words = [word.lower() for word in _WORD.findall(answer)]
    if len(words) < 2:
        return False
    task_words = [word.lower() for word in _WORD.findall(task_text)]
    size = len(words)
    return any(task_words[i : i + size] == words for i in range(len(task_words) - size + 1))

"""A run's workspace as one zip archive, streamed as it is read (zipstream-ng): one file open
at a time, read in pieces, so no archive is ever whole in memory.

Every listed file is in it, or named in a `_MANIFEST.txt` entry at its end with why it is not:
the archive would pass RUN_FILES_ZIP_MAX_BYTES, the file went away while the archive was being
written, its name in the archive is another file's; so are what the listing passes over (a
symlink leading out of the workspace, a pipe) and the files stored under another name. A
display path with escapes (`files.display_path`: a byte that is not UTF-8, a control
character, a backslash) is stored with `%` in place of each escape's `\\x` (b"bad\\xff.md"
as `bad%ff.md`): zip readers take a backslash for a directory separator. Without anything to
say there is no manifest.

A person has at most RUN_FILES_ZIPS_PER_USER archives streaming at once, counted in Redis over
every web process (a sorted set per person, one member per archive scored by when it expires,
pushed ahead while it streams); one more is RATE_LIMITED. An archive gives its place back when
its stream ends or is closed (the client went away); a process that dies loses its places
within SLOT_SECONDS."""

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from typing import BinaryIO

import redis
import zipstream
from django.conf import settings

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.slots import Slot, slot_key
from agents_app.models import Run
from agents_app.runs.files import LeftOut, WorkspaceFile, run_file_handle, run_files

logger = logging.getLogger(__name__)

MANIFEST = "_MANIFEST.txt"
READ_BYTES = 64 * 1024
# How long an archive's place lasts unless pushed ahead, and how often a stream pushes it.
SLOT_SECONDS = 120
RENEW_SECONDS = 30


class _Slot:
    """One archive's place under its person's cap (core.slots)."""

    def __init__(self, user_id: int) -> None:
        self.user_id = user_id
        self.renewed = time.monotonic()
        self.slot: Slot | None = None

    def take(self) -> None:
        cap = settings.RUN_FILES_ZIPS_PER_USER
        try:
            self.slot = Slot.take(slot_key("zip", "user", self.user_id), cap, SLOT_SECONDS)
        except redis.RedisError:
            # The cap guards the server; Redis being away is not the person's doing.
            logger.warning("could not count the zip downloads of user %s", self.user_id)
            return
        if self.slot is None:
            raise DomainError(
                ErrorCode.RATE_LIMITED,
                f"You have {cap} archives downloading, the most allowed at once: wait until one "
                "has finished",
                {"max_zips": cap},
            )

    def renew_if_due(self) -> None:
        if self.slot is None or time.monotonic() - self.renewed < RENEW_SECONDS:
            return
        self.renewed = time.monotonic()
        self.slot.renew()

    def give_back(self) -> None:
        slot, self.slot = self.slot, None
        if slot is not None:
            slot.give_back()


def archive_name(file: WorkspaceFile) -> str:
    """The name `file` is stored under: its display path, each escape's `\\x` as `%`."""
    return file.path.replace("\\x", "%")


class WorkspaceZip:
    """One archive on its way out: iterate it once for its bytes. `close()` (the response
    calls it, also when the client went away) ends it and gives its place back."""

    def __init__(self, run: Run, user_id: int) -> None:
        self.run = run
        self.limit = settings.RUN_FILES_ZIP_MAX_BYTES
        self._slot = _Slot(user_id)
        self._chunks: Iterator[bytes] | None = None

    def start(self) -> "WorkspaceZip":
        """Take its place (RATE_LIMITED beyond the cap) and list the workspace
        (PAYLOAD_TOO_LARGE when the listing is cut off at RUN_FILES_MAX_ENTRIES)."""
        listing = run_files(run=self.run)
        if listing.truncated:
            raise DomainError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"The workspace holds more than {listing.limit} files, too many to download as "
                "one archive; download the files one by one",
                {"run_id": self.run.pk, "max_files": listing.limit},
            )
        self._slot.take()
        self._chunks = self._generate(listing.files, list(listing.passed_over))
        return self

    def __iter__(self) -> Iterator[bytes]:
        assert self._chunks is not None, "start() it first"
        return self._chunks

    def close(self) -> None:
        if self._chunks is not None:
            # ValueError: still reading in another thread (ASGI); its own end closes the file.
            with contextlib.suppress(ValueError):
                self._chunks.close()  # type: ignore[attr-defined]
        self._slot.give_back()

    def _generate(self, files: list[WorkspaceFile], left_out: list[LeftOut]) -> Iterator[bytes]:
        try:
            yield from self._entries(files, left_out)
        finally:
            self._slot.give_back()

    def _entries(self, files: list[WorkspaceFile], left_out: list[LeftOut]) -> Iterator[bytes]:
        archive = zipstream.ZipStream(compress_type=zipstream.ZIP_DEFLATED)
        renamed: list[tuple[str, str]] = []
        names = {archive_name(file) for file in files}
        taken: set[str] = set()
        written = 0
        for file in files:
            name = archive_name(file)
            if name in taken:
                left_out.append(LeftOut(file.path, f"its name in the archive, {name}, is taken"))
                continue
            try:
                handle = run_file_handle(run=self.run, file=file)
            except DomainError:
                left_out.append(LeftOut(file.path, "gone before it was archived"))
                continue
            with handle:
                size = _size(handle)
                if written + size > self.limit:
                    left_out.append(
                        LeftOut(
                            file.path,
                            f"{size} bytes: the archive would pass RUN_FILES_ZIP_MAX_BYTES "
                            f"({self.limit} bytes); download it on its own",
                        )
                    )
                    continue
                taken.add(name)
                if name != file.path:
                    renamed.append((file.path, name))
                archive.add(self._read(handle, size), name)
                yield from archive.all_files()
                written += size
        text = _manifest(left_out, renamed)
        if text:
            archive.add(text.encode(), _free_name(MANIFEST, names | taken))
            yield from archive.all_files()
        yield from archive.footer()

    def _read(self, handle: BinaryIO, size: int) -> Iterator[bytes]:
        """At most `size` bytes of `handle` (what it held when it was opened), in pieces."""
        remaining = size
        while remaining > 0:
            data = handle.read(min(READ_BYTES, remaining))
            if not data:
                return
            remaining -= len(data)
            self._slot.renew_if_due()
            yield data


def _size(handle: BinaryIO) -> int:
    return os.fstat(handle.fileno()).st_size


def _free_name(wanted: str, taken: set[str]) -> str:
    stem, dot, suffix = wanted.rpartition(".")
    name, number = wanted, 1
    while name in taken:
        name, number = f"{stem}-{number}{dot}{suffix}", number + 1
    return name


def _manifest(left_out: list[LeftOut], renamed: list[tuple[str, str]]) -> str:
    lines = []
    if left_out:
        lines.append("Left out of this archive:")
        lines.extend(f"  {entry.path}: {entry.why}" for entry in left_out)
    if renamed:
        if lines:
            lines.append("")
        lines.append(
            "Stored under another name (a byte that is not UTF-8, a control character or a "
            "backslash, shown as \\xNN in the Files panel, is %NN here):"
        )
        lines.extend(f"  {shown} as {name}" for shown, name in renamed)
    return "\n".join(lines) + "\n" if lines else ""


def run_files_zip(*, run: Run, user_id: int) -> WorkspaceZip:
    """The run's workspace as a zip archive to stream, for `user_id` (who holds one of their
    RUN_FILES_ZIPS_PER_USER places until it ends or is closed). Raises RATE_LIMITED beyond
    that cap, PAYLOAD_TOO_LARGE when the workspace holds more than RUN_FILES_MAX_ENTRIES
    files."""
    return WorkspaceZip(run, user_id).start()

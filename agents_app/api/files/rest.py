"""REST endpoints for a run's workspace files: the listing and one file's bytes as a download,
the owner's runs only (`runs.files` confines them to the workspace and bounds their size)."""

import mimetypes
from datetime import datetime
from urllib.parse import quote

from django.http import FileResponse, HttpRequest
from django.urls import register_converter
from ninja import Field, Router, Schema

from agents_app.api.schemas import errors
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.runs import selectors
from agents_app.runs.files import WorkspaceFile, run_file_open, run_files
from agents_app.runs.journal import blob_path
from agents_app.runs.journal_files import (
    journal_file_get,
    journal_listing,
    journal_point,
)


class AnyPathConverter:
    """Django's `path` converter, newlines included: a file whose name holds one (a tool can
    write it) must reach the endpoint, which answers it in JSON, not Django's HTML 404."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyPathConverter, "anypath")

router = Router(tags=["files"])


class FileOut(Schema):
    path: str = Field(
        description="Relative to the run's workspace, '/'-separated. A byte that is not UTF-8, "
        "a control character or a backslash in a name is written \\xNN (two hex digits); "
        "the download URL takes the path as written here."
    )
    size: int = Field(description="Bytes.")
    modified_at: datetime
    download: str = Field(description="This file's download URL.")


class FileList(Schema):
    success: bool = True
    run_id: int
    files: list[FileOut] = Field(description="Regular files, in path order.")
    count: int
    total_bytes: int
    truncated: bool = Field(
        description="More files than `max_entries` (RUN_FILES_MAX_ENTRIES): the rest are left out."
    )
    max_entries: int
    after_step: int | None = Field(
        None,
        description="The step the listing shows the files after (`?after_step=N`), rebuilt "
        "from the run's workspace journal; null: the workspace now.",
    )
    complete: bool = Field(
        True,
        description="False when the journal stopped (over WORKSPACE_JOURNAL_MAX_BYTES or "
        "WORKSPACE_JOURNAL_MAX_FILES) before that step ended: files changed after are missing.",
    )


def download_url(run_id: int, file: WorkspaceFile, after_step: int | None = None) -> str:
    url = f"/api/v1/runs/{run_id}/files/{quote(file.path)}"
    return url if after_step is None else f"{url}?after_step={after_step}"


@router.get(
    "/runs/{int:run_id}/files",
    response={200: FileList, **errors(400)},
    summary="The run's workspace files",
)
def list_files(request: HttpRequest, run_id: int, after_step: str | None = None):
    """Every regular file of the run's workspace with its size and modification time, in path
    order, at most RUN_FILES_MAX_ENTRIES (`truncated` says more were left out). A run that
    wrote nothing has none. Symlinks leading out of the workspace are left out.

    With `after_step=N`: the files as they were after step N of the run's latest plan (as the
    run page numbers them), rebuilt from its workspace journal (`modified_at`: when the
    change was recorded); 400 VALIDATION_ERROR when N is not a step that ended, or the run has
    no journal."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    point = journal_point(run=run, after_step=after_step) if after_step is not None else None
    listing = run_files(run=run) if point is None else journal_listing(run=run, point=point)
    number = point.number if point is not None else None
    return {
        "run_id": run.pk,
        "files": [
            {
                "path": f.path,
                "size": f.size,
                "modified_at": f.modified_at,
                "download": download_url(run.pk, f, number),
            }
            for f in listing.files
        ],
        "count": len(listing.files),
        "total_bytes": listing.total_bytes,
        "truncated": listing.truncated,
        "max_entries": listing.limit,
        "after_step": number,
        "complete": point.complete if point is not None else True,
    }


BINARY = {"schema": {"type": "string", "format": "binary"}}


@router.get(
    "/runs/{int:run_id}/files/{anypath:file_path}",
    response={**errors(400, 413)},
    summary="Download one of the run's files",
    openapi_extra={
        "responses": {
            200: {
                "description": "The file's bytes, as an attachment, with a content type "
                "guessed from its name (application/octet-stream otherwise).",
                "content": {"application/octet-stream": BINARY, "*/*": BINARY},
            }
        }
    },
)
def download_file(request: HttpRequest, run_id: int, file_path: str, after_step: str | None = None):
    """The file at `file_path` (relative to the workspace, as the listing writes it: `\\xNN`
    for a byte that is not UTF-8, a control character or a backslash). 400 for a path that
    could not be inside the workspace (absolute, `..`, a backslash that begins no `\\xNN`);
    404 for no such regular file, or one that resolves outside it (a symlink); 413 past
    RUN_FILES_MAX_BYTES. With `after_step=N`, the file as it was after step N (see the listing),
    404 when there was none then."""
    run = selectors.run_get(user=request.user, run_id=run_id)
    if after_step is not None:
        point = journal_point(run=run, after_step=after_step)
        kept = journal_file_get(run=run, point=point, path=file_path)
        file, handle = kept.file, _blob(run.pk, kept.sha256, kept.file.path)
    else:
        file, handle = run_file_open(run=run, path=file_path)
    content_type, encoding = mimetypes.guess_type(file.name)
    if encoding or not content_type:  # a .gz is its bytes, not text with an encoding
        content_type = "application/octet-stream"
    # An attachment (with nosniff, sent on every response) is never rendered as a page.
    return FileResponse(handle, as_attachment=True, filename=file.name, content_type=content_type)


def _blob(run_id: int, sha256: str, path: str):
    try:
        return open(blob_path(sha256), "rb")  # noqa: SIM115 (FileResponse closes it)
    except OSError:
        raise DomainError(
            ErrorCode.NOT_FOUND,
            f"The stored content of '{path}' is gone",
            {"run_id": run_id, "path": path},
        ) from None

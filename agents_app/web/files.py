"""The run page's Files panel: the workspace's tree, a text preview of one file, a download per
file and "Download all" as a zip. Reads go through `runs.files` (confined to the workspace,
bounded in size) on a run scoped to the signed-in user; another user's run is a 404."""

import mimetypes
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from agents_app.core.errors import DomainError, ErrorCode
from agents_app.models import Run
from agents_app.runs import selectors
from agents_app.runs.files import (
    FileListing,
    WorkspaceFile,
    run_file_open,
    run_file_preview,
    run_files,
)
from agents_app.runs.files_zip import WorkspaceZip, run_files_zip
from agents_app.runs.journal_files import (
    JournalPoint,
    journal_file_preview,
    journal_listing,
    journal_point,
    journal_steps,
)


@dataclass(frozen=True)
class TreeRow:
    """One line of the tree: a directory heading or a file, indented by `depth`."""

    name: str
    depth: int
    file: WorkspaceFile | None = None  # None: a directory


def tree_rows(listing: FileListing) -> list[TreeRow]:
    """The sorted flat listing as the rows of a tree: each directory once, before its files."""
    rows: list[TreeRow] = []
    shown: set[PurePosixPath] = set()
    for file in listing.files:
        path = PurePosixPath(file.path)
        for depth, directory in enumerate(reversed(path.parents[:-1])):
            if directory not in shown:
                shown.add(directory)
                rows.append(TreeRow(directory.name, depth))
        rows.append(TreeRow(path.name, len(path.parts) - 1, file))
    return rows


def files_context(run: Run, point: JournalPoint | None = None) -> dict[str, Any]:
    """What the tree region shows (the run page, its refresh and the sockets' swaps): the
    workspace now, or with `point` as it was after that step (runs.journal_files)."""
    listing = run_files(run=run) if point is None else journal_listing(run=run, point=point)
    return {
        "run": run,
        "file_listing": listing,
        "file_rows": tree_rows(listing),
        "journal_steps": journal_steps(run),
        "point": point,
    }


def render_files_tree(*, run: Run, oob: bool = False) -> str:
    """The tree region, as the page includes it or, with `oob`, as an out-of-band swap."""
    return render_to_string("agents/partials/files_tree.html", {**files_context(run), "oob": oob})


def _point(request: HttpRequest, run: Run) -> JournalPoint | None:
    """The step the person chose (`?after_step=N`), or None for the workspace now."""
    after_step = request.GET.get("after_step", "")
    return journal_point(run=run, after_step=after_step) if after_step else None


def _owned_run(request: HttpRequest, run_id: int) -> Run:
    try:
        return selectors.run_get(user=request.user, run_id=run_id)
    except DomainError as error:
        raise Http404(error.message) from None


def _refused(request: HttpRequest, run: Run, error: DomainError, path: str) -> HttpResponse:
    """A refused path or a file too large, said in the preview region (htmx) or its page."""
    context = {"run": run, "path": path, "error": error}
    if getattr(request, "htmx", False):
        return render(request, "agents/partials/file_preview.html", context, status=200)
    return render(request, "agents/run_file.html", context, status=error.http_status)


@login_required
@require_GET
def run_files_tree(request: HttpRequest, run_id: int) -> HttpResponse:
    """The tree region alone, for htmx to refresh."""
    run = _owned_run(request, run_id)
    try:
        point = _point(request, run)
    except DomainError as error:
        # Said in the tree region (htmx swaps a 200 only), the workspace now below it.
        status = 200 if getattr(request, "htmx", False) else error.http_status
        context = {**files_context(run), "error": error}
        return render(request, "agents/partials/files_tree.html", context, status=status)
    return render(request, "agents/partials/files_tree.html", files_context(run, point))


@login_required
@require_GET
def run_file_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """The chosen file's preview: the region for htmx, a page of its own otherwise."""
    run = _owned_run(request, run_id)
    path = request.GET.get("path", "")
    point = None
    try:
        point = _point(request, run)
        if point is None:
            preview = run_file_preview(run=run, path=path)
        else:
            preview = journal_file_preview(run=run, point=point, path=path)
    except DomainError as error:
        if error.code == ErrorCode.NOT_FOUND and not getattr(request, "htmx", False):
            raise Http404(error.message) from None
        return _refused(request, run, error, path)
    context = {"run": run, "path": path, "preview": preview, "point": point}
    if getattr(request, "htmx", False):
        return render(request, "agents/partials/file_preview.html", context)
    return render(request, "agents/run_file.html", context)


@login_required
@require_GET
def run_file_download(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _owned_run(request, run_id)
    path = request.GET.get("path", "")
    try:
        file, handle = run_file_open(run=run, path=path)
    except DomainError as error:
        if error.code == ErrorCode.NOT_FOUND:
            raise Http404(error.message) from None
        return render(
            request,
            "agents/run_file.html",
            {"run": run, "path": path, "error": error},
            status=error.http_status,
        )
    content_type, encoding = mimetypes.guess_type(file.name)
    if encoding or not content_type:
        content_type = "application/octet-stream"
    # An attachment (with nosniff) is never rendered as a page of this site.
    return FileResponse(handle, as_attachment=True, filename=file.name, content_type=content_type)


class _AsyncArchive:
    """A WorkspaceZip for an ASGI response, which would otherwise read a sync iterator whole
    into memory before sending the first byte: each piece is read in a worker thread."""

    def __init__(self, archive: WorkspaceZip) -> None:
        self.archive = archive

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pieces = iter(self.archive)
        read = sync_to_async(next, thread_sensitive=False)
        try:
            while (piece := await read(pieces, None)) is not None:
                yield piece
        finally:
            await sync_to_async(self.archive.close, thread_sensitive=False)()

    def close(self) -> None:
        self.archive.close()


@login_required
@require_GET
def run_files_download_all(request: HttpRequest, run_id: int) -> HttpResponse:
    """Every file of the workspace as run-<id>-files.zip, streamed (`runs.files_zip`: what it
    leaves out is named in the archive's _MANIFEST.txt). 429 while the person has
    RUN_FILES_ZIPS_PER_USER downloading."""
    run = _owned_run(request, run_id)
    try:
        archive = run_files_zip(run=run, user_id=request.user.pk)
    except DomainError as error:
        return render(
            request, "agents/run_file.html", {"run": run, "error": error}, status=error.http_status
        )
    content = _AsyncArchive(archive) if isinstance(request, ASGIRequest) else archive
    response = StreamingHttpResponse(content, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-files.zip"'
    return response

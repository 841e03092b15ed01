"""The run page's Files panel: the workspace's tree, a text preview (escaped), a download per
file and "Download all" as a zip; the owner's runs only; refreshed by the run's events."""

import io
import os
import warnings
import zipfile
from html import unescape

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from agents_app.core.events import event_message
from agents_app.models import RunEvent, RunStatus, ToolCall
from agents_app.web import fragments
from tests.support.markup import by_id, elements
from tests.support.runs import add_plan, complete_step, make_run, succeed
from tests.support.workspaces import close_unread, own_workspaces, write_files

pytestmark = pytest.mark.usefixtures("own_workspaces")
__all__ = ["own_workspaces"]

HTMX = {"HX-Request": "true"}


def page(client, run) -> str:
    response = client.get(f"/runs/{run.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def rows(html: str) -> list[tuple[str, str]]:
    """(class, data-path or text marker) of each line of the files tree, in order."""
    return [
        (attrs["class"], attrs.get("data-path") or "")
        for tag, attrs in elements(html)
        if tag == "li" and attrs.get("class") in {"file-row", "file-dir"}
    ]


def test_the_run_page_shows_the_workspace_as_a_tree_with_a_download_per_file(owner, owner_session):
    run = make_run(owner, "Write the report")
    write_files(run, {"answer.md": "42", "notes/day1.txt": "a", "notes/deep/day2.txt": "b"})

    html = page(owner_session, run)

    assert rows(html) == [
        ("file-row", "answer.md"),
        ("file-dir", ""),
        ("file-row", "notes/day1.txt"),
        ("file-dir", ""),
        ("file-row", "notes/deep/day2.txt"),
    ]
    downloads = [a.get("href") for t, a in elements(html) if a.get("class") == "file-download"]
    assert f"/runs/{run.pk}/files/download/?path=notes/deep/day2.txt" in downloads
    assert by_id(html, "files-tree")["data-count"] == "3"
    assert f'href="/runs/{run.pk}/files/all.zip"' in html


def test_a_run_without_files_says_so(owner, owner_session):
    running = make_run(owner)
    finished = succeed(add_plan(make_run(owner), ["One"]).run, "done")

    assert "Files the run writes appear here." in page(owner_session, running)
    html = page(owner_session, finished)
    assert "This run wrote no files." in html
    # Nothing to zip: no "Download all" beside it (it comes with the first file, live).
    assert "files/all.zip" not in html and "Download all" not in html


def test_a_chosen_text_file_is_previewed_escaped_never_as_html(owner, owner_session):
    run = make_run(owner)
    write_files(run, {"page.html": "<script>alert('hi')</script><b>bold</b>"})

    response = owner_session.get(f"/runs/{run.pk}/files/view/", {"path": "page.html"}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#x27;hi&#x27;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert by_id(html, "file-preview")["data-path"] == "page.html"


def test_without_htmx_the_preview_is_a_page_of_its_own(owner, owner_session):
    run = make_run(owner, "Write the answer")
    write_files(run, {"answer.md": "The answer is 42"})

    response = owner_session.get(f"/runs/{run.pk}/files/view/", {"path": "answer.md"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "<!doctype html>" in html and "The answer is 42" in html
    assert f'href="/runs/{run.pk}/"' in html


def test_a_binary_file_is_not_previewed_and_says_why(owner, owner_session):
    run = make_run(owner)
    write_files(run, {"image.png": b"\x89PNG\r\n\x1a\n\x00\x00"})

    html = owner_session.get(
        f"/runs/{run.pk}/files/view/", {"path": "image.png"}, headers=HTMX
    ).content.decode()

    assert "Not shown: a binary file" in html
    assert 'class="file-text"' not in html and "PNG" not in unescape(html)


def test_a_file_over_the_preview_limit_is_not_previewed_and_says_why(
    owner, owner_session, settings
):
    settings.RUN_FILES_PREVIEW_BYTES = 5
    run = make_run(owner)
    write_files(run, {"long.txt": "abcdefgh"})

    html = owner_session.get(
        f"/runs/{run.pk}/files/view/", {"path": "long.txt"}, headers=HTMX
    ).content.decode()

    assert "Not shown: too large to preview (8 bytes; at most 5)" in html
    assert "abcdefgh" not in html


def test_a_path_leaving_the_workspace_is_refused_in_the_preview(owner, owner_session):
    run = make_run(owner)
    write_files(run, {"a.txt": "a"})

    in_place = owner_session.get(f"/runs/{run.pk}/files/view/", {"path": "../a.txt"}, headers=HTMX)
    alone = owner_session.get(f"/runs/{run.pk}/files/view/", {"path": "/etc/passwd"})

    assert 'data-code="VALIDATION_ERROR"' in in_place.content.decode()
    assert alone.status_code == 400
    assert (
        owner_session.get(f"/runs/{run.pk}/files/download/", {"path": "../a.txt"}).status_code
        == 400
    )


def test_a_file_downloads_as_an_attachment(owner, owner_session):
    run = make_run(owner)
    write_files(run, {"out/report.csv": "a,b\n1,2\n"})

    response = owner_session.get(f"/runs/{run.pk}/files/download/", {"path": "out/report.csv"})

    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="report.csv"'
    assert response["Content-Type"] == "text/csv"
    assert b"".join(response.streaming_content) == b"a,b\n1,2\n"


def test_download_all_is_a_zip_of_every_file(owner, owner_session):
    run = make_run(owner)
    write_files(run, {"answer.md": "42", "notes/a.txt": "a", "raw.bin": b"\x00\xff"})

    response = owner_session.get(f"/runs/{run.pk}/files/all.zip")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}-files.zip"'
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["answer.md", "notes/a.txt", "raw.bin"]
    assert archive.read("raw.bin") == b"\x00\xff"


def zip_of(response) -> zipfile.ZipFile:
    assert response.status_code == 200 and response.streaming
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def test_download_all_leaves_out_what_would_pass_the_size_cap_and_says_so(
    owner, owner_session, settings
):
    settings.RUN_FILES_ZIP_MAX_BYTES = 10
    run = make_run(owner)
    write_files(run, {"a.txt": "x" * 6, "b.txt": "y" * 6, "c.txt": "z"})

    archive = zip_of(owner_session.get(f"/runs/{run.pk}/files/all.zip"))

    assert archive.namelist() == ["a.txt", "c.txt", "_MANIFEST.txt"]
    manifest = archive.read("_MANIFEST.txt").decode()
    assert "Left out of this archive:\n  b.txt: 6 bytes: the archive would pass" in manifest


def test_download_all_over_the_listing_limit_answers_413(owner, owner_session, settings):
    settings.RUN_FILES_MAX_ENTRIES = 1
    run = make_run(owner)
    write_files(run, {"a.txt": "a", "b.txt": "b"})

    response = owner_session.get(f"/runs/{run.pk}/files/all.zip")

    assert response.status_code == 413
    assert "too many to download as one archive" in response.content.decode()


def test_download_all_names_a_symlink_leading_out_in_its_manifest(
    owner, owner_session, own_workspaces
):
    run = make_run(owner)
    directory = write_files(run, {"answer.md": "42"})
    (own_workspaces / "secret.txt").write_text("not yours")
    (directory / "link.txt").symlink_to(own_workspaces / "secret.txt")

    archive = zip_of(owner_session.get(f"/runs/{run.pk}/files/all.zip"))

    assert archive.namelist() == ["answer.md", "_MANIFEST.txt"]
    assert (
        "link.txt: a symlink that leads outside the workspace"
        in archive.read("_MANIFEST.txt").decode()
    )


def test_odd_names_are_shown_previewed_downloaded_and_zipped_escaped(owner, owner_session):
    run = make_run(owner)
    directory = write_files(run, {"answer.md": "42", "back\\slash.txt": "b"})
    descriptor = os.open(os.fsencode(directory) + b"/bad\xff.md", os.O_WRONLY | os.O_CREAT)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(b"# odd")

    html = page(owner_session, run)
    preview = owner_session.get(f"/runs/{run.pk}/files/view/", {"path": "bad\\xff.md"})
    download = owner_session.get(f"/runs/{run.pk}/files/download/", {"path": "bad\\xff.md"})
    archive = zip_of(owner_session.get(f"/runs/{run.pk}/files/all.zip"))

    assert ("file-row", "bad\\xff.md") in rows(html)
    assert ("file-row", "back\\x5cslash.txt") in rows(html)
    assert preview.status_code == 200 and "# odd" in preview.content.decode()
    assert b"".join(download.streaming_content) == b"# odd"
    assert archive.namelist() == ["answer.md", "back%5cslash.txt", "bad%ff.md", "_MANIFEST.txt"]
    assert archive.read("bad%ff.md") == b"# odd"
    assert "bad\\xff.md as bad%ff.md" in archive.read("_MANIFEST.txt").decode()


@pytest.mark.dialect
def test_a_person_may_have_only_so_many_zips_downloading_at_once(owner, owner_session, settings):
    settings.RUN_FILES_ZIPS_PER_USER = 1
    run = make_run(owner)
    write_files(run, {"answer.md": "42"})
    url = f"/runs/{run.pk}/files/all.zip"

    first = owner_session.get(url)
    refused = owner_session.get(url)
    close_unread(first)  # the client went away
    again = owner_session.get(url)

    assert refused.status_code == 429
    assert "archives downloading, the most allowed at once" in refused.content.decode()
    assert zip_of(again).namelist() == ["answer.md"]
    # Read to its end, it gave its place back too.
    assert zip_of(owner_session.get(url)).namelist() == ["answer.md"]


@pytest.mark.dialect
def test_zips_of_different_people_do_not_count_against_each_other(
    owner, teammate, owner_session, teammate_session, settings
):
    settings.RUN_FILES_ZIPS_PER_USER = 1
    mine, theirs = make_run(owner), make_run(teammate)
    write_files(mine, {"a.txt": "a"})
    write_files(theirs, {"b.txt": "b"})

    held = owner_session.get(f"/runs/{mine.pk}/files/all.zip")
    response = teammate_session.get(f"/runs/{theirs.pk}/files/all.zip")

    assert zip_of(response).namelist() == ["b.txt"]
    close_unread(held)


@pytest.mark.parametrize(
    "url",
    ["files/", "files/view/?path=answer.md", "files/download/?path=answer.md", "files/all.zip"],
)
def test_another_users_run_files_are_not_found(owner, outsider_session, url):
    run = make_run(owner)
    write_files(run, {"answer.md": "secret"})

    response = outsider_session.get(f"/runs/{run.pk}/{url}")

    assert response.status_code == 404
    assert b"secret" not in response.content


def test_the_files_views_need_a_login(owner, client):
    run = make_run(owner)
    write_files(run, {"answer.md": "secret"})

    response = client.get(f"/runs/{run.pk}/files/download/?path=answer.md")

    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_write_file_call_links_to_its_file_in_the_panel(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["Write the answer"])
    step = complete_step(run, plan, 0, arguments={"path": "answer.md", "content": "42"})
    ToolCall.objects.filter(step=step).update(
        result={"path": "answer.md", "bytes_written": 2, "appended": False}
    )
    write_files(run, {"answer.md": "42"})

    html = page(owner_session, run)

    link = next(a for t, a in elements(html) if a.get("class") == "tool-file")
    assert link["href"] == f"/runs/{run.pk}/files/view/?path=answer.md"
    assert link["hx-get"] == link["href"]
    assert link["hx-target"] == "#file-preview"


def test_a_write_file_call_to_a_name_with_a_backslash_links_to_it_escaped(owner, owner_session):
    run = make_run(owner)
    plan = add_plan(run, ["Write the answer"])
    step = complete_step(run, plan, 0, arguments={"path": "a\\b.md", "content": "42"})
    ToolCall.objects.filter(step=step).update(
        result={"path": "a\\b.md", "bytes_written": 2, "appended": False}
    )
    write_files(run, {"a\\b.md": "42"})

    link = next(a for t, a in elements(page(owner_session, run)) if a.get("class") == "tool-file")

    assert link["href"] == f"/runs/{run.pk}/files/view/?path=a%5Cx5cb.md"
    assert "42" in owner_session.get(link["href"]).content.decode()


def test_a_tool_result_refreshes_the_tree_out_of_band(owner):
    run = make_run(owner)
    plan = add_plan(run, ["Write the answer"])
    seen = RunEvent.objects.filter(run=run).count()
    complete_step(run, plan, 0)
    write_files(run, {"answer.md": "42"})
    events = [
        event_message(e) for e in RunEvent.objects.filter(run=run, seq__gt=seen).order_by("seq")
    ]

    html = fragments.render_run_events(run=run, events=events)

    tree = by_id(html, "files-tree")
    assert tree["hx-swap-oob"] == "true" and tree["data-count"] == "1"
    assert ("file-row", "answer.md") in rows(html)


def test_the_end_of_a_run_refreshes_the_tree(owner):
    run = make_run(owner)
    add_plan(run, ["Write the answer"])
    write_files(run, {"answer.md": "42"})
    seen = RunEvent.objects.filter(run=run).count()
    succeed(run, "see answer.md")
    assert run.status == RunStatus.SUCCEEDED
    events = [event_message(e) for e in RunEvent.objects.filter(run=run, seq__gt=seen)]

    html = fragments.render_run_events(run=run, events=events)

    assert by_id(html, "files-tree")["data-count"] == "1"


def test_events_that_write_nothing_leave_the_tree_alone(owner):
    run = make_run(owner)
    seen = RunEvent.objects.filter(run=run).count()
    add_plan(run, ["Write the answer"])
    events = [event_message(e) for e in RunEvent.objects.filter(run=run, seq__gt=seen)]

    html = fragments.render_run_events(run=run, events=events)

    assert 'id="files-tree"' not in html


def test_under_asgi_the_zip_is_streamed_piece_by_piece_not_read_whole_first(owner):
    run = make_run(owner)
    data = os.urandom(300_000)  # random: deflate cannot make it one small piece
    write_files(run, {"big.bin": data})

    async def download():
        client = AsyncClient()
        await client.aforce_login(owner)
        response = await client.get(f"/runs/{run.pk}/files/all.zip")
        # Django reads a sync iterator whole under ASGI, and warns that it does.
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return response, [piece async for piece in response.streaming_content]

    response, pieces = async_to_sync(download)()

    assert response.status_code == 200 and len(pieces) > 2
    assert zipfile.ZipFile(io.BytesIO(b"".join(pieces))).read("big.bin") == data

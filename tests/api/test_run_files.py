"""GET /api/v1/runs/{id}/files and /files/{path}: a run's workspace files, listed and
downloaded by their owner only, confined to the workspace and bounded in size."""

import os
from datetime import datetime

import pytest

from tests.support.api import assert_error
from tests.support.runs import make_run
from tests.support.workspaces import own_workspaces, write_files

pytestmark = pytest.mark.usefixtures("own_workspaces")
__all__ = ["own_workspaces"]


def files_url(run, path: str = "") -> str:
    return f"/api/v1/runs/{run.pk}/files" + (f"/{path}" if path else "")


def test_the_listing_gives_each_file_with_its_path_size_and_modified_time(owner, owner_api):
    run = make_run(owner, "Write the report")
    write_files(run, {"answer.md": "# Answer\n42\n", "notes/todo.txt": "buy milk", "b.bin": b"\0"})

    response = owner_api.get(files_url(run))

    assert response.status_code == 200
    body = response.json()
    assert body["run_id"] == run.pk
    assert [(f["path"], f["size"]) for f in body["files"]] == [
        ("answer.md", 12),
        ("b.bin", 1),
        ("notes/todo.txt", 8),
    ]
    assert body["count"] == 3 and body["total_bytes"] == 21 and body["truncated"] is False
    assert datetime.fromisoformat(body["files"][0]["modified_at"]).tzinfo is not None
    assert body["files"][2]["download"] == f"/api/v1/runs/{run.pk}/files/notes/todo.txt"


def test_a_run_that_wrote_nothing_lists_no_files(owner, owner_api):
    run = make_run(owner)

    body = owner_api.get(files_url(run)).json()

    assert body["files"] == [] and body["count"] == 0 and body["truncated"] is False


def test_a_listing_longer_than_the_limit_is_cut_off_and_says_so(owner, owner_api, settings):
    settings.RUN_FILES_MAX_ENTRIES = 2
    run = make_run(owner)
    write_files(run, {"a.txt": "a", "b.txt": "b", "c.txt": "c"})

    body = owner_api.get(files_url(run)).json()

    assert [f["path"] for f in body["files"]] == ["a.txt", "b.txt"]
    assert body["truncated"] is True and body["max_entries"] == 2


def test_a_file_downloads_as_an_attachment_with_its_bytes_and_content_type(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"notes/answer.md": "# Answer\n42\n"})

    response = owner_api.get(files_url(run, "notes/answer.md"))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"# Answer\n42\n"
    assert response["Content-Type"] == "text/markdown"
    assert response["Content-Disposition"] == 'attachment; filename="answer.md"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_file_of_unknown_kind_downloads_as_octet_stream(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"blob": b"\x00\x01\x02"})

    response = owner_api.get(files_url(run, "blob"))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert b"".join(response.streaming_content) == b"\x00\x01\x02"


def test_another_users_run_is_not_found_for_listing_and_download(owner, outsider_api):
    run = make_run(owner)
    write_files(run, {"answer.md": "secret"})

    assert_error(outsider_api.get(files_url(run)), 404, "NOT_FOUND")
    assert_error(outsider_api.get(files_url(run, "answer.md")), 404, "NOT_FOUND")


def test_a_missing_file_is_not_found(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"answer.md": "42"})

    error = assert_error(owner_api.get(files_url(run, "other.md")), 404, "NOT_FOUND")

    assert error["details"]["path"] == "other.md"


@pytest.mark.parametrize(
    "path",
    ["../run-0/secret.txt", "notes/../../secret.txt", "..%2Fsecret.txt", "%2Fetc%2Fpasswd"],
)
def test_a_path_that_leaves_the_workspace_is_refused(owner, owner_api, own_workspaces, path):
    run = make_run(owner)
    write_files(run, {"notes/a.txt": "a"})
    (own_workspaces / "secret.txt").write_text("not yours")

    error = assert_error(owner_api.get(files_url(run, path)), 400, "VALIDATION_ERROR")

    assert error["details"]["field"] == "path"


def test_a_symlink_leading_out_of_the_workspace_is_neither_listed_nor_served(
    owner, owner_api, own_workspaces
):
    run = make_run(owner)
    directory = write_files(run, {"answer.md": "42"})
    outside = own_workspaces / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not yours")
    (directory / "link.txt").symlink_to(outside / "secret.txt")
    (directory / "linked-dir").symlink_to(outside, target_is_directory=True)

    listed = [f["path"] for f in owner_api.get(files_url(run)).json()["files"]]

    assert listed == ["answer.md"]
    assert_error(owner_api.get(files_url(run, "link.txt")), 404, "NOT_FOUND")
    assert_error(owner_api.get(files_url(run, "linked-dir/secret.txt")), 404, "NOT_FOUND")


def test_a_symlink_to_a_file_inside_the_workspace_is_served(owner, owner_api):
    run = make_run(owner)
    directory = write_files(run, {"real.txt": "inside"})
    (directory / "alias.txt").symlink_to(directory / "real.txt")

    response = owner_api.get(files_url(run, "alias.txt"))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"inside"


def test_a_file_over_the_size_limit_answers_413(owner, owner_api, settings):
    settings.RUN_FILES_MAX_BYTES = 10
    run = make_run(owner)
    write_files(run, {"big.txt": "x" * 11, "small.txt": "x" * 10})

    error = assert_error(owner_api.get(files_url(run, "big.txt")), 413, "PAYLOAD_TOO_LARGE")

    assert error["details"] == {"run_id": run.pk, "path": "big.txt", "size": 11, "max_bytes": 10}
    assert owner_api.get(files_url(run, "small.txt")).status_code == 200


def test_a_directory_is_not_a_file(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"notes/a.txt": "a"})

    assert_error(owner_api.get(files_url(run, "notes")), 404, "NOT_FOUND")


def test_without_a_key_or_session_both_answer_401(owner, anonymous_client):
    run = make_run(owner)
    write_files(run, {"answer.md": "42"})

    assert_error(anonymous_client.get(files_url(run)), 401, "UNAUTHORIZED")
    assert_error(anonymous_client.get(files_url(run, "answer.md")), 401, "UNAUTHORIZED")


def test_the_openapi_document_declares_every_answer_of_the_file_routes(anonymous_client):
    paths = anonymous_client.get("/api/openapi.json").json()["paths"]

    listing = paths["/api/v1/runs/{run_id}/files"]["get"]["responses"]
    download = paths["/api/v1/runs/{run_id}/files/{file_path}"]["get"]["responses"]

    assert {"200", "400", "401", "404"} <= set(listing)
    assert {"200", "400", "401", "404", "413"} <= set(download)
    assert "application/octet-stream" in download["200"]["content"]


def write_odd_name(directory, name: bytes, content: bytes = b"odd") -> None:
    """A file whose name is bytes that are not UTF-8, as an MCP tool can leave one."""
    descriptor = os.open(os.path.join(os.fsencode(directory), name), os.O_WRONLY | os.O_CREAT)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(content)


def test_a_name_that_is_not_utf8_is_listed_escaped_and_downloads_by_that_name(owner, owner_api):
    run = make_run(owner)
    directory = write_files(run, {"answer.md": "42"})
    write_odd_name(directory, b"bad\xff.md")

    body = owner_api.get(files_url(run)).json()

    odd = body["files"][1]
    assert [f["path"] for f in body["files"]] == ["answer.md", "bad\\xff.md"]
    assert odd["download"] == f"/api/v1/runs/{run.pk}/files/bad%5Cxff.md"
    response = owner_api.get(odd["download"])
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"odd"


def test_a_name_with_a_newline_or_a_backslash_is_listed_escaped(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"a\nb.txt": "n", "c\\d.txt": "b"})

    listed = [f["path"] for f in owner_api.get(files_url(run)).json()["files"]]

    assert listed == ["a\\x0ab.txt", "c\\x5cd.txt"]
    assert b"".join(owner_api.get(files_url(run, "c%5Cx5cd.txt")).streaming_content) == b"b"


def test_a_download_whose_name_holds_a_newline_answers_in_json(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"a\nb.txt": "n"})

    found = owner_api.get(files_url(run, "a%0Ab.txt"))
    missing = owner_api.get(files_url(run, "no%0Asuch.txt"))

    assert b"".join(found.streaming_content) == b"n"
    error = assert_error(missing, 404, "NOT_FOUND")
    assert error["details"]["path"] == "no\\x0asuch.txt"


def test_an_unknown_api_path_with_a_newline_answers_in_json(owner_api):
    assert_error(owner_api.get("/api/v1/no%0Asuch"), 404, "NOT_FOUND")


def test_a_backslash_that_begins_no_escape_is_refused(owner, owner_api):
    run = make_run(owner)
    write_files(run, {"a.txt": "a"})

    error = assert_error(owner_api.get(files_url(run, "a%5Cb.txt")), 400, "VALIDATION_ERROR")

    assert "\\xff" in error["message"]

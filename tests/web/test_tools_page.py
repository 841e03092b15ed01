"""The tools page lists every registered tool with its capabilities and domain."""

from tests.support.markup import ids


def test_the_tools_page_lists_the_builtin_tools_with_capabilities_and_domain(owner_session):
    html = owner_session.get("/tools/").content.decode()

    for name in ["read_file", "write_file", "list_files", "http_get", "finish_task"]:
        assert f"tool-{name}" in ids(html)
    for capability in ["FILE_READ", "FILE_WRITE", "FILE_LIST", "HTTP_GET", "WEB_FETCH", "FINISH"]:
        assert f'<span class="tag">{capability}</span>' in html
    for domain in ["file_operations", "web", "control"]:
        assert f'<span class="tag">{domain}</span>' in html


def test_the_tools_page_shows_each_tools_input_schema(owner_session):
    html = owner_session.get("/tools/").content.decode()

    assert "Input schema" in html
    assert "&quot;url&quot;" in html

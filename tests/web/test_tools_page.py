"""The tools page lists every registered tool with its capabilities and domain."""

import pytest

from tests.support.markup import ids
from tools_app.risk import least_level


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


def test_the_tools_page_shows_the_level_every_call_gets_and_why(owner_session):
    html = owner_session.get("/tools/").content.decode()
    row = html[html.index('id="tool-http_get"') :]
    row = row[: row.index("</tr>")]
    read = html[html.index('id="tool-read_file"') :]
    read = read[: read.index("</tr>")]

    assert 'data-level="moderate"' in row
    assert "(set to auto; its side effects are external)" in row
    assert 'data-level="auto"' in read and "set to" not in read


@pytest.mark.parametrize(
    ("side_effects", "schema", "level", "reasons"),
    [
        ("read_only", {"properties": {"path": {}}, "required": ["path"]}, "auto", ()),
        ("external", {}, "moderate", ("its side effects are external",)),
        (
            "read_only",
            {"properties": {"command": {"type": "string"}}, "required": ["command"]},
            "manual",
            ("every call's 'command' is code to run",),
        ),
        (
            "read_only",
            {"properties": {"target": {"format": "uri"}}, "required": ["target"]},
            "moderate",
            ("every call's 'target' reaches outside the machine",),
        ),
        ("read_only", {"properties": {"command": {}}}, "auto", ()),  # optional: per call
    ],
)
def test_the_least_level_of_a_tool(side_effects, schema, level, reasons):
    assert least_level(approval_level="auto", side_effects=side_effects, schema=schema) == (
        level,
        reasons,
    )


def test_a_tool_set_higher_than_its_risk_keeps_its_own_level():
    assert least_level(approval_level="manual", side_effects="external", schema={}) == (
        "manual",
        (),
    )

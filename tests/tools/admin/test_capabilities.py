"""infer_capabilities: a deterministic guess from the tool's name, description and schema."""

import pytest

from tools_app.mcp.discovery import infer_capabilities, infer_side_effects
from tools_app.registry import SideEffects

PATH_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


@pytest.mark.parametrize(
    ("name", "schema", "capabilities", "domain"),
    [
        ("filesystem.read_text_file", PATH_SCHEMA, {"READ", "FILE_READ"}, "file_operations"),
        (
            "filesystem.list_directory",
            PATH_SCHEMA,
            {"READ", "LIST", "FILE_READ", "FILE_LIST"},
            "file_operations",
        ),
        ("filesystem.move_file", {}, {"WRITE", "FILE_WRITE"}, "file_operations"),
        ("files.deleteFile", PATH_SCHEMA, {"WRITE", "DELETE", "FILE_WRITE"}, "file_operations"),
        ("fetch.fetch", {"properties": {"url": {}}}, {"WEB_FETCH"}, "web"),
        ("git.git_status", {"properties": {"repo_path": {}}}, {"READ", "GIT"}, "version_control"),
        ("git.git_commit", {}, {"WRITE", "GIT"}, "version_control"),
        ("time.get_current_time", {}, {"READ", "TIME"}, "time"),
        ("everything.echo", {}, {"ECHO"}, "testing"),
        ("db.run_sql", {}, {"EXECUTE", "DATABASE"}, "data"),
        ("search.web_search", {}, {"READ", "SEARCH", "WEB_FETCH"}, "web"),
    ],
)
def test_common_tools_get_the_capabilities_their_names_suggest(name, schema, capabilities, domain):
    assert infer_capabilities(name, "", schema) == (capabilities, domain)


def test_the_description_is_read_only_when_the_name_says_nothing():
    capabilities, _ = infer_capabilities(
        "misc.frobnicate", "Fetch a URL and return it as markdown. Then read it.", {}
    )

    assert capabilities == {"WEB_FETCH"}


def test_an_unknown_tool_is_general_in_its_servers_domain():
    assert infer_capabilities("weather.frobnicate", "Does things.", {}) == ({"GENERAL"}, "weather")
    assert infer_capabilities("frobnicate") == ({"GENERAL"}, "general")


def test_the_same_input_always_gives_the_same_answer():
    answers = {
        str(infer_capabilities("x.getUserFiles", "List them", PATH_SCHEMA)) for _ in range(5)
    }

    assert len(answers) == 1


def test_side_effects_follow_the_read_only_hint_then_the_capabilities():
    assert infer_side_effects({"WRITE"}, {"readOnlyHint": True}) == SideEffects.READ_ONLY
    assert infer_side_effects({"READ", "FILE_READ"}, {}) == SideEffects.READ_ONLY
    assert infer_side_effects({"EXECUTE"}, {}) == SideEffects.CODE_EXECUTION
    assert infer_side_effects({"WEB_FETCH"}, {}) == SideEffects.EXTERNAL
    assert infer_side_effects({"GENERAL"}, {}) == SideEffects.EXTERNAL

"""Rules narrowed to argument patterns: what each pattern kind fits (approvals.patterns)."""

import pytest

from agents_app.approvals.patterns import pattern_error, pattern_matches


@pytest.mark.parametrize(
    ("arguments", "fits"),
    [
        ({"url": "https://example.com/a?b=c"}, True),
        ({"url": "https://docs.example.com/x"}, True),
        ({"url": "https://badexample.com/x"}, False),
        ({"url": "https://example.com.evil.test/x"}, False),
        ({"url": "https://user@evil.test/?h=example.com"}, False),
        ({"urls": ["https://example.com/", "https://evil.test/"]}, False),
        ({"text": "no address at all"}, False),
        ({"url": "http://[::1"}, False),
    ],
)
def test_a_host_rule_fits_calls_that_reach_only_that_host(arguments, fits):
    assert pattern_matches("host", "example.com", arguments) is fits


@pytest.mark.parametrize(
    ("arguments", "fits"),
    [
        ({"path": "/srv/reports/q3.txt"}, True),
        ({"path": "/srv/reports"}, True),
        ({"path": "/srv/reports-old/q3.txt"}, False),
        ({"path": "/srv/reports/../secrets/key"}, False),
        ({"source": "/srv/reports/a", "destination": "/etc/passwd"}, False),
        ({"path": "relative/only.txt"}, False),
    ],
)
def test_a_path_prefix_rule_fits_calls_whose_every_path_is_under_it(arguments, fits):
    assert pattern_matches("path_prefix", "/srv/reports", arguments) is fits


@pytest.mark.parametrize(
    ("arguments", "fits"),
    [
        ({"argv": ["python3", "-m", "pytest", "-q"]}, True),
        ({"command": "python3 -m pytest tests"}, True),
        ({"argv": ["python3", "-c", "import os"]}, False),
        ({"command": "python3 -m pytestx"}, False),
        ({"command": "unbalanced 'quote"}, False),
        ({"code": "python3 -m pytest"}, False),
    ],
)
def test_a_command_rule_fits_commands_that_start_with_its_words(arguments, fits):
    assert pattern_matches("command", "python3 -m pytest", arguments) is fits


@pytest.mark.parametrize(
    ("kind", "pattern", "error"),
    [
        ("host", "example.com", ""),
        ("host", "https://example.com", "a host is a name"),
        ("path_prefix", "/", "a path prefix is an absolute path"),
        ("path_prefix", "/srv/../etc", "a path prefix is an absolute path"),
        ("path_prefix", "srv", "a path prefix is an absolute path"),
        ("command", "  ", "a pattern is 1 to 500"),
        ("command", "a 'b", "a command's words"),
        ("regex", ".*", "a pattern is one of"),
    ],
)
def test_a_pattern_that_cannot_be_a_rule_says_why(kind, pattern, error):
    assert pattern_error(kind, pattern).startswith(error)


def test_a_path_prefix_rule_fits_the_prefix_itself_given_alone():
    assert pattern_matches("path_prefix", "/srv", {"path": "/srv"}) is True
    assert pattern_matches("path_prefix", "/srv", {"path": "/etc"}) is False


def test_a_host_rule_is_not_thrown_off_by_a_file_name_beside_the_address():
    arguments = {"url": "https://example.com/a", "file": "notes.txt"}
    assert pattern_matches("host", "example.com", arguments) is True
    assert pattern_matches("host", "example.com", {**arguments, "mirror": "evil.test"}) is False

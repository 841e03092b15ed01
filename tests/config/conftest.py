"""Module fixtures here that start processes once for the tests of their module: test_go.py's
shared `go` (`module_go`) and test_security_settings.py's production process (`production`).
Under pytest-xdist the tests of each form a group that runs in one test process (see
tests/parallel.py), which starts it once instead of each process its own. The groups are marked
here, as tests/conftest.py marks its own, only when the groups are used: with `-p no:xdist` the
`xdist_group` marker is unknown, and --strict-markers refuses it."""

from pathlib import Path

import pytest

SHARING_FIXTURES = ("module_go", "production")
HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before tests/parallel.py reads the marks
def pytest_collection_modifyitems(config, items):
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.path.parent != HERE:
            continue
        for name in SHARING_FIXTURES:
            if name in item.fixturenames:
                item.add_marker(pytest.mark.xdist_group(f"{name}:{item.module.__name__}"))

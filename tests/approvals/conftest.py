import pytest

from tests.support.tools import FinishTool, ShellTool, make_registry


@pytest.fixture
def registry(send):
    return make_registry(send, ShellTool(), FinishTool())

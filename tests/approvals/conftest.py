import pytest

from tests.support.tools import FinishTool, SendTool, ShellTool, make_registry


@pytest.fixture
def send():
    return SendTool()


@pytest.fixture
def registry(send):
    return make_registry(send, ShellTool(), FinishTool())

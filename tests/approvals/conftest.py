import pytest

from tests.approvals.support import SendTool, ShellTool
from tests.support.runs import FinishTool, make_registry


@pytest.fixture
def send():
    return SendTool()


@pytest.fixture
def registry(send):
    return make_registry(send, ShellTool(), FinishTool())

import pytest

from agents_app.models import Webhook
from tests.support.webhooks import Receiver


@pytest.fixture
def receiver_factory():
    receivers: list[Receiver] = []

    def make(fail_first: int = 0, status: int = 204) -> Receiver:
        receiver = Receiver(fail_first, status).start()
        receivers.append(receiver)
        return receiver

    yield make
    for receiver in receivers:
        receiver.stop()


@pytest.fixture
def receiver(receiver_factory):
    return receiver_factory()


@pytest.fixture
def hook_for():
    def make(user, url, events=("run.finished",), **fields) -> Webhook:
        return Webhook.objects.create(owner=user, url=url, events=list(events), **fields)

    return make

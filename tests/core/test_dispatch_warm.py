"""Warming the task queue (what daphne does as it starts, config/asgi.py): the app is finalised
and a broker that cannot be reached is logged, never raised: the web process starts all the
same and its first task tries again."""

from celery import current_app

from agents_app.core import dispatch


def test_warming_with_the_broker_down_logs_a_warning_and_raises_nothing(monkeypatch):
    def unreachable():
        raise ConnectionRefusedError("Connection refused")

    warnings = []
    monkeypatch.setattr(current_app, "producer_or_acquire", unreachable)
    monkeypatch.setattr(dispatch.logger, "warning", lambda message, **_: warnings.append(message))

    dispatch.warm()

    assert warnings == ["could not reach the broker yet; the first task will try again"]
    assert current_app.finalized
    assert "agents_app.tasks.execute_run" in current_app.tasks


def test_the_web_process_warms_its_task_queue_as_it_starts(monkeypatch):
    import importlib
    import threading

    import config.asgi

    warmed = threading.Event()
    monkeypatch.setattr(dispatch, "warm", warmed.set)
    importlib.reload(config.asgi)

    assert warmed.wait(5)

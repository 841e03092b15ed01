"""The live stacks the tests share, and the queue each test sends its runs to.

A test process has one live stack (daphne + a Celery worker, both on the test database, with
the scripted LLM), started piece by piece when a test first asks for it (`live_stack`) and
stopped at the end of the session: the browser tests use it. A browser module that needs other
settings for its processes (`STACK_ENV`) gets a stack of its own, and the tests of a module of
`shared_worker` tests share a worker of the module's own (a worker keeps what it learned of the
scripted LLM between tasks). Tests that kill, pause or reconfigure a worker start their own
(`start_worker`), and stop any live shared worker first: it would connect to their MCP servers.

Queues keep them apart. Each stack reads a queue of its own; a test process sends its runs to
its base queue (CELERY_QUEUE, read only by the workers a test starts itself), except while a
test of a stack runs: then to that stack's queue (`sending_to`). So a run a test queues reaches
the workers that test chose, whatever else lives in the process.

A test on a shared stack must leave what outlives its rows as it found it: the kill switch,
YOLO grants, MCP servers, approval rules and the Redis keys of the control plane
(`GlobalState`, checked when the test ends).
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from celery import current_app

from tests.support.processes import stop_all
from tests.support.web import WebServer
from tests.support.worker import Worker


def base_queue() -> str:
    return os.environ["CELERY_QUEUE"]


def stack_queue(module=None) -> str:
    """The queue of the session's stack, or of `module`'s own stack."""
    suffix = module.__name__.rsplit(".", 1)[-1] if module is not None else "stack"
    return f"{base_queue()}-{suffix}"


def own_stack(module) -> bool:
    """Whether `module`'s tests need processes of their own settings, not the session's."""
    return hasattr(module, "STACK_ENV") or hasattr(module, "module_worker_env")


def stack_env(llm_server, queue: str, **more: str) -> dict[str, str]:
    return {
        "LLM_BASE_URL": llm_server.base_url,
        "LLM_MODEL": "scripted",
        "CELERY_QUEUE": queue,
        # Overdue approvals are decided by their own timer messages, as with a worker started
        # by the test: a long-lived worker's periodic sweep must not decide them instead.
        "APPROVAL_SWEEP_INTERVAL": "0",
        **more,
    }


@contextmanager
def sending_to(queue: str) -> Iterator[None]:
    """Runs this process queues go to `queue` until the block ends."""
    conf = current_app.conf
    before = conf.task_default_queue
    conf.task_default_queue = queue
    try:
        yield
    finally:
        conf.task_default_queue = before


@dataclass(eq=False)  # one object per stack: kept in a set
class Stack:
    """daphne and a worker on one queue, each started when first asked for."""

    live: "ClassVar[set[Stack]]" = set()  # this process's stacks with a worker running

    log_dir: Path
    env: dict[str, str]
    name: str
    llm: object = None
    _web: WebServer | None = None
    _worker: Worker | None = None
    workers_started: int = 0

    @property
    def queue(self) -> str:
        return self.env["CELERY_QUEUE"]

    @property
    def web(self) -> WebServer:
        if self._web is None:
            self._web = WebServer(self.log_dir, **self.env).start()
        return self._web

    @property
    def url(self) -> str:
        return self.web.url

    @property
    def worker(self) -> Worker:
        return self.running()

    def running(self) -> Worker:
        if self._worker is None or self._worker.process.poll() is not None:
            self.workers_started += 1
            name = f"{self.name}-{self.workers_started}"
            self._worker = Worker(name, self.log_dir, **self.env).start()
            Stack.live.add(self)
        return self._worker

    def kill(self) -> None:
        """For a worker that may still be working: nothing it does can reach a later test.
        The next test that asks gets a fresh one."""
        if self._worker is not None:
            self._worker.kill()
            self._worker = None

    def restart_worker(self) -> None:
        self.kill()
        self.running()

    def stop(self) -> None:
        stop_all([p for p in (self._worker, self._web) if p is not None])
        self._worker = self._web = None
        Stack.live.discard(self)

    @classmethod
    def stop_workers(cls) -> None:
        """Stop every stack's worker (their daphnes go on); each starts again when asked."""
        stop_all([stack._worker for stack in cls.live if stack._worker is not None])
        for stack in cls.live:
            stack._worker = None
        cls.live.clear()


@dataclass(frozen=True)
class GlobalState:
    """What outlives a test's rows on a shared stack, as the stack's processes see it."""

    kill_switch_engaged: bool
    yolo_users: int
    mcp_servers: tuple[str, ...]
    approval_rules: int
    control_keys: tuple[str, ...]

    @classmethod
    def read(cls) -> "GlobalState":
        import redis
        from django.conf import settings

        from agents_app.core.watch import KILL_SWITCH_KEY
        from agents_app.models import ApprovalRule, KillSwitch, UserPreferences
        from tools_app.models import MCPServer

        client = redis.Redis.from_url(settings.REDIS_URL)
        try:
            # The run keys are each run's own (a flushed run's key names no row); the rest
            # is the control plane every run reads.
            keys = sorted(
                k.decode()
                for k in client.scan_iter("agentdesk:*")
                if not k.startswith(b"agentdesk:control:run:") and k != KILL_SWITCH_KEY.encode()
            )
        finally:
            client.close()
        return cls(
            kill_switch_engaged=KillSwitch.objects.filter(engaged=True).exists(),
            yolo_users=UserPreferences.objects.filter(yolo=True).count(),
            mcp_servers=tuple(
                MCPServer.objects.filter(enabled=True)
                .order_by("name")
                .values_list("name", flat=True)
            ),
            approval_rules=ApprovalRule.objects.count(),
            control_keys=tuple(keys),
        )

    def changes(self, after: "GlobalState") -> list[str]:
        return [
            f"{name}: {getattr(self, name)!r} -> {getattr(after, name)!r}"
            for name in self.__dataclass_fields__
            if getattr(self, name) != getattr(after, name)
        ]

"""Each process that executes runs opens its MCP sessions as it starts, not at its first run.

So the servers in the admin or mcp_config.json show their real status (active with their tools,
or broken with the reason) seconds after a worker starts, and `/api/v1/tools` lists their tools
before any run. Starting the pool only starts its thread: the connections are made in the
background, so the process takes runs at once and a server that is down is recorded broken
without holding anything up. `execute_run` still calls `ensure_pool`, which finds it started.

Where tasks run decides where the pool starts: a prefork worker's children (after the fork:
threads do not survive one) and the solo pool get `worker_process_init`; a threads, gevent or
eventlet worker runs tasks in its main process, which gets `worker_ready`. A prefork worker's
main process executes nothing and opens no sessions.
"""

import logging
from typing import Any

from celery.concurrency.prefork import TaskPool as PreforkPool

logger = logging.getLogger(__name__)


def mcp_pool_start() -> None:
    """Start this process's MCP pool without waiting for any server. Never raises: a worker
    that cannot start it still takes runs (which try again through `ensure_pool`)."""
    from tools_app.mcp.client import ensure_pool
    from tools_app.process_registry import get_registry

    try:
        ensure_pool(get_registry())
    except Exception:
        logger.exception("MCP: could not start this worker process's server connections")


def on_worker_process_init(**kwargs: Any) -> None:
    mcp_pool_start()


def on_worker_ready(sender: Any = None, **kwargs: Any) -> None:
    if not isinstance(getattr(sender, "pool", None), PreforkPool):
        mcp_pool_start()

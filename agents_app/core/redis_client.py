"""One Redis client per URL for the web process's small reads and writes (throttle counters,
stream slots), on a pool that waits for a free connection.

Under daphne every request's sync code runs in a thread of its own, so hundreds of requests
arriving at once ask for a connection at once: with redis-py's default pool the 101st fails
with MaxConnectionsError (and a throttle that fails open stops throttling). Here they queue for
one of POOL_SIZE connections for up to POOL_WAIT_SECONDS. redis-py's pool notices a fork and
opens new connections in the child.
"""

from functools import lru_cache

import redis

POOL_SIZE = 20
POOL_WAIT_SECONDS = 10.0
SOCKET_TIMEOUT_SECONDS = 5.0


@lru_cache(maxsize=4)
def shared_redis(url: str) -> redis.Redis:
    pool = redis.BlockingConnectionPool.from_url(
        url,
        max_connections=POOL_SIZE,
        timeout=POOL_WAIT_SECONDS,
        socket_timeout=SOCKET_TIMEOUT_SECONDS,
        socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
    )
    return redis.Redis(connection_pool=pool)

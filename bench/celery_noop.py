"""The raw Celery task bench/throughput.py measures AgentDesk's runs beside: it only counts
itself in Redis. A worker loads it with `-I bench.celery_noop`."""

import redis
from celery import shared_task
from django.conf import settings

COUNTER = "agentdesk:bench:noop-done"


@shared_task(name="bench.noop", ignore_result=True, acks_late=True)
def noop() -> None:
    redis.Redis.from_url(settings.REDIS_URL).incr(COUNTER)

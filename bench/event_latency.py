"""How long an event takes from its commit to a WebSocket client, beside a raw Redis pub/sub
round trip measured in the same run.

    uv run python bench/event_latency.py [--events 1000] [--warmup 200]

The event path is the engine's: a RunEvent committed through run_writer.locked_run, published
on commit to the channel layer (Redis) by the process's sender thread, picked up by a real daphne process running the JSON
consumer, and received by a real WebSocket client. Events go one at a time, so the figures are
latency, not queueing. Timed from the commit (its first on-commit callback), and also from before
the transaction that writes the event. SQLite + an embedded Valkey in a temporary directory unless
DATABASE_URL / REDIS_URL are set.
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import threading
import time

from harness import ROOT, start_django  # noqa: E402


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return statistics.median(ordered), p99


def redis_round_trips(url: str, count: int) -> list[float]:
    import redis

    client = redis.Redis.from_url(url)
    pubsub = client.pubsub()
    pubsub.subscribe("bench-latency")
    pubsub.get_message(timeout=1.0)  # the subscribe confirmation
    samples = []
    for i in range(count):
        started = time.perf_counter()
        client.publish("bench-latency", str(i))
        while True:
            message = pubsub.get_message(timeout=5.0)
            if message and message["type"] == "message":
                break
        samples.append((time.perf_counter() - started) * 1000)
    pubsub.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()

    _, valkey = start_django("latency")
    import websockets
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from agents_app.models import ApiKey, Run, Task
    from agents_app.runs.writer import locked_run
    from tests.support.processes import free_port

    user, _ = get_user_model().objects.get_or_create(username="latency-bench")
    task = Task.objects.create(owner=user, text="latency benchmark")
    run = Run.objects.create(task=task, owner=user, max_tokens=1, max_tool_calls=1)
    raw_key = ApiKey.generate()
    key = ApiKey(user=user, name="bench")
    key.set_key(raw_key)
    key.save()

    port = free_port()
    daphne = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "config.asgi:application",
        ],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    received: dict[int, float] = {}
    arrived = threading.Condition()
    ready = threading.Event()

    async def listen() -> None:
        url = f"ws://127.0.0.1:{port}/ws/api/runs/{run.pk}/"
        for _ in range(600):  # a minute: daphne imports the whole app first
            try:
                connection = await websockets.connect(
                    url, additional_headers={"Authorization": f"Bearer {raw_key}"}
                )
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            raise RuntimeError("daphne did not start")
        ready.set()
        import json

        async with connection:
            while True:
                message = json.loads(await connection.recv())
                now = time.perf_counter()
                with arrived:
                    received[message["seq"]] = now
                    arrived.notify_all()
                if message["seq"] >= args.warmup + args.events:
                    return

    listener = threading.Thread(target=lambda: asyncio.run(listen()), daemon=True)
    listener.start()
    if not ready.wait(90):
        raise RuntimeError("no WebSocket connection")
    time.sleep(0.5)  # let the consumer join its group

    samples, whole = [], []
    committed: list[float] = []
    try:
        # The first events, unmeasured: daphne's first messages pay for its imports and the
        # connections it opens (some 50 events of 5-40 ms on the 2-core machine).
        for _ in range(args.warmup + args.events):
            started = time.perf_counter()
            with locked_run(run.pk) as w:
                # Runs first of the commit's callbacks, before the publish: the commit's moment.
                transaction.on_commit(lambda: committed.append(time.perf_counter()))
                seq = w.event("bench", {}).seq
            with arrived:
                if not arrived.wait_for(lambda seq=seq: seq in received, timeout=10):
                    raise RuntimeError(f"event {seq} never arrived")
            if seq > args.warmup:
                samples.append((received[seq] - committed[-1]) * 1000)
                whole.append((received[seq] - started) * 1000)
    finally:
        daphne.terminate()
        daphne.wait(10)

    redis_samples = redis_round_trips(os.environ["REDIS_URL"], args.events)
    p50, p99 = percentiles(samples)
    w50, w99 = percentiles(whole)
    r50, r99 = percentiles(redis_samples)
    from django.db import connection

    print(
        f"event_latency: {args.events} events after {args.warmup} unmeasured, "
        f"{connection.vendor} + Redis, daphne + WebSocket client"
    )
    verdict = "met" if p99 <= 5 else "not met"
    print(
        f"  commit → WebSocket client   p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   "
        f"target p99 <= 5 ms: {verdict}"
    )
    print(f"  write + commit → client     p50 {w50:7.2f} ms   p99 {w99:7.2f} ms")
    print(f"  raw Redis pub/sub round trip p50 {r50:7.2f} ms   p99 {r99:7.2f} ms")
    if valkey is not None:
        valkey.stop()


if __name__ == "__main__":
    main()

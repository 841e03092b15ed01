"""Reading server-sent event streams in-process (Django's AsyncClient)."""

import asyncio

from django.test import AsyncClient


def parse(stream_text: str) -> list[dict]:
    """The events of a stream's text, each as its fields ({"id", "event", "data"})."""
    events = []
    for block in stream_text.split("\n\n"):
        fields = dict(
            line.split(": ", 1)
            for line in block.splitlines()
            if ": " in line and not line.startswith(":")
        )
        if "event" in fields:
            events.append(fields)
    return events


async def read_stream(response, during=None, timeout: float = 10.0) -> str:
    """The whole text of a stream that ends within `timeout`; `during` (a coroutine function)
    runs once the stream has sent its first event, so what it commits arrives live."""
    chunks = []

    async def consume():
        async for chunk in response.streaming_content:
            chunks.append(chunk.decode() if isinstance(chunk, bytes) else chunk)

    task = asyncio.ensure_future(consume())
    if during is not None:
        # Once the stream has sent an event it has subscribed and read its backlog: what
        # `during` adds now reaches it live.
        for _ in range(int(timeout / 0.01)):
            if any("\nevent: " in chunk for chunk in chunks):
                break
            await asyncio.sleep(0.01)
        await during()
    await asyncio.wait_for(task, timeout)
    return "".join(chunks)


async def open_stream(run_id: int, authorization: bytes | str, after: int = 0):
    """GET the run's events as a stream with an API key's Authorization header."""
    if isinstance(authorization, bytes):
        authorization = authorization.decode()
    return await AsyncClient().get(
        f"/api/v1/runs/{run_id}/events?after={after}",
        headers={"Accept": "text/event-stream", "Authorization": authorization},
    )

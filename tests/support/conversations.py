"""Following a conversation's WebSockets in-process and reading what they sent: the API socket
with a key, the page socket with a session, messages of one type, transcript rows."""

from channels.testing import WebsocketCommunicator

from config.asgi import application
from tests.support.sockets import receive_json


def api_socket(conversation_id: int, auth: bytes | None, after: int = 0) -> WebsocketCommunicator:
    headers = [(b"authorization", auth)] if auth else []
    return WebsocketCommunicator(
        application, f"/ws/api/conversations/{conversation_id}/?after={after}", headers=headers
    )


def page_socket(conversation_id: int, headers, after: int = 0) -> WebsocketCommunicator:
    return WebsocketCommunicator(
        application, f"/ws/conversations/{conversation_id}/?after={after}", headers=headers
    )


async def receive_until(socket: WebsocketCommunicator, done, timeout: float = 10.0) -> list[dict]:
    """Messages until one satisfies `done` (included)."""
    messages = []
    while True:
        message = await receive_json(socket, timeout)
        messages.append(message)
        if done(message):
            return messages


def idle(message: dict) -> bool:
    """The answer message saying no answer runs any more."""
    return message["type"] == "answer" and message["run_id"] is None


def of_type(messages: list[dict], kind: str) -> list[dict]:
    return [m for m in messages if m["type"] == kind]


def rows_sent(messages: list[dict]) -> list[tuple[int, str, str]]:
    """(seq, kind, text) of the entry messages, as `rows_stored` gives the table's."""
    return [(m["entry"]["seq"], m["entry"]["kind"], m["entry"]["text"]) for m in messages]


def rows_stored(conversation) -> list[tuple[int, str, str]]:
    from agents_app.conversations.selectors import transcript

    return [(e.seq, e.kind, e.text) for e in transcript(conversation)]

"""The demo model's HTTP server: OpenAI chat completions (streamed or whole), `/v1/models` and
llama.cpp's `/props`, answered by `demo_reply`. `uv run go` starts it as a child when neither
LLM_BASE_URL nor LOCAL_MODEL is set; by hand: `python -m agents_app.demo.server --port 8103`.

Streamed answers come in word-sized pieces a few milliseconds apart, so a page shows the demo's
reasoning and answers arriving as a model's would.
"""

import argparse
import json
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents_app.demo import DEMO_MODEL_NAME, wire
from agents_app.demo.replies import demo_reply

HOST = "127.0.0.1"
DEFAULT_PORT = 8103
PIECE_DELAY = 0.02  # seconds between streamed pieces
PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}
CHARS_PER_TOKEN = 4


def _tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def _usage_of(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, int]:
    """Tokens as a model would count them, about: a few characters each."""
    written = (reply.get("content") or "") + (reply.get("reasoning") or "")
    written += json.dumps(reply.get("tool_calls") or [])
    return {
        "prompt_tokens": _tokens(json.dumps(body.get("messages") or [])),
        "completion_tokens": _tokens(written),
    }


class DemoServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, host: str = HOST, port: int = DEFAULT_PORT, delay: float = PIECE_DELAY):
        super().__init__((host, port), _Handler)
        self.delay = delay
        self.stopping = threading.Event()

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: DemoServer
    server_version = "AgentDeskDemo/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            entry = wire.model_entry(DEMO_MODEL_NAME, "agentdesk")
            self._send_json(200, {"object": "list", "data": [entry]})
        elif path == "/props":
            self._send_json(200, PROPS)
        elif path in ("/health", ""):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, wire.error_body(f"no route GET {path}", "not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, wire.error_body(f"no route POST {path}", "not_found"))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("expected a JSON object")
        except ValueError as exc:
            self._send_json(400, wire.error_body(f"request body is not JSON: {exc}"))
            return
        reply = demo_reply(body)
        reply = {**reply, "usage": _usage_of(body, reply)}
        try:
            if body.get("stream"):
                self._stream(reply, bool((body.get("stream_options") or {}).get("include_usage")))
            else:
                self._send_json(200, wire.completion(reply, reply["usage"], DEMO_MODEL_NAME))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped listening (a Stop): nothing to finish

    def _stream(self, reply: dict[str, Any], include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        completion_id = wire.new_completion_id()

        def send(delta: dict[str, Any], finish: str | None = None, pause: bool = True) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            data = wire.chunk(completion_id, [choice], DEMO_MODEL_NAME)
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            if pause and self.server.delay:
                self.server.stopping.wait(self.server.delay)

        send({"role": "assistant", "content": ""}, pause=False)
        for piece in wire.pieces(reply.get("reasoning", ""), count=12):
            send({"reasoning_content": piece})
        for piece in wire.pieces(reply.get("content") or "", count=16):
            send({"content": piece})
        tool_calls = reply.get("tool_calls") or []
        for index, call in enumerate(tool_calls):
            for delta in wire.tool_call_deltas(index, call):
                send(delta)
        send({}, "tool_calls" if tool_calls else "stop", pause=False)
        if include_usage:
            usage = wire.usage(reply, reply["usage"])
            data = wire.chunk(completion_id, [], DEMO_MODEL_NAME, usage=usage)
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--delay", type=float, default=PIECE_DELAY, help="seconds per piece")
    args = parser.parse_args(argv)
    server = DemoServer(args.host, args.port, args.delay)
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
    ).start()
    print(f"demo model: LLM_BASE_URL={server.base_url}", flush=True)
    stopped.wait()
    server.stopping.set()
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()

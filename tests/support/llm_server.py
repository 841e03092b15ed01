"""A scripted stand-in for an LLM: a local HTTP server speaking the OpenAI chat-completions protocol.

Tests script it in-process (`server.script([...])`) or over HTTP (`POST /_script`) when the
code under test runs in another process, such as a Celery worker; `GET /_timeline?match=TEXT`
gives [came, answered] (time.monotonic(), answered null while in flight) of each request
whose messages hold TEXT. The script format (rules,
replies, matching) is the one of tests/support/script.py, which the in-process provider
(scripted_provider.py) shares: a reply's `content` is streamed in a few pieces, `reasoning` as
`reasoning_content` deltas before it.

Server options (`script(rules, options={...})`) imitate servers with fewer features:
reject_json_schema, reject_response_format, reject_tools, reject_stream_options (each a 400
naming the feature), vague_errors (the 400 says only "Bad Request"), and props (what GET /props
answers, as llama.cpp reports its chat template's capabilities there; by default that it can
call tools, None for no report).

Standalone: `python -m tests.support.llm_server --port 8199 [--script file.json]` serves
DEMO_SCRIPT (tests/support/demo_script.py, which answers according to the task) or the file
(a list of rules or {"rules": [...], "options": {...}}) until killed.
"""

import argparse
import contextlib
import copy
import json
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agents_app.demo import wire
from agents_app.demo.replies import DEMO_SCRIPT
from tests.support.script import DEFAULT_USAGE, Script, messages_text, no_reply_message

_REJECTIONS = {
    "reject_stream_options": "stream_options is not supported by this server",
    "reject_tools": "tools are not supported by this server",
    "reject_response_format": "response_format is not supported by this server",
    "reject_json_schema": "response_format type 'json_schema' is not supported; use 'json_object'",
}


# What GET /props answers unless the script's options say otherwise (None: 404, no report):
# a server whose chat template can call tools, as llama.cpp reports it.
DEFAULT_PROPS = {"chat_template_caps": {"supports_tools": True, "supports_tool_calls": True}}


class _Listener(ThreadingHTTPServer):
    # socketserver's backlog is 5: a burst of a hundred runs asking at once overflowed it, and
    # the kernel dropped connections (a reset, or a SYN retried a second later), which a real
    # model server's listener does not do.
    request_queue_size = 1024


class ScriptedLLMServer:
    """Start with `start()`, script with `script()`, read `requests`, end with `stop()`."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._script = Script()
        self._options: dict[str, Any] = {}
        self._requests: list[dict[str, Any]] = []
        self._timeline: list[tuple[str, float, float | None]] = []
        # How many requests reached each named meeting (a reply's `meet`), and the condition
        # those that wait for the others wait on.
        self._meetings: dict[str, int] = {}
        self._released: set[str] = set()  # the holds a test released (a reply's `hold`)
        self._resets = 0  # a reset lets go of every held request
        self._met = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd = _Listener((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def start(self) -> "ScriptedLLMServer":
        # A short poll interval keeps stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="scripted-llm",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        with self._met:
            self._met.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "ScriptedLLMServer":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def script(self, rules: list[dict[str, Any]], options: dict[str, Any] | None = None) -> None:
        """Replace the rules and options; the recorded requests are kept."""
        script = Script(rules)
        with self._lock:
            self._script = script
            self._options = dict(options or {})

    def reset(self) -> None:
        """Forget the rules, options and recorded requests."""
        with self._lock:
            self._script, self._options, self._requests = Script(), {}, []
            self._timeline, self._meetings, self._released = [], {}, set()
            self._resets += 1
            self._met.notify_all()

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every chat-completion body received, oldest first (rejected ones included)."""
        with self._lock:
            return copy.deepcopy(self._requests)

    @property
    def timeline(self) -> list[tuple[str, float, float | None]]:
        """When each request came and was answered (time.monotonic(); None: not yet), with
        the text of its messages, oldest first: what ran at the same time."""
        with self._lock:
            return list(self._timeline)

    def peak_in_flight(self) -> int:
        """The most chat-completion requests this server has held at once since its last
        reset (benchmarks read it over `GET /_in_flight`)."""
        marks = sorted(
            mark
            for _, came, answered in self.timeline
            for mark in ((came, 1), (answered if answered is not None else float("inf"), -1))
        )
        peak = current = 0
        for _, change in marks:
            current += change
            peak = max(peak, current)
        return peak

    def _record(self, body: dict[str, Any]) -> int:
        with self._lock:
            self._requests.append(copy.deepcopy(body))
            self._timeline.append(
                (messages_text(body.get("messages") or []), time.monotonic(), None)
            )
            return len(self._timeline) - 1

    def _answered(self, number: int) -> None:
        with self._lock:
            if number < len(self._timeline):
                text, came, _ = self._timeline[number]
                self._timeline[number] = (text, came, time.monotonic())

    def _meet(self, meeting: dict[str, Any]) -> bool:
        """Wait until `parties` requests reached the meeting `name`, at most `timeout` seconds
        (30 by default); whether they all came. Requests that only overlap when they run at
        the same time are held until the others are in flight too, however late one starts."""
        name, parties = str(meeting["name"]), int(meeting["parties"])
        with self._met:
            self._meetings[name] = self._meetings.get(name, 0) + 1
            self._met.notify_all()
            return self._met.wait_for(
                lambda: self._meetings.get(name, 0) >= parties or self._stopping.is_set(),
                timeout=float(meeting.get("timeout", 30)),
            )

    def release(self, name: str) -> None:
        """Let the requests held by `hold: name` answer, and any that reach it later."""
        with self._met:
            self._released.add(name)
            self._met.notify_all()

    def _hold(self, name: str) -> None:
        with self._met:
            resets = self._resets
            self._met.wait_for(
                lambda: name in self._released or self._resets != resets or self._stopping.is_set(),
                timeout=60,
            )

    def _rejection(self, body: dict[str, Any]) -> str | None:
        with self._lock:
            options = dict(self._options)
        response_format = body.get("response_format")
        rejected = {
            "reject_stream_options": "stream_options" in body,
            "reject_tools": bool(body.get("tools")),
            "reject_response_format": response_format is not None,
            "reject_json_schema": isinstance(response_format, dict)
            and response_format.get("type") == "json_schema",
        }
        for option, message in _REJECTIONS.items():
            if options.get(option) and rejected[option]:
                return "Bad Request" if options.get("vague_errors") else message
        return None

    def _next_reply(self, body: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            return self._script.reply_to(body.get("messages") or [])


class _Handler(BaseHTTPRequestHandler):
    server_version = "ScriptedLLM/1.0"

    @property
    def scripted(self) -> ScriptedLLMServer:
        return self.server.scripted  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- routing --------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [wire.model_entry()]})
        elif path == "/props" and self.scripted._options.get("props", DEFAULT_PROPS):
            self._send_json(200, self.scripted._options.get("props", DEFAULT_PROPS))
        elif path == "/_requests":
            self._send_json(200, {"requests": self.scripted.requests})
        elif path == "/_in_flight":
            self._send_json(200, {"peak": self.scripted.peak_in_flight()})
        elif path == "/_timeline":
            # [came, answered] of each request whose messages hold every `match` given
            # (bench/concurrency.py reads it: what ran at the same time, and when).
            needles = parse_qs(urlsplit(self.path).query).get("match", [])
            windows = [
                [came, answered]
                for text, came, answered in self.scripted.timeline
                if all(needle in text for needle in needles)
            ]
            self._send_json(200, {"timeline": windows})
        else:
            self._send_json(404, wire.error_body(f"no route GET {path}", "not_found"))

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        try:
            body = self._read_json()
        except ValueError as exc:
            self._send_json(400, wire.error_body(f"request body is not JSON: {exc}"))
            return
        try:
            if path in ("/v1/chat/completions", "/chat/completions"):
                self._chat_completion(body)
            elif path == "/_script":
                self.scripted.script(body.get("rules", []), body.get("options"))
                self._send_json(200, {"ok": True})
            elif path == "/_reset":
                self.scripted.reset()
                self._send_json(200, {"ok": True})
            else:
                self._send_json(404, wire.error_body(f"no route POST {path}", "not_found"))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer
        except ValueError as exc:
            self._send_json(400, wire.error_body(str(exc)))

    # --- chat completions -----------------------------------------------------------------

    def _chat_completion(self, body: dict[str, Any]) -> None:
        number = self.scripted._record(body)
        try:
            self._answer(body)
        finally:
            self.scripted._answered(number)

    def _answer(self, body: dict[str, Any]) -> None:
        rejection = self.scripted._rejection(body)
        if rejection is not None:
            self._send_json(400, wire.error_body(rejection))
            return
        reply = self.scripted._next_reply(body)
        if callable(reply):
            reply = reply(body)  # computed from the request (the demo, demo_script.py)
        if reply is None:
            message = no_reply_message(body.get("messages") or [])
            self._send_json(500, wire.error_body(message, "server_error"))
            return
        if reply.get("meet"):
            self.scripted._meet(reply["meet"])
        if reply.get("hold"):
            self.scripted._hold(str(reply["hold"]))
        if reply.get("delay") and self.scripted._stopping.wait(float(reply["delay"])):
            return
        if reply.get("drop"):
            self._drop()
            return
        if "raise" in reply:
            # An in-process failure (LLMError(CODE)); over the wire it can only be a 500.
            message = f"scripted {reply['raise']}: {reply.get('message', 'scripted failure')}"
            self._send_json(500, wire.error_body(message, "server_error"))
            return
        if "status" in reply:
            headers = {}
            if "retry_after" in reply:
                headers["Retry-After"] = str(reply["retry_after"])
            message = reply.get("error") or f"scripted error {reply['status']}"
            # A gateway that echoes the key it was sent (script.py: `error`).
            message = message.replace("{authorization}", self.headers.get("Authorization", ""))
            self._send_json(int(reply["status"]), wire.error_body(message), headers)
            return
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, include_usage)
        else:
            self._send_json(200, wire.completion(reply, DEFAULT_USAGE))

    def _stream(self, reply: dict[str, Any], include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk_delay = float(reply.get("chunk_delay", 0))
        completion_id = wire.new_completion_id()

        def send(data: str) -> None:
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()
            if chunk_delay:
                self.scripted._stopping.wait(chunk_delay)

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            send(json.dumps(wire.chunk(completion_id, [choice])))

        chunk({"role": "assistant", "content": ""})
        # `reasoning_field`: the delta's name for it ("reasoning" on some servers).
        for piece in wire.pieces(reply.get("reasoning", "")):
            chunk({reply.get("reasoning_field", "reasoning_content"): piece})
        if reply.get("garbled"):
            send('{"id": "broken", "choices": [{"delta": {"content": "unterminated')
            return
        # `before_chunk`: {i: function} called (in the server's thread) just before content
        # piece i is sent, once the pieces before it were.
        before = reply.get("before_chunk") or {}
        for i, piece in enumerate(reply.get("chunks") or wire.pieces(reply.get("content", ""))):
            if i in before:
                before[i]()
            chunk({"content": piece})
        if reply.get("truncate"):
            return
        tool_calls = reply.get("tool_calls") or []
        for index, call in enumerate(tool_calls):
            for delta in wire.tool_call_deltas(index, call):
                chunk(delta)
        chunk({}, reply.get("finish_reason") or ("tool_calls" if tool_calls else "stop"))
        if include_usage:
            send(json.dumps(wire.chunk(completion_id, [], usage=wire.usage(reply, DEFAULT_USAGE))))
        send("[DONE]")

    # --- plumbing -------------------------------------------------------------------------

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        body = json.loads(raw or b"{}")
        if not isinstance(body, dict):
            raise ValueError("expected a JSON object")
        return body

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8199)
    parser.add_argument("--script", help="JSON file: a list of rules or {rules, options}")
    args = parser.parse_args(argv)

    rules, options = DEMO_SCRIPT, {}
    if args.script:
        with open(args.script, encoding="utf-8") as handle:
            loaded = json.load(handle)
        if isinstance(loaded, list):
            rules = loaded
        else:
            rules, options = loaded.get("rules", []), loaded.get("options", {})

    server = ScriptedLLMServer(args.host, args.port)
    server.script(rules, options)
    server.start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    print(f"scripted LLM server: LLM_BASE_URL={server.base_url}", flush=True)
    try:
        while not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()

"""A local webhook receiver: records every request, can answer 500 the first N times."""

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    def __init__(self, fail_first: int = 0, status: int = 204):
        self.fail_first = fail_first
        self.status = status
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver._lock:
                    receiver.requests.append(Received(self.path, dict(self.headers), body))
                    failing = len(receiver.requests) <= receiver.fail_first
                status = 500 if failing else receiver.status
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", receiver.url)  # back here, to be followed or not
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval: stop() waits for serve_forever to notice (0.5 s by default).
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def start(self) -> "Receiver":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

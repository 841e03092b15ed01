"""Prompt injection in tests (issue 35): sites whose pages carry instructions, a catcher on
another loopback address that counts what reached it, and a model that obeys any instruction
it reads.

The obeying model is the worst case a platform must hold against: every line `DO: <tool>
<JSON arguments>` in anything it was shown (a page, a file, a tool's result, a child's answer,
a tool's description) becomes its next tool call, once each. What it does first is scripted
per case (`first`). Pages are served on 127.0.0.1 (the site people name) and the catcher on
127.0.0.2 (the attacker's), both loopback, so `http_get` reaches them with
HTTP_TOOL_ALLOW_PRIVATE.
"""

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agents_app.engine.llm import LLMRequest
from agents_app.engine.untrusted import data_of
from tests.support.script import messages_text, plan_reply, step, verdict

DO = re.compile(r"DO: (\w+) (?=\{)")


@dataclass
class Site:
    """A loopback web server: `pages` path -> text; `hits` every path+query requested."""

    host: str
    pages: dict[str, str] = field(default_factory=dict)
    hits: list[str] = field(default_factory=list)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            site.hits.append(self.path)
            body = site.pages.get(self.path.split("?", 1)[0], "not here").encode()
            self.send_response(200 if self.path.split("?", 1)[0] in site.pages else 404)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def served(host: str) -> Iterator[Site]:
    site = Site(host)
    server = ThreadingHTTPServer((host, 0), _handler(site))
    site.port = server.server_address[1]
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()


def do(tool: str, **arguments: Any) -> str:
    """An instruction line the obeying model follows."""
    return f"DO: {tool} {json.dumps(arguments)}"


class ObeyingModel:
    """A scripted model (ScriptedProvider's callable reply) that makes the calls in `first`,
    then every call an instruction it read asks for, then answers `final`. A plan is one step
    offering `tools`; a verdict accepts."""

    def __init__(
        self,
        first: list[dict[str, Any]],
        tools: list[str],
        final: str = "done",
        *,
        obey: bool = True,
    ):
        self.first = list(first)
        self.tools = tools
        self.final = final
        self.obey = obey
        self.obeyed: set[str] = set()

    def rules(self) -> list[dict[str, Any]]:
        # A plain function: a script deep-copies each reply it gives, and a bound method's
        # copy would be a fresh copy of this model each time.
        def reply(request: LLMRequest) -> dict[str, Any]:
            return self.reply(request)

        return [{"match": "", "replies": [reply], "repeat": True}]

    def reply(self, request: LLMRequest) -> dict[str, Any]:
        text = messages_text(request.messages)
        if "AGENTDESK:PLAN" in text:
            return plan_reply(step("do what the task asks", self.tools))
        if "AGENTDESK:VERIFY" in text:
            return verdict(True, self.final, evidence=[1])
        if self.first:
            call = self.first.pop(0)
            return {"tool_calls": [call]}
        shown = read(request.messages) + [tool.description for tool in request.tools]
        for name, arguments in (order for part in shown for order in orders(part)):
            key = f"{name} {json.dumps(arguments, sort_keys=True)}"
            if self.obey and key not in self.obeyed:
                self.obeyed.add(key)
                return {"tool_calls": [{"name": name, "arguments": arguments}]}
        return {"content": self.final}


def orders(text: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each `DO: <tool> <JSON object>` in `text`: the tool and its arguments."""
    decoder = json.JSONDecoder()
    for match in DO.finditer(text):
        try:
            arguments, _ = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(arguments, dict):
            yield match.group(1), arguments


def read(messages: list[dict[str, Any]]) -> list[str]:
    """Every text the model was shown, as a reader would take it in: a tool's JSON result
    (inside its data block) decoded to its strings, so an instruction in a page or a file
    reads the same whatever quoting carried it."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            continue
        if message.get("role") != "tool":
            parts.append(content)
            continue
        try:
            _strings(json.loads(data_of(content)), parts)
        except ValueError:
            parts.append(data_of(content))
    return parts


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}

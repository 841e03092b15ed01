import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.addresses import DISGUISED_PRIVATE_HOSTS, PLAIN_PRIVATE_HOSTS
from tools_app.builtin import HttpGetTool
from tools_app.registry import ToolContext, ToolRegistry, ToolResult

HTTP_MAX_BYTES = 100


class Site(BaseHTTPRequestHandler):
    """A small real web server; `release` ends the slow endpoint early so teardown is instant."""

    release: threading.Event

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        if self.path == "/hello":
            self._send(200, "héllo world".encode(), "text/plain; charset=utf-8")
        elif self.path == "/latin1":
            self._send(200, "café".encode("latin-1"), "text/plain; charset=iso-8859-1")
        elif self.path == "/big":
            self._send(200, b"x" * (HTTP_MAX_BYTES * 10), "text/plain")
        elif self.path == "/exact":
            self._send(200, b"y" * HTTP_MAX_BYTES, "text/plain")
        elif self.path == "/echo-headers":
            self._send(200, json.dumps(dict(self.headers)).encode(), "application/json")
        elif self.path == "/slow":
            self.release.wait(timeout=5)
            self._send(200, b"finally", "text/plain")
        elif self.path == "/to-echo-elsewhere":
            self._redirect(f"http://localhost:{port}/echo-headers")
        elif self.path == "/to-echo-here":
            self._redirect("/echo-headers")
        elif self.path == "/to-hello":
            self._redirect("/hello")
        elif self.path == "/to-metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/")
        elif self.path == "/to-loopback-alias":
            self._redirect(f"http://127.0.0.2:{port}/hello")
        elif self.path == "/to-ftp":
            self._redirect("ftp://example.com/file")
        elif self.path == "/loop":
            self._redirect("/loop")
        else:
            self._send(404, b"not here", "text/plain")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    release = threading.Event()
    handler = type("TestSite", (Site,), {"release": release})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    release.set()
    server.shutdown()
    server.server_close()


def make_registry(**options) -> ToolRegistry:
    options = {"max_bytes": HTTP_MAX_BYTES, "timeout": 2.0, "allow_private": True, **options}
    registry = ToolRegistry()
    registry.register(HttpGetTool(**options))
    return registry


def fetch(url: str, *, call_timeout: float = 2.0, headers=None, **options) -> ToolResult:
    context = ToolContext(run_id=1, workspace=Path("/nonexistent"), timeout=call_timeout)
    arguments = {"url": url} if headers is None else {"url": url, "headers": headers}
    result = make_registry(**options).call("http_get", arguments, context)
    json.dumps(result.content)
    return result


def test_it_returns_the_status_headers_and_decoded_body(site):
    result = fetch(f"{site}/hello")

    assert result.ok
    assert result.content == {
        "url": f"{site}/hello",
        "status": 200,
        "headers": {"content-type": "text/plain; charset=utf-8", "content-length": "12"},
        "body": "héllo world",
        "truncated": False,
    }


def test_it_decodes_the_body_with_the_charset_the_server_declares(site):
    assert fetch(f"{site}/latin1").content["body"] == "café"


def test_it_returns_a_404_as_a_result_not_a_failure(site):
    result = fetch(f"{site}/missing")

    assert result.ok
    assert result.content["status"] == 404
    assert result.content["body"] == "not here"


def test_it_cuts_the_body_off_at_the_byte_limit(site):
    result = fetch(f"{site}/big")

    assert result.ok
    assert result.content["body"] == "x" * HTTP_MAX_BYTES
    assert result.content["truncated"] is True


def test_it_does_not_flag_a_body_that_is_exactly_the_limit(site):
    result = fetch(f"{site}/exact")

    assert result.content["body"] == "y" * HTTP_MAX_BYTES
    assert result.content["truncated"] is False


def test_it_sends_the_callers_headers(site):
    result = fetch(
        f"{site}/echo-headers",
        headers={"X-Agent": "agentdesk", "Host": "evil.test"},
        max_bytes=10_000,
    )

    sent = {k.lower(): v for k, v in json.loads(result.content["body"]).items()}
    assert sent["x-agent"] == "agentdesk"
    assert sent["host"] == site.removeprefix("http://")


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"X-Name": "café"}, "Request header names and values must be ASCII"),
        ({"X-Split": "a\r\nInjected: yes"}, "Illegal header value"),
    ],
)
def test_it_refuses_headers_that_cannot_be_sent(site, headers, error):
    result = fetch(f"{site}/echo-headers", headers=headers)

    assert not result.ok
    assert error in result.error


def test_it_gives_up_with_a_clear_error_when_the_server_is_too_slow(site):
    started = time.monotonic()

    result = fetch(f"{site}/slow", call_timeout=0.3)

    assert not result.ok
    assert result.error == f"Timed out after 0.3s fetching {site}/slow"
    assert time.monotonic() - started < 2


def test_it_uses_its_own_timeout_when_the_call_allows_longer(site):
    result = fetch(f"{site}/slow", call_timeout=5.0, timeout=0.2)

    assert not result.ok
    assert result.error == f"Timed out after 0.2s fetching {site}/slow"


def test_it_reports_a_refused_connection_clearly():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]

    result = fetch(f"http://127.0.0.1:{closed_port}/")

    assert not result.ok
    assert result.error.startswith(f"Could not connect to http://127.0.0.1:{closed_port}/")


def test_it_follows_a_redirect_and_reports_the_final_url(site):
    result = fetch(f"{site}/to-hello")

    assert result.ok
    assert result.content["url"] == f"{site}/hello"
    assert result.content["body"] == "héllo world"
    assert result.details == {"redirects": 1}


def test_it_keeps_credentials_on_a_redirect_within_the_same_origin(site):
    result = fetch(f"{site}/to-echo-here", headers={"Authorization": "Bearer t"}, max_bytes=10_000)

    sent = {k.lower(): v for k, v in json.loads(result.content["body"]).items()}
    assert sent["authorization"] == "Bearer t"


def test_it_drops_credentials_on_a_redirect_to_another_host(site):
    result = fetch(
        f"{site}/to-echo-elsewhere",
        headers={"Authorization": "Bearer t", "X-Agent": "agentdesk"},
        max_bytes=10_000,
    )

    sent = {k.lower(): v for k, v in json.loads(result.content["body"]).items()}
    assert "authorization" not in sent
    assert sent["x-agent"] == "agentdesk"


def test_it_stops_following_redirects_after_five(site):
    result = fetch(f"{site}/loop")

    assert not result.ok
    assert result.error == f"Stopped after 5 redirects; last location was {site}/loop"


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/file", "file:///etc/passwd", "javascript:alert(1)", "example.com/page"],
)
def test_it_refuses_a_url_that_is_not_http(url):
    result = fetch(url)

    assert not result.ok
    assert result.error.startswith("Only http and https URLs can be fetched, not '")


def test_it_refuses_a_redirect_to_a_url_that_is_not_http(site):
    result = fetch(f"{site}/to-ftp")

    assert not result.ok
    assert result.error == "Only http and https URLs can be fetched, not 'ftp://example.com/file'"


# --- the private-address guard -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/hello",
        "http://localhost:{port}/hello",
        "http://[::1]:{port}/hello",
        "http://[::ffff:127.0.0.1]:{port}/hello",
        "http://10.0.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0:{port}/hello",
        "http://100.64.0.1/",
    ],
)
def test_it_refuses_loopback_and_private_addresses(site, url):
    port = site.rsplit(":", 1)[1]

    result = fetch(url.format(port=port), allow_private=False)

    assert not result.ok
    assert result.error.startswith("Refusing to fetch")
    assert "only public internet addresses are allowed" in result.error


@pytest.mark.parametrize("host", DISGUISED_PRIVATE_HOSTS + PLAIN_PRIVATE_HOSTS)
def test_it_refuses_private_addresses_spelt_as_ipv6(host):
    result = fetch(f"http://{host}/latest/meta-data/", allow_private=False)

    assert not result.ok
    assert result.error.startswith("Refusing to fetch")
    assert "only public internet addresses are allowed" in result.error


def test_it_fetches_loopback_when_private_addresses_are_allowed(site):
    result = fetch(f"{site}/hello", allow_private=True)

    assert result.ok
    assert result.content["status"] == 200


def test_it_fetches_through_an_explicitly_allowed_network(site):
    result = fetch(f"{site}/to-hello", allow_private=False, allowed_networks=["127.0.0.1/32"])

    assert result.ok
    assert result.content["url"] == f"{site}/hello"
    assert result.content["body"] == "héllo world"


@pytest.mark.parametrize("path", ["/to-metadata", "/to-loopback-alias"])
def test_it_refuses_a_redirect_to_a_private_address(site, path):
    # 127.0.0.1 stands in for a public host here; the hop after it must still be checked.
    result = fetch(f"{site}{path}", allow_private=False, allowed_networks=["127.0.0.1/32"])

    assert not result.ok
    assert result.error.startswith("Refusing to fetch http://")
    assert ("169.254.169.254" in result.error) or ("127.0.0.2" in result.error)


def test_it_reports_a_host_that_does_not_resolve(site):
    result = fetch("http://no-such-host.invalid/", allow_private=False)

    assert not result.ok
    assert result.error.startswith("Could not resolve host 'no-such-host.invalid'")

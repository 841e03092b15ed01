"""http_get: a GET that refuses private, loopback and reserved addresses unless allowed."""

import codecs
import ipaddress
import time
from collections.abc import Iterable
from typing import Any

import httpx

from agents_app.core import netguard
from tools_app.registry import (
    ApprovalLevel,
    SideEffects,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)

HTTP_MAX_REDIRECTS = 5
HTTP_RESPONSE_HEADERS = ("content-type", "content-length", "last-modified")
HTTP_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Credentials the caller meant for one host must not follow a redirect to another.
HTTP_ORIGIN_BOUND_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})


class HttpGetTool(Tool):
    """GET a URL. Unless private addresses are allowed, every hop's host is resolved here, checked,
    and the connection is pinned to the checked address (TLS still verifies the host name), so a
    DNS answer that changes between check and connect cannot reach an internal address."""

    def __init__(
        self,
        *,
        max_bytes: int,
        timeout: float,
        allow_private: bool,
        allowed_networks: Iterable[str | netguard.IPNetwork] = (),
    ) -> None:
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.allow_private = allow_private
        # Explicit exceptions to the private-address rule (e.g. one internal service).
        self.allowed_networks = [ipaddress.ip_network(n) for n in allowed_networks]
        self.spec = ToolSpec(
            name="http_get",
            description=(
                "Fetch a web page or API response with an HTTP GET and return status, a few "
                "response headers, the body as text, and the final URL after redirects (up to "
                f"{HTTP_MAX_REDIRECTS}). Only http and https URLs. Bodies longer than {max_bytes} "
                "bytes are cut off (truncated=true). A 4xx/5xx status is returned, not treated as "
                "a failure; check status. Addresses on private or local networks are refused."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "url": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Absolute http(s) URL, e.g. 'https://example.com/page'.",
                    },
                    "headers": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "description": "Extra request headers, e.g. {'Accept': 'application/json'}.",
                    },
                },
                "required": ["url"],
                "additionalProperties": False,
            },
            capabilities=frozenset({"HTTP_GET", "WEB_FETCH"}),
            domain="web",
            side_effects=SideEffects.EXTERNAL,
            approval_level=ApprovalLevel.AUTO,
            timeout=timeout,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        timeout = min(self.timeout, context.timeout)
        deadline = time.monotonic() + timeout
        # Identity so that the byte limit counts what is read, and no small gzip expands to GBs.
        headers = {"accept-encoding": "identity"}
        headers.update({k.lower(): v for k, v in arguments.get("headers", {}).items()})
        headers.pop("host", None)
        try:
            url = httpx.URL(arguments["url"])
        except httpx.InvalidURL as exc:
            raise ToolError(f"Invalid URL '{arguments['url']}': {exc}") from None

        with httpx.Client(follow_redirects=False, trust_env=False) as client:
            for redirects in range(HTTP_MAX_REDIRECTS + 1):
                response = self._send(client, url, headers, deadline, timeout)
                try:
                    location = response.headers.get("location")
                    if response.status_code not in HTTP_REDIRECT_STATUSES or not location:
                        body, truncated = self._read_body(response, url, deadline, timeout)
                        return self._result(url, response, body, truncated, redirects)
                finally:
                    response.close()
                try:
                    next_url = url.join(location)
                except httpx.InvalidURL as exc:
                    raise ToolError(
                        f"{url} redirected to an invalid URL '{location}': {exc}"
                    ) from None
                if (next_url.scheme, next_url.host, next_url.port) != (
                    url.scheme,
                    url.host,
                    url.port,
                ):
                    for name in HTTP_ORIGIN_BOUND_HEADERS:
                        headers.pop(name, None)
                url = next_url
        raise ToolError(f"Stopped after {HTTP_MAX_REDIRECTS} redirects; last location was {url}")

    def _send(
        self,
        client: httpx.Client,
        url: httpx.URL,
        headers: dict[str, str],
        deadline: float,
        timeout: float,
    ) -> httpx.Response:
        if url.scheme not in ("http", "https"):
            raise ToolError(f"Only http and https URLs can be fetched, not '{url}'")
        if not url.host:
            raise ToolError(f"URL '{url}' has no host")
        if self.allow_private:
            targets = [(url, {})]
        else:
            targets = [
                (url.copy_with(host=str(address)), {"sni_hostname": url.raw_host.decode("ascii")})
                for address in self._checked_addresses(url)
            ]
        last_error: httpx.ConnectError | None = None
        for target, extensions in targets:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                request = client.build_request(
                    "GET",
                    target,
                    headers={**headers, "host": url.netloc.decode("ascii")},
                    extensions=extensions,
                    timeout=remaining,
                )
            except UnicodeEncodeError:
                raise ToolError("Request header names and values must be ASCII") from None
            try:
                return client.send(request, stream=True)
            except httpx.ConnectError as exc:
                last_error = exc  # this address is unreachable; try the host's next one
            except httpx.TimeoutException:
                break
            except httpx.HTTPError as exc:
                raise ToolError(f"Request to {url} failed: {exc}") from None
        if last_error is not None and time.monotonic() < deadline:
            raise ToolError(f"Could not connect to {url}: {last_error}")
        raise ToolError(f"Timed out after {timeout:g}s fetching {url}")

    def _checked_addresses(self, url: httpx.URL) -> list[netguard.IPAddress]:
        try:
            return netguard.public_addresses(url, self.allowed_networks)
        except netguard.UnresolvableHost as exc:
            raise ToolError(str(exc)) from None
        except netguard.PrivateAddress as exc:
            raise ToolError(
                f"Refusing to fetch {url}: host '{url.host}' resolves to a private, loopback, "
                f"link-local or reserved address ({exc}); only public "
                "internet addresses are allowed"
            ) from None

    def _read_body(
        self, response: httpx.Response, url: httpx.URL, deadline: float, timeout: float
    ) -> tuple[str, bool]:
        chunks: list[bytes] = []
        received = 0
        truncated = False
        try:
            for chunk in response.iter_bytes():
                if time.monotonic() > deadline:
                    raise ToolError(f"Timed out after {timeout:g}s reading the body of {url}")
                room = self.max_bytes - received
                if len(chunk) > room:
                    chunks.append(chunk[:room])
                    received += room
                    truncated = True
                    break
                chunks.append(chunk)
                received += len(chunk)
        except httpx.TimeoutException:
            raise ToolError(f"Timed out after {timeout:g}s reading the body of {url}") from None
        except httpx.HTTPError as exc:
            raise ToolError(f"Reading the body of {url} failed: {exc}") from None
        encoding = response.charset_encoding or "utf-8"
        try:
            codecs.lookup(encoding)
        except LookupError:
            encoding = "utf-8"
        return b"".join(chunks).decode(encoding, errors="replace"), truncated

    def _result(
        self, url: httpx.URL, response: httpx.Response, body: str, truncated: bool, redirects: int
    ) -> ToolResult:
        headers = {
            name: response.headers[name]
            for name in HTTP_RESPONSE_HEADERS
            if name in response.headers
        }
        return ToolResult(
            ok=True,
            content={
                "url": str(url),
                "status": response.status_code,
                "headers": headers,
                "body": body,
                "truncated": truncated,
            },
            details={"redirects": redirects},
        )

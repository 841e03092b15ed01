"""The builtin tools: files confined to the run's workspace, a guarded HTTP GET, and finish_task."""

import codecs
import ipaddress
import os
import socket
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import httpx

from tools_app.registry import (
    ApprovalLevel,
    SideEffects,
    Tool,
    ToolContext,
    ToolError,
    ToolRegistry,
    ToolResult,
    ToolSpec,
)

LIST_MAX_ENTRIES = 1000
HTTP_MAX_REDIRECTS = 5
HTTP_RESPONSE_HEADERS = ("content-type", "content-length", "last-modified")
HTTP_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Credentials the caller meant for one host must not follow a redirect to another.
HTTP_ORIGIN_BOUND_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

WORKSPACE_RULE = (
    "Paths are relative to the run's workspace directory; anything that resolves outside it "
    "(absolute paths elsewhere, '..', symlinks pointing out) is refused."
)


# --- files -------------------------------------------------------------------------------------


def _workspace_root(context: ToolContext) -> Path:
    context.workspace.mkdir(parents=True, exist_ok=True)
    return context.workspace.resolve(strict=True)


def _resolve_in_workspace(root: Path, requested: str) -> Path:
    """The real path `requested` names, following every symlink, or ToolError if it escapes."""
    try:
        # A dangling symlink is followed too (realpath semantics), so it cannot point a write out.
        resolved = (root / requested).resolve(strict=False)
    except (OSError, ValueError) as exc:
        raise ToolError(f"Invalid path '{requested}': {exc}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(
            f"Path '{requested}' is outside the workspace; use a relative path inside it"
        )
    return resolved


def _relative(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix() or "."


class ReadFileTool(Tool):
    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spec = ToolSpec(
            name="read_file",
            description=(
                "Read a text file from the workspace and return its contents (UTF-8; undecodable "
                f"bytes are replaced). Files larger than {max_bytes} bytes are cut off at that "
                "size and the result says truncated=true. " + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File path relative to the workspace, e.g. 'notes/todo.md'.",
                    },
                },
                "required": ["path"],
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_READ"}),
            domain="file_operations",
            side_effects=SideEffects.READ_ONLY,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments["path"]
        path = _resolve_in_workspace(root, requested)
        if path.is_dir():
            raise ToolError(f"'{requested}' is a directory; use list_files to see what it holds")
        if not path.is_file():
            raise ToolError(f"File '{requested}' does not exist in the workspace")
        try:
            with path.open("rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                data = handle.read(self.max_bytes)
        except OSError as exc:
            raise ToolError(f"Could not read '{requested}': {exc.strerror or exc}") from None
        return ToolResult(
            ok=True,
            content={
                "path": _relative(root, path),
                "content": data.decode("utf-8", errors="replace"),
                "size": size,
                "truncated": size > len(data),
            },
        )


class WriteFileTool(Tool):
    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.spec = ToolSpec(
            name="write_file",
            description=(
                "Write text (UTF-8) to a file in the workspace, creating missing parent "
                "directories. Replaces the file unless append=true, which adds to its end. "
                f"Content over {max_bytes} bytes is refused. Returns the number of bytes written. "
                + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "File path relative to the workspace, e.g. 'out/report.md'.",
                    },
                    "content": {"type": "string", "description": "The text to write."},
                    "append": {
                        "type": "boolean",
                        "default": False,
                        "description": "Add to the end of the file instead of replacing it.",
                    },
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_WRITE"}),
            domain="file_operations",
            side_effects=SideEffects.WORKSPACE_WRITE,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments["path"]
        append = arguments.get("append", False)
        data = arguments["content"].encode("utf-8")
        if len(data) > self.max_bytes:
            raise ToolError(
                f"Content is {len(data)} bytes; write_file accepts at most {self.max_bytes} "
                "bytes per call (write the rest with append=true)"
            )
        path = _resolve_in_workspace(root, requested)
        if path == root or path.is_dir():
            raise ToolError(f"'{requested}' is a directory; give a file path")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("ab" if append else "wb") as handle:
                handle.write(data)
        except OSError as exc:
            raise ToolError(f"Could not write '{requested}': {exc.strerror or exc}") from None
        return ToolResult(
            ok=True,
            content={"path": _relative(root, path), "bytes_written": len(data), "appended": append},
        )


class ListFilesTool(Tool):
    def __init__(self, *, max_entries: int = LIST_MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self.spec = ToolSpec(
            name="list_files",
            description=(
                "List the files and directories under a workspace directory (default: the "
                "workspace itself), sorted by path; recursive=true includes everything below it. "
                "Each entry has path (relative to the workspace), type ('file' or 'dir') and size "
                f"in bytes (null for dirs). At most {max_entries} entries are returned; "
                "truncated=true means there are more. Symlinks leading outside the workspace are "
                "left out. " + WORKSPACE_RULE
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "default": ".",
                        "description": "Directory relative to the workspace; '.' is the workspace.",
                    },
                    "recursive": {
                        "type": "boolean",
                        "default": False,
                        "description": "Also list the contents of subdirectories.",
                    },
                },
                "additionalProperties": False,
            },
            capabilities=frozenset({"FILE_READ", "FILE_LIST"}),
            domain="file_operations",
            side_effects=SideEffects.READ_ONLY,
            approval_level=ApprovalLevel.AUTO,
        )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        root = _workspace_root(context)
        requested = arguments.get("path") or "."
        directory = _resolve_in_workspace(root, requested)
        if not directory.exists():
            raise ToolError(f"Directory '{requested}' does not exist in the workspace")
        if not directory.is_dir():
            raise ToolError(f"'{requested}' is a file, not a directory; use read_file to read it")
        entries: list[dict[str, Any]] = []
        truncated = False
        for entry in self._walk(root, directory, arguments.get("recursive", False)):
            if len(entries) == self.max_entries:
                truncated = True
                break
            entries.append(entry)
        return ToolResult(
            ok=True,
            content={
                "path": _relative(root, directory),
                "entries": entries,
                "truncated": truncated,
            },
        )

    def _walk(self, root: Path, directory: Path, recursive: bool) -> Iterable[dict[str, Any]]:
        try:
            children = sorted(os.scandir(directory), key=lambda child: child.name)
        except OSError as exc:
            raise ToolError(
                f"Could not list '{_relative(root, directory)}': {exc.strerror}"
            ) from None
        for child in children:
            shown = directory / child.name
            real = Path(os.path.realpath(shown))
            if not real.is_relative_to(root) or not real.exists():
                continue
            if real.is_dir():
                yield {"path": _relative(root, shown), "type": "dir", "size": None}
                # Symlinked directories are listed but not entered: no loops, no double counting.
                if recursive and not child.is_symlink():
                    yield from self._walk(root, shown, recursive)
            else:
                yield {"path": _relative(root, shown), "type": "file", "size": real.stat().st_size}


# --- http --------------------------------------------------------------------------------------


def _is_public_address(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    # is_global is False for loopback, private, link-local, CGNAT, reserved and unspecified ranges.
    return address.is_global and not address.is_multicast


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
        allowed_networks: Iterable[str | IPNetwork] = (),
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

    def _checked_addresses(self, url: httpx.URL) -> list[IPAddress]:
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            infos = socket.getaddrinfo(url.raw_host.decode("ascii"), port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise ToolError(f"Could not resolve host '{url.host}': {exc}") from None
        addresses = list(dict.fromkeys(ipaddress.ip_address(info[4][0]) for info in infos))
        # All must pass, or which one gets used would decide whether the guard holds.
        refused = [
            a
            for a in addresses
            if not _is_public_address(a) and not any(a in n for n in self.allowed_networks)
        ]
        if refused or not addresses:
            raise ToolError(
                f"Refusing to fetch {url}: host '{url.host}' resolves to a private, loopback, "
                f"link-local or reserved address ({', '.join(map(str, refused))}); only public "
                "internet addresses are allowed"
            )
        return addresses

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


# --- control -----------------------------------------------------------------------------------


class FinishTaskTool(Tool):
    spec = ToolSpec(
        name="finish_task",
        description=(
            "Declare the task done and hand back your final answer. Call it exactly once, as your "
            "last action, with the complete result the user should see. Set success=false if you "
            "could not complete the task, and explain why in result."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "result": {
                    "type": "string",
                    "description": "The final answer or a summary of what was done.",
                },
                "success": {
                    "type": "boolean",
                    "default": True,
                    "description": "Whether the task was accomplished.",
                },
            },
            "required": ["result"],
            "additionalProperties": False,
        },
        capabilities=frozenset({"FINISH"}),
        domain="control",
        side_effects=SideEffects.READ_ONLY,
        approval_level=ApprovalLevel.AUTO,
    )

    def run(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        return ToolResult(
            ok=True,
            content={"result": arguments["result"], "success": arguments.get("success", True)},
            finish=True,
        )


def register_builtin_tools(
    registry: ToolRegistry,
    *,
    file_max_bytes: int,
    http_max_bytes: int,
    http_timeout: float,
    http_allow_private: bool,
) -> None:
    for tool in (
        ReadFileTool(max_bytes=file_max_bytes),
        WriteFileTool(max_bytes=file_max_bytes),
        ListFilesTool(),
        HttpGetTool(
            max_bytes=http_max_bytes, timeout=http_timeout, allow_private=http_allow_private
        ),
        FinishTaskTool(),
    ):
        registry.register(tool)

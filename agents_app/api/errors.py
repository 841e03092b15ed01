"""The error envelope of seed 000 (`success: false`, `error: {code, message, http_status,
details, trace_id, timestamp}`), as REST answers it and the MCP server reports it."""

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja.renderers import JSONRenderer

from agents_app.core.errors import error_detail

_RENDERER = JSONRenderer()


def error_body(code: str, message: str, details: Any = None, status: int | None = None) -> dict:
    return {"success": False, "error": error_detail(code, message, details, status)}


def error_response(
    request: HttpRequest,
    code: str,
    message: str,
    details: Any = None,
    *,
    status: int | None = None,
    extra: dict[str, Any] | None = None,
) -> HttpResponse:
    """The envelope as a response; `extra` adds top-level fields (a failed run's result)."""
    body = {**error_body(code, message, details, status), **(extra or {})}
    status = body["error"]["http_status"]
    # What NinjaAPI.create_response does with the API's (default) renderer.
    response = HttpResponse(
        _RENDERER.render(request, body, response_status=status),
        status=status,
        content_type=f"{_RENDERER.media_type}; charset={_RENDERER.charset}",
    )
    response["X-Trace-Id"] = body["error"]["trace_id"]
    return response

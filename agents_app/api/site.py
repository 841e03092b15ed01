"""The one NinjaAPI: routers from each app, auth, and seed 000's error envelope for every error."""

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation
from ninja.parser import Parser

from agents_app.api.agents.rest import router as contract_agents_router
from agents_app.api.approvals.rest import router as approvals_router
from agents_app.api.auth import ApiKeyAuth, SessionAuth
from agents_app.api.connections.rest import router as connections_router
from agents_app.api.conversations.rest import router as conversations_router
from agents_app.api.errors import error_response
from agents_app.api.files.rest import router as files_router
from agents_app.api.profiles.rest import router as profiles_router
from agents_app.api.runs.rest import router as agents_router
from agents_app.api.schemas import ErrorEnvelope
from agents_app.api.teams.rest import router as teams_router
from agents_app.api.webhooks.rest import router as webhooks_router
from agents_app.core.errors import DomainError, ErrorCode
from agents_app.core.throttle import Throttled
from tools_app.api import router as tools_router

logger = logging.getLogger(__name__)


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN and Infinity, which are not JSON: PostgreSQL's jsonb refuses them.
    raise ValueError(f"{name} is not a JSON value")


class JsonParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        try:
            return json.loads(request.body or b"{}", parse_constant=_refuse_constant)
        except ValueError as exc:
            raise DomainError(
                ErrorCode.VALIDATION_ERROR,
                "The request body is not valid JSON",
                {"error": str(exc)},
            ) from None


def answer_in_envelope(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """ninja's own views answer a wrong method with a bare text 405 and the API root with an
    HTML 404; clients get the envelope instead."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            response = view(request, *args, **kwargs)
        except Http404:
            return api_not_found(request)
        if not isinstance(response, HttpResponseNotAllowed):
            return response
        allowed = sorted(m.strip() for m in response["Allow"].split(","))
        envelope = error_response(
            request,
            ErrorCode.METHOD_NOT_ALLOWED,
            f"{request.method} is not allowed on {request.path}; use {', '.join(allowed)}",
            {"method": request.method, "allowed_methods": allowed},
        )
        envelope["Allow"] = ", ".join(allowed)
        return envelope

    return wrapper


ENVELOPE_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}


class AgentDeskAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        """`agents_app_api_<domain>_<view>`, as when each domain's routes were the module
        api/<domain>.py: clients generated from the document keep their method names."""
        module = operation.view_func.__module__.removesuffix(".rest")
        return f"{module}_{operation.view_func.__name__}".replace(".", "_")

    def _get_urls(self) -> list:
        patterns = super()._get_urls()
        for pattern in patterns:
            pattern.callback = answer_in_envelope(pattern.callback)
        return patterns

    def get_openapi_schema(self, **kwargs: Any) -> OpenAPISchema:
        """Every operation documents the errors any operation of its shape can answer, in the
        envelope: 400 with parameters or a body (VALIDATION_ERROR), 401 and 429 behind auth
        (UNAUTHORIZED, RATE_LIMITED), 404 with a path parameter, 413 with a body. A route adds
        its own (`schemas.errors(409)`)."""
        schema = super().get_openapi_schema(**kwargs)
        # Routes that declare an error already put ErrorEnvelope there; this is for the rest.
        envelope = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for name, definition in {**envelope.pop("$defs", {}), "ErrorEnvelope": envelope}.items():
            components.setdefault(name, definition)
        for path, operations in schema["paths"].items():
            for operation in operations.values():
                statuses = set()
                if operation.get("parameters") or "requestBody" in operation:
                    statuses.add(400)
                if operation.get("security"):
                    statuses.update((401, 429))  # 429: too many refused keys (core/throttle)
                if "{" in path:
                    statuses.add(404)
                if "requestBody" in operation:
                    statuses.add(413)
                responses = operation.setdefault("responses", {})
                for status in sorted(statuses):
                    responses.setdefault(
                        status,
                        {
                            "description": "An error, in the envelope",
                            "content": {"application/json": {"schema": ENVELOPE_REF}},
                        },
                    )
        return schema


api = AgentDeskAPI(
    title="AgentDesk API",
    version="1",
    urls_namespace="api",
    docs_url="/docs",
    auth=[ApiKeyAuth(), SessionAuth()],
    parser=JsonParser(),
)
api.add_router("/v1", agents_router)
api.add_router("/v1", files_router)
api.add_router("/v1", tools_router)
api.add_router("/v1", webhooks_router)
api.add_router("/v1", approvals_router)
api.add_router("/v1", connections_router)
api.add_router("/v1", conversations_router)
api.add_router("/v1", contract_agents_router)
api.add_router("/v1", profiles_router)
api.add_router("/v1", teams_router)


@api.exception_handler(DomainError)
def on_domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    return error_response(request, exc.code, exc.message, exc.details)


@api.exception_handler(Throttled)
def on_throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    response = on_domain_error(request, exc)
    response["Retry-After"] = str(exc.retry_after)
    return response


# How a refused text field is named when it was empty or blank (the services' words).
FIELD_NAMES = {"task": "task text"}
EMPTY = "is empty"


def _problem_message(error: dict[str, Any]) -> str:
    """pydantic's message, but a person's words for a text that says nothing (NonBlankText:
    min_length 1 and the non-blank pattern), not "String should match pattern '\\S'"."""
    kind, context = error.get("type"), error.get("ctx") or {}
    if (kind == "string_too_short" and context.get("min_length") == 1) or (
        kind == "string_pattern_mismatch" and context.get("pattern") == r"\S"
    ):
        return EMPTY
    return error.get("msg", "")


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    problems = [
        {
            "field": ".".join(
                str(p) for p in e.get("loc", ()) if p not in ("body", "payload", "query")
            ),
            "message": _problem_message(e),
        }
        for e in exc.errors
    ]
    details: dict[str, Any] = {"errors": problems}
    if len(problems) == 1 and problems[0]["message"] == EMPTY and problems[0]["field"]:
        # One empty field: said as the services say it ("The task text is empty").
        field = problems[0]["field"]
        message = f"The {FIELD_NAMES.get(field, field)} {EMPTY}"
        details["field"] = field
    else:
        summary = "; ".join(f"{p['field'] or 'body'}: {p['message']}" for p in problems[:3])
        message = f"Invalid request: {summary}"
    return error_response(request, ErrorCode.VALIDATION_ERROR, message, details)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return error_response(
        request,
        ErrorCode.UNAUTHORIZED,
        "Authentication required: send 'Authorization: Bearer <API key>' or log in",
    )


@api.exception_handler(RequestDataTooBig)
def on_request_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # ninja reads request.body before the parser runs, so this arrives here, not in JsonParser.
    return error_response(
        request,
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"The request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes",
        {"max_bytes": settings.DATA_UPLOAD_MAX_MEMORY_SIZE},
    )


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, DomainError):
        # ninja wraps JsonParser's errors in HttpError(400, "Cannot parse request body").
        return on_domain_error(request, exc.__cause__)
    code = {
        401: ErrorCode.UNAUTHORIZED,
        403: ErrorCode.FORBIDDEN,
        404: ErrorCode.NOT_FOUND,
        405: ErrorCode.METHOD_NOT_ALLOWED,
        409: ErrorCode.CONFLICT,
        413: ErrorCode.PAYLOAD_TOO_LARGE,
    }.get(exc.status_code, ErrorCode.VALIDATION_ERROR)
    return error_response(request, code, str(exc))


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return error_response(request, ErrorCode.NOT_FOUND, "Not found")


@api.exception_handler(Exception)
def on_unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
    response = error_response(
        request,
        ErrorCode.INTERNAL_ERROR,
        "An unexpected error occurred; quote the trace_id to staff",
    )
    logger.exception("API error %s on %s %s", response["X-Trace-Id"], request.method, request.path)
    return response


@csrf_exempt
def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Unknown paths under /api/ answer with the envelope too, not an HTML page, for every
    method: nothing is done here, so there is nothing for CSRF to protect (without the
    exemption POST, PUT and DELETE got Django's HTML 403 CSRF page)."""
    return error_response(request, ErrorCode.NOT_FOUND, f"No API endpoint at {request.path}")

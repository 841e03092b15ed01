"""One family of errors with seed 000's codes; the API maps them once to the error envelope."""

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every error code a client, a run or a person may be told. Members equal their values,
    so JSON and the `error_code` column hold the same strings as before."""

    # planning
    INVALID_PLAN = "INVALID_PLAN"
    PLANNING_FAILED = "PLANNING_FAILED"
    PLANNING_TIMEOUT = "PLANNING_TIMEOUT"
    WEAK_MODEL = "WEAK_MODEL"
    # execution
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    TOOL_FAILED = "TOOL_FAILED"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    EXECUTION_TIMEOUT = "EXECUTION_TIMEOUT"
    INSUFFICIENT_RESOURCES = "INSUFFICIENT_RESOURCES"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    # verification
    VERIFICATION_FAILED = "VERIFICATION_FAILED"
    VERIFICATION_TIMEOUT = "VERIFICATION_TIMEOUT"
    # the model said done, the evidence says otherwise: a step that needed a tool called none,
    # or a file the task asked for is not in the workspace
    EVIDENCE_MISSING = "EVIDENCE_MISSING"
    # network / LLM
    CONNECTION_REFUSED = "CONNECTION_REFUSED"
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    INVALID_RESPONSE = "INVALID_RESPONSE"
    LLM_NOT_CONFIGURED = "LLM_NOT_CONFIGURED"
    # the model's answer reached its max_tokens twice (LLM_MAX_TOKENS_*)
    ANSWER_TOO_LONG = "ANSWER_TOO_LONG"
    # resources
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    RATE_LIMITED = "RATE_LIMITED"
    MAX_RETRIES_EXCEEDED = "MAX_RETRIES_EXCEEDED"
    # requests
    VALIDATION_ERROR = "VALIDATION_ERROR"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    CONFLICT = "CONFLICT"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    # why a run stopped (engine.hooks.StopRun, Run.error_code); never raised as a DomainError,
    # so they have no HTTP status below
    CANCELLED = "CANCELLED"
    LEASE_LOST = "LEASE_LOST"
    # a contract agent repeating itself (the same call and result, the same error)
    AGENT_STUCK = "AGENT_STUCK"
    # a head node's delegation its guards refused (too deep, or the same one a second time)
    DELEGATION_REFUSED = "DELEGATION_REFUSED"
    # a child run failed and its parent could not go on without it
    CHILD_FAILED = "CHILD_FAILED"
    # a replay asked a model call its source never made: no recorded answer is left for it
    REPLAY_DIVERGED = "REPLAY_DIVERGED"


# code -> HTTP status. Seed 000's hierarchy plus the platform's own codes; a DomainError must
# carry one of these.
ERROR_STATUS: dict[ErrorCode, int] = {
    # planning
    ErrorCode.INVALID_PLAN: 400,
    ErrorCode.PLANNING_FAILED: 500,
    ErrorCode.PLANNING_TIMEOUT: 504,
    ErrorCode.WEAK_MODEL: 400,
    # execution
    ErrorCode.TOOL_NOT_FOUND: 400,
    ErrorCode.TOOL_FAILED: 500,
    ErrorCode.INVALID_ARGUMENTS: 400,
    ErrorCode.EXECUTION_TIMEOUT: 504,
    ErrorCode.INSUFFICIENT_RESOURCES: 429,
    ErrorCode.BUDGET_EXCEEDED: 429,
    # verification
    ErrorCode.VERIFICATION_FAILED: 500,
    ErrorCode.VERIFICATION_TIMEOUT: 504,
    ErrorCode.EVIDENCE_MISSING: 422,
    # network / LLM
    ErrorCode.CONNECTION_REFUSED: 503,
    ErrorCode.REQUEST_TIMEOUT: 504,
    ErrorCode.INVALID_RESPONSE: 502,
    ErrorCode.LLM_NOT_CONFIGURED: 503,
    ErrorCode.ANSWER_TOO_LONG: 502,
    # resources
    ErrorCode.OUT_OF_MEMORY: 500,
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.MAX_RETRIES_EXCEEDED: 500,
    # requests
    ErrorCode.VALIDATION_ERROR: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.CONFLICT: 409,
    ErrorCode.PAYLOAD_TOO_LARGE: 413,
    ErrorCode.SERVICE_UNAVAILABLE: 503,
    ErrorCode.INTERNAL_ERROR: 500,
}


class DomainError(Exception):
    """An error a client or a run can be told about: a seed 000 code, a message and details."""

    def __init__(self, code: ErrorCode, message: str, details: Any = None):
        if code not in ERROR_STATUS:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details = details if details is not None else {}

    @property
    def http_status(self) -> int:
        return ERROR_STATUS[self.code]

    def __repr__(self) -> str:
        return f"DomainError({self.code.value!r}, {self.message!r})"


def error_detail(code: str, message: str, details: Any = None, status: int | None = None) -> dict:
    """Seed 000's error object {code, message, http_status, details, trace_id, timestamp}: the
    `error` of REST's envelope (api.errors) and the payload of a socket's `error` message."""
    return {
        "code": code,
        "message": message,
        "http_status": status or ERROR_STATUS.get(code, 500),
        "details": details if details is not None else {},
        "trace_id": f"req-{uuid.uuid4().hex[:12]}",
        # What django.utils.timezone.now() gives with USE_TZ: the engine imports this module
        # and stays free of Django.
        "timestamp": datetime.now(UTC).isoformat(),
    }

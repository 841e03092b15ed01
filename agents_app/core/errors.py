"""One family of errors with seed 000's codes; the API maps them once to the error envelope."""

from typing import Any

# code -> HTTP status. Seed 000's hierarchy plus the platform's own codes.
ERROR_STATUS: dict[str, int] = {
    # planning
    "INVALID_PLAN": 400,
    "PLANNING_FAILED": 500,
    "PLANNING_TIMEOUT": 504,
    "WEAK_MODEL": 400,
    # execution
    "TOOL_NOT_FOUND": 400,
    "TOOL_FAILED": 500,
    "INVALID_ARGUMENTS": 400,
    "EXECUTION_TIMEOUT": 504,
    "INSUFFICIENT_RESOURCES": 429,
    "BUDGET_EXCEEDED": 429,
    # verification
    "VERIFICATION_FAILED": 500,
    "VERIFICATION_TIMEOUT": 504,
    # network / LLM
    "CONNECTION_REFUSED": 503,
    "REQUEST_TIMEOUT": 504,
    "INVALID_RESPONSE": 502,
    "LLM_NOT_CONFIGURED": 503,
    # resources
    "OUT_OF_MEMORY": 500,
    "RATE_LIMITED": 429,
    "MAX_RETRIES_EXCEEDED": 500,
    # requests
    "VALIDATION_ERROR": 400,
    "UNAUTHORIZED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "CONFLICT": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "SERVICE_UNAVAILABLE": 503,
    "INTERNAL_ERROR": 500,
}


class DomainError(Exception):
    """An error a client or a run can be told about: a seed 000 code, a message and details."""

    def __init__(self, code: str, message: str, details: Any = None):
        if code not in ERROR_STATUS:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details if details is not None else {}

    @property
    def http_status(self) -> int:
        return ERROR_STATUS[self.code]

    def __repr__(self) -> str:
        return f"DomainError({self.code!r}, {self.message!r})"

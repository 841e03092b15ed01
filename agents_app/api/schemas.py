"""What every REST schema and MCP tool of every domain uses (django-ninja): the constrained
input types, the error envelope and `errors()`. A domain's own shapes are api/<domain>/schemas.py.

Inputs use the constrained types below, so every integer has a bound a column can hold, every
text is storable on SQLite and PostgreSQL alike (`agents_app.core.inputs`), and booleans and
body integers are strict (`{"yolo": 0}` is no boolean). A value outside them is a 400
VALIDATION_ERROR naming the field, the same from REST and MCP."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import AfterValidator, StrictBool, StrictInt

from agents_app.core.errors import ErrorCode
from agents_app.core.inputs import (
    PAGE_MAX,
    QUERY_INT_MAX,
    STORED_INT_MAX,
    json_problem,
    text_problem,
)


def _storable_text(value: str) -> str:
    problem = text_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def _storable_json(value: Any) -> Any:
    found = json_problem(value)
    if found:
        path, problem = found
        raise ValueError(f"{path}: {problem}" if path else problem)
    return value


# Text that SQLite and PostgreSQL both store: valid UTF-8, no NUL.
Text = Annotated[str, AfterValidator(_storable_text)]
# Text that must say something: `""` and blanks are refused by the schema as by the services.
NonBlankText = Annotated[str, Field(min_length=1, pattern=r"\S"), AfterValidator(_storable_text)]
# A JSON object whose keys and strings are all storable.
JsonObject = Annotated[dict[str, Any], AfterValidator(_storable_json)]
# A count stored in a PositiveIntegerField (a budget, seconds): JSON integers only.
Count = Annotated[StrictInt, Field(ge=1, le=STORED_INT_MAX)]
# An id in a body or a query (BigAutoField).
Id = Annotated[int, Field(ge=1, le=QUERY_INT_MAX)]
Page = Annotated[int, Field(ge=1, le=PAGE_MAX, description="1-based page number.")]
PageSize = Annotated[int, Field(ge=1, le=100, description="Items per page.")]
Flag = StrictBool


class ErrorDetail(Schema):
    code: ErrorCode
    message: str
    http_status: int
    details: dict[str, Any]
    trace_id: str
    timestamp: datetime


class ErrorEnvelope(Schema):
    """Seed 000's error envelope: every 4xx and 5xx of the API."""

    success: Literal[False]
    error: ErrorDetail
    result: dict[str, Any] | None = Field(
        default=None, description="A waited-for run that failed: its AgentResult."
    )


def errors(*statuses: int) -> dict[int, type[ErrorEnvelope]]:
    """Error answers an operation gives beyond the ones every operation documents (see
    `agents_app.api.site`), for a route's `response=`."""
    return dict.fromkeys(statuses, ErrorEnvelope)

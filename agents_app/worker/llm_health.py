"""A provider that tells its LLM connection how real calls went: a success marks it ok (unless
the row, as the run read it, already says so, with the same capabilities, checked within
FRESH_SECONDS: every worker's every run would otherwise write the one row all of them read),
and again when the endpoint turned out to need a fallback; a failure to reach or use the
server marks it broken with the reason. The engine stays free of Django: it only sees an
LLMProvider."""

from datetime import timedelta

from django.utils import timezone

from agents_app.connections.health import connection_mark
from agents_app.core.errors import ErrorCode
from agents_app.engine.llm import LLMError, LLMRequest, LLMResponse
from agents_app.engine.openai_provider import OpenAICompatibleProvider, endpoint_capabilities
from agents_app.models import ConnectionStatus, LLMConnection

# How old an "ok" may be before a successful call writes it again.
FRESH_SECONDS = 60

# Failures that say the connection does not work, not that one answer was odd.
BROKEN_CODES = frozenset(
    {ErrorCode.CONNECTION_REFUSED, ErrorCode.REQUEST_TIMEOUT, ErrorCode.MAX_RETRIES_EXCEEDED}
)


def breaks_connection(error: LLMError) -> bool:
    """Whether the failure is the connection's: unreachable, timing out, failing, or refusing
    the request (an HTTP status: a wrong key, URL or model)."""
    details = error.details if isinstance(error.details, dict) else {}
    return error.code in BROKEN_CODES or (
        error.code == ErrorCode.INVALID_RESPONSE and "status" in details
    )


class WatchedProvider:
    def __init__(self, provider: OpenAICompatibleProvider, connection: LLMConnection) -> None:
        self.provider = provider
        self.connection_id = connection.pk
        self.model = provider.model
        # The capabilities the row says the endpoint has, when it says it works and was
        # checked lately; None: the next success is written.
        fresh = connection.last_checked_at is not None and (
            timezone.now() - connection.last_checked_at < timedelta(seconds=FRESH_SECONDS)
        )
        ok = connection.status == ConnectionStatus.OK and fresh
        self._recorded: dict | None = connection.capabilities if ok else None

    def complete(self, request: LLMRequest) -> LLMResponse:
        try:
            response = self.provider.complete(request)
        except LLMError as error:
            if breaks_connection(error):
                # The reason is staff's (connections.presenters): what the server said too.
                said = f": the server said: {error.server_text}" if error.server_text else ""
                connection_mark(self.connection_id, ok=False, reason=error.message + said)
                self._recorded = None
            raise
        capabilities = endpoint_capabilities(self.provider.base_url, self.provider.model)
        if capabilities != self._recorded:
            connection_mark(self.connection_id, ok=True, capabilities=capabilities)
            self._recorded = capabilities
        response.connection_id = self.connection_id  # kept with the call (ModelExchange)
        return response

    def close(self) -> None:
        self.provider.close()

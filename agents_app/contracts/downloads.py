"""An attempt's log as an HTTP download: the chat page's agent tab and the REST API serve it
alike."""

from django.http import HttpResponse

from agents_app.contracts.logs import log_path, log_text
from agents_app.models import Run


def log_download(run: Run) -> HttpResponse:
    """An attempt's log as a text/plain attachment named like its file; when the file could not
    be written, the text rendered from the rows with the reason in X-Log-Write-Error."""
    text, problem = log_text(run)
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{log_path(run).name}"'
    if problem is not None:
        # A header is Latin-1; the path in the message may not be.
        response["X-Log-Write-Error"] = problem.encode("ascii", "replace").decode()[:500]
    return response

"""The pages a person sees when something goes wrong: a refused form (CSRF), and the 400, 403,
404 and 500 pages Django renders from templates/ when DEBUG is off.

An htmx request gets the error as a fragment it can show in place (live.js puts it above the
form that sent it); a plain request gets a whole page in the site's style."""

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from agents_app.core.errors import ErrorCode


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the form's token was missing or stale (an old tab, a new login)."""
    message = "This form has expired. Reload the page and send it again."
    if request.headers.get("HX-Request") == "true":
        error = {"code": ErrorCode.FORBIDDEN, "message": message}
        html = render_to_string("partials/error.html", {"error": error}, request=request)
        return HttpResponse(html, status=403)
    html = render_to_string("403.html", {"message": message}, request=request)
    return HttpResponse(html, status=403)

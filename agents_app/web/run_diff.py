"""The diff page (issue 36, item 5): two of a person's runs side by side, their first
difference highlighted and linked from a line at the top. The comparison is
`runs.diff.run_diff`'s, as REST and MCP give it."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from agents_app.core.errors import DomainError
from agents_app.runs.diff import run_diff


@login_required
@require_http_methods(["GET"])
def run_diff_page(request: HttpRequest, run_id: int, other_id: int) -> HttpResponse:
    try:
        a, b, diff, extra = run_diff(user=request.user, a_id=run_id, b_id=other_id)
    except DomainError as error:
        raise Http404(error.message) from None
    first = diff.first_divergence
    context = {
        "a": a,
        "b": b,
        "diff": diff,
        "extra": extra,
        "first": first,
        # The row to mark, and the anchor `#first-difference` the page scrolls to.
        "first_anchor": first.anchor if first is not None else "",
    }
    return render(request, "agents/run_diff.html", context)

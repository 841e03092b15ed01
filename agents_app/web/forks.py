"""Forking a run from its page (issue 36, item 3): each completed step of a finished run that
may be forked has a "Fork after this step" form (the remaining steps one a line, an extra
instruction, a model); its POST calls the service REST and MCP call (runs.forks.run_fork)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agents_app.core.errors import DomainError
from agents_app.models import AuditInterface
from agents_app.runs.forks import run_fork
from agents_app.web.views import HtmxHttpRequest, render_run, run_url


def _plan_version(value: str) -> int | str | None:
    """The form's plan version: None when empty, else as an int when it is one (the service
    refuses anything else with VALIDATION_ERROR)."""
    value = value.strip()
    if not value:
        return None
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else value


@login_required
@require_POST
def run_fork_view(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    """The fork's page once it is queued; a refusal renders the run page with the error at
    the error's status (another person's run: 404, as render_run answers for it)."""
    lines = [line for line in request.POST.get("steps", "").splitlines() if line.strip()]
    try:
        fork = run_fork(
            user=request.user,
            run_id=run_id,
            after_step=request.POST.get("after_step", ""),
            plan_version=_plan_version(request.POST.get("plan_version", "")),
            steps=lines or None,
            instruction=request.POST.get("instruction", ""),
            connection=request.POST.get("connection") or None,
            actor=request.user,
            interface=AuditInterface.WEB,
        )
    except DomainError as error:
        return render_run(request, run_id, error=error, status=error.http_status)
    return redirect(run_url(fork))

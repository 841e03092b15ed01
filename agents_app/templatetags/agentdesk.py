"""Small filters the pages share."""

from django import template

from agents_app.models import RunStatus
from agents_app.runs.files import display_path
from agents_app.runs.recipes import recipe_for

register = template.Library()

STATUS_LABELS = {
    RunStatus.WAITING_APPROVAL: "waiting for approval",
    RunStatus.PAUSED: "paused",
    RunStatus.WAITING_CHILDREN: "waiting for subtasks",
}


@register.filter
def status_label(status: str) -> str:
    """A run, step or call status as people read it (`waiting_approval` → waiting for approval)."""
    return STATUS_LABELS.get(status, str(status).replace("_", " "))


@register.filter
def duration(seconds: float | None) -> str:
    """Seconds as people read a run's length: `42 s`, `3 min 05 s`, `2 h 07 min`; `—` for
    none (a run not started yet)."""
    if seconds is None:
        return "—"
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


@register.filter
def file_path(path: str) -> str:
    """A workspace path as the Files panel shows and asks for it (`runs.files.display_path`:
    a control character or a backslash as `\\xNN`), so a link to the file finds it."""
    return display_path(str(path))


@register.filter
def kind_label(run) -> str:
    """How people name the run's kind ("task", "chat answer", …): its recipe's label."""
    return recipe_for(run.kind).label


@register.filter
def offers(run, action: str) -> bool:
    """Whether a person may take `action` (cancel, pause, resume, restart) on a run of its
    kind: what makes no sense for it is not offered."""
    return action in recipe_for(run.kind).actions

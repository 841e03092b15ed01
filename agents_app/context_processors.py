from django.http import HttpRequest

from agents_app.models import KillSwitch


def kill_switch(request: HttpRequest) -> dict:
    """The kill switch's state for every page's banner (one indexed query)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"kill_switch": KillSwitch.objects.filter(pk=1, engaged=True).first()}

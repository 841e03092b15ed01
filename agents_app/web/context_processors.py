from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest

from agents_app.approvals.policy import yolo_active
from agents_app.demo import DEMO_MODEL_NAME
from agents_app.models import Approval, ApprovalStatus, KillSwitch, UserPreferences


def demo_model(request: HttpRequest) -> dict:
    """Whether the default connection is the scripted demo `go` serves without an LLM: every
    page then says so."""
    return {"demo_model": settings.LLM_MODEL == DEMO_MODEL_NAME}


def kill_switch(request: HttpRequest) -> dict:
    """The kill switch's state for every page's banner (one indexed query)."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {"kill_switch": KillSwitch.objects.filter(pk=1, engaged=True).first()}


def approvals(request: HttpRequest) -> dict:
    """The header's count of pending approvals and the YOLO banner, in one query. The
    permission YOLO also needs is checked only while the switch is on, which is rare."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    pending = (
        Approval.objects.filter(owner=OuterRef("pk"), status=ApprovalStatus.PENDING)
        .order_by()
        .values("owner")
        .annotate(n=Count("pk"))
        .values("n")
    )
    row = (
        get_user_model()
        .objects.filter(pk=user.pk)
        .values(
            yolo=Exists(UserPreferences.objects.filter(user=OuterRef("pk"), yolo=True)),
            pending=Coalesce(Subquery(pending, output_field=IntegerField()), Value(0)),
        )
        .first()
    ) or {"yolo": False, "pending": 0}
    return {
        "approvals_pending": row["pending"],
        "yolo_banner": row["yolo"] and yolo_active(user),
    }

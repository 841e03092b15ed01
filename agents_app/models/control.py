"""The platform-wide kill switch."""

from django.conf import settings
from django.db import models


class KillSwitch(models.Model):
    """The platform's one kill switch (row 1). Engaged, every run pauses at its next step
    boundary and no run starts; released, the paused runs go on where they were."""

    engaged = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    changed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "kill switch"
        verbose_name_plural = "kill switch"

    def __str__(self) -> str:
        return "Kill switch: engaged" if self.engaged else "Kill switch: released"

    @classmethod
    def is_engaged(cls) -> bool:
        return cls.objects.filter(pk=1, engaged=True).exists()

    @classmethod
    def current(cls) -> "KillSwitch":
        switch, _ = cls.objects.get_or_create(pk=1)
        return switch

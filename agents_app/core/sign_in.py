"""Sign-in that throttles failures (`throttle`), for every form a person signs in with: the
site's /login/ (agents_app.web.sign_in) and the admin's /admin/login/ (agents_app.admin)."""

from typing import Any

from django.core.exceptions import ValidationError

from agents_app.core import throttle
from agents_app.models import AuditInterface


class ThrottledSignIn:
    """Mixed in before an AuthenticationForm: each attempt is counted before the password is
    checked, so once throttled the form says how long to wait and the right password is
    refused too; a refused sign-in is audited, a successful one takes its attempt back."""

    interface: str = AuditInterface.WEB

    def clean(self) -> dict[str, Any]:
        request = getattr(self, "request", None)
        username = self.cleaned_data.get("username")
        if request is None or not username or not self.cleaned_data.get("password"):
            return super().clean()  # a field is missing: nothing was tried
        address = throttle.request_address(request)
        try:
            throttle.login_attempt(username=username, address=address, interface=self.interface)
        except throttle.Throttled as throttled:
            raise ValidationError(throttled.message, code="throttled") from None
        try:
            cleaned = super().clean()
        except ValidationError:
            throttle.login_failed(username=username, address=address, interface=self.interface)
            raise
        throttle.login_succeeded(username=username, address=address)
        return cleaned

"""The site's sign-in form (/login/): Django's, throttled (core/sign_in; the admin's
/admin/login/ uses the same mixin)."""

from django.contrib.auth.forms import AuthenticationForm

from agents_app.core.sign_in import ThrottledSignIn


class SignInForm(ThrottledSignIn, AuthenticationForm):
    pass

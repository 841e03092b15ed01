"""Create the first superuser so a fresh install can be signed into; `go` runs this on start."""

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from config.env import env_str


class Command(BaseCommand):
    help = (
        "Create a superuser if none exists: ADMIN_USERNAME (default admin), ADMIN_EMAIL, and "
        "ADMIN_PASSWORD, or a generated password printed once and stored nowhere."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()._default_manager
        if users.filter(is_superuser=True).exists():
            return
        username = env_str("ADMIN_USERNAME", "admin")
        if users.filter(username=username).exists():
            raise CommandError(
                f"User {username!r} exists but is not a superuser; set ADMIN_USERNAME to a new "
                "name, or run `manage.py createsuperuser`."
            )
        password = env_str("ADMIN_PASSWORD")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(12)
        users.create_superuser(username, env_str("ADMIN_EMAIL"), password)
        if not generated:
            self.stdout.write(
                f"Created superuser {username!r} with the password in ADMIN_PASSWORD."
            )
            return
        self.stdout.write(
            _boxed(
                "AgentDesk superuser created",
                f"username: {username}",
                f"password: {password}",
                "Shown only this once and not stored; change it after signing in.",
            )
        )


def _boxed(*lines: str) -> str:
    width = max(len(line) for line in lines)
    border = "+" + "-" * (width + 4) + "+"
    return "\n".join([border, *(f"|  {line.ljust(width)}  |" for line in lines), border])

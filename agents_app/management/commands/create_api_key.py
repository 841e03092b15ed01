from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from agents_app.models import ApiKey


class Command(BaseCommand):
    help = "Create an API key for a user and print it once (only its hash is stored)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="cli", help="A label to tell keys apart.")

    def handle(self, *args, username, name, **options):
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active user named {username!r}")
        raw_key = ApiKey.generate()
        key = ApiKey(user=user, name=name)
        key.set_key(raw_key)
        key.save()
        self.stdout.write(raw_key)

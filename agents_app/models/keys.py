"""API keys for mobile and script clients."""

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils import timezone

API_KEY_PREFIX = "adk_"


class ApiKey(models.Model):
    """A bearer key for mobile and script clients. Only its SHA-256 is stored."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, editable=False, help_text="Shown to tell keys apart.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def hash(raw_key: str) -> str:
        # Keys are 256 random bits, so a plain digest is enough: no dictionary to defend against.
        return hashlib.sha256(raw_key.encode()).hexdigest()

    @classmethod
    def generate(cls) -> str:
        return API_KEY_PREFIX + secrets.token_urlsafe(32)

    def set_key(self, raw_key: str) -> None:
        self.prefix = raw_key[: len(API_KEY_PREFIX) + 6]
        self.key_hash = self.hash(raw_key)

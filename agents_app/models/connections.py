"""LLM connections: the OpenAI-compatible servers and models staff offer people to run tasks on.

A row never holds an API key: `api_key` is blank or a `${VAR}` reference to an environment
variable of AgentDesk's, read only when a worker builds the provider. One row, `seeded`, mirrors
the LLM_* settings (`connections.services.connection_ensure_default`); exactly one enabled row
is the default (the database allows at most one, the ensure picks one when none is).
"""

import os
import re
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models, transaction
from django.utils import timezone

KEY_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}\Z")
KEY_REFERENCE_MESSAGE = (
    "Write the API key as a reference to an environment variable of AgentDesk's, e.g. "
    "${OPENAI_API_KEY}, and set that variable where AgentDesk runs: the key itself is never "
    "stored or shown."
)
# A name is used in REST (`connection`: id or name), so it is never only digits.
CONNECTION_NAME_PATTERN = r"^(?![0-9]+\Z)[A-Za-z0-9][A-Za-z0-9._-]{0,49}\Z"
validate_connection_name = RegexValidator(
    CONNECTION_NAME_PATTERN,
    "Use 1 to 50 letters, digits, '.', '-' and '_', starting with a letter or digit, "
    "not only digits.",
)
NOT_CHECKED = "Not checked yet."
LAST_ERROR_MAX = 2000


class ModelPhase(models.TextChoices):
    """The parts of a run that may each have their own connection (seed 004: a large planner,
    small executors). Planning also covers task analysis, team decomposition, contract
    evaluation and condensation; verifying judges a result; executing does the steps."""

    PLANNING = "planning", "planning"
    EXECUTING = "executing", "executing"
    VERIFYING = "verifying", "verifying"


class ConnectionStatus(models.TextChoices):
    UNCHECKED = "unchecked", "not checked yet"
    OK = "ok", "ok"
    BROKEN = "broken", "broken"


class LLMConnection(models.Model):
    """One model on one OpenAI-compatible server. Health fields are written by checks and by
    the worker's real calls (`connections.health`), never by the admin form."""

    name = models.CharField(max_length=50, unique=True, validators=[validate_connection_name])
    base_url = models.CharField(
        "base URL",
        max_length=500,
        help_text="OpenAI-compatible, e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1",
    )
    model = models.CharField(max_length=200, help_text="As the server names it, e.g. qwen2.5:7b")
    api_key = models.CharField(
        "API key",
        max_length=200,
        blank=True,
        help_text="A reference to an environment variable, e.g. ${OPENAI_API_KEY}; blank for "
        "servers that need none. Never the key itself.",
    )
    context_window = models.PositiveIntegerField(
        "context window", null=True, blank=True, help_text="Tokens the model can read at once."
    )
    enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(
        "default", default=False, help_text="Preselected for new tasks; exactly one is."
    )
    seeded = models.BooleanField(
        "from LLM_* settings",
        default=False,
        editable=False,
        help_text="Follows LLM_BASE_URL, LLM_MODEL and LLM_API_KEY; edit those instead.",
    )
    capabilities = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="What the worker found the endpoint accepts (the provider's fallbacks).",
    )

    status = models.CharField(
        max_length=10,
        choices=ConnectionStatus.choices,
        default=ConnectionStatus.UNCHECKED,
        editable=False,
    )
    last_error = models.TextField(blank=True, default=NOT_CHECKED, editable=False)
    last_checked_at = models.DateTimeField(null=True, blank=True, editable=False)

    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM connection"
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"],
                condition=models.Q(is_default=True),
                name="llmconnection_one_default",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.api_key = (self.api_key or "").strip()
        with transaction.atomic():
            if self.is_default:
                # The one default: the others give it up first (the constraint allows one).
                LLMConnection.objects.filter(is_default=True).exclude(pk=self.pk).update(
                    is_default=False
                )
            super().save(*args, **kwargs)

    def validate_constraints(self, exclude: Any = None) -> None:
        # save() takes the default from the one before; the constraint only guards the race.
        super().validate_constraints(exclude={*(exclude or ()), "is_default"})

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.seeded:
            # Its server, model and key are the LLM_* settings', checked where they are read.
            if self.is_default and not self.enabled:
                raise ValidationError(
                    {"is_default": "A disabled connection cannot be the default."}
                )
            return
        if not re.match(r"^https?://[^\s/]+", self.base_url or ""):
            errors["base_url"] = "The base URL must start with http:// or https://."
        elif re.match(r"^https?://[^/@\s]*@", self.base_url) or "?" in self.base_url:
            errors["base_url"] = (
                "The base URL may hold no user, password or query: put the key in API key "
                "as ${VAR}."
            )
        if not (self.model or "").strip():
            errors["model"] = "Name the model, as the server knows it."
        if self.api_key and not KEY_REFERENCE.match(self.api_key.strip()):
            errors["api_key"] = KEY_REFERENCE_MESSAGE
        if self.is_default and not self.enabled:
            errors["is_default"] = "A disabled connection cannot be the default."
        if errors:
            raise ValidationError(errors)

    @property
    def key_variable(self) -> str:
        """The environment variable the key is read from, or "" for none."""
        match = KEY_REFERENCE.match(self.api_key or "")
        return match.group(1) if match else ""

    def key_value(self) -> str | None:
        """The key from the environment; "" when none is configured, None when the variable it
        names is not set."""
        name = self.key_variable
        if not name:
            return ""
        return os.environ.get(name) or None

    @property
    def usable(self) -> bool:
        return bool(self.enabled and self.base_url and self.model)

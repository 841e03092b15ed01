"""Agent profiles (seed 001): the kinds of agent a team run is made of, each with its role,
persona, model and limits. Staff manage them in the admin; everyone signed in reads them.

A profile's connection is null for "the default connection, whichever it is when a run starts",
and its model blank for "the connection's model": the profiles seed 001 brings (migration 0012)
start that way, on whatever LLM the site is configured with, until staff point them elsewhere.
Whether a tool name exists is the admin form's check (the registry lives in the workers'
processes and MCP servers come and go); a row only checks the lists' shape.
"""

import re
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

# A name may be given in REST later (an explicit preference), so, as a connection's, it is
# never only digits.
PROFILE_NAME_PATTERN = r"^(?![0-9]+\Z)[A-Za-z0-9][A-Za-z0-9._-]{0,49}\Z"
validate_profile_name = RegexValidator(
    PROFILE_NAME_PATTERN,
    "Use 1 to 50 letters, digits, '.', '-' and '_', starting with a letter or digit, "
    "not only digits.",
)
SPECIALISATION = re.compile(r"^[a-z0-9][a-z0-9_]{0,49}\Z")
TEMPERATURE_MAX = 2.0


class AgentRole(models.TextChoices):
    ORCHESTRATOR = "orchestrator", "orchestrator"
    RESEARCH = "research", "research"
    BUILDER = "builder", "builder"
    SYNTHESIS = "synthesis", "synthesis"
    CUSTOM = "custom", "custom"


# The budgets a profile may set for each of its runs, and the setting a null one leaves it to.
PROFILE_BUDGETS = {
    "max_tokens": "RUN_MAX_TOKENS",
    "max_tool_calls": "RUN_MAX_TOOL_CALLS",
    "max_seconds": "AGENT_RUN_TIMEOUT",
}


def _string_list_problem(value: Any) -> str:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return "Give a list of names (strings)."
    if any(not item.strip() for item in value):
        return "A name may not be blank."
    if len(set(value)) != len(value):
        return "Name each one once."
    return ""


class AgentProfile(models.Model):
    """One kind of agent: a row of seed 001's agent definitions."""

    name = models.CharField(max_length=50, validators=[validate_profile_name])
    role = models.CharField(max_length=20, choices=AgentRole.choices, default=AgentRole.CUSTOM)
    persona = models.TextField(
        "persona / system prompt",
        help_text="The system prompt its runs start with: who it is and how it works.",
    )
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="profiles",
        help_text="Empty: the default LLM connection, whichever it is when a run starts.",
    )
    planning_connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="planning_profiles",
        help_text="Plans its runs (and analyses, decomposes, evaluates and condenses); empty: "
        "the connection above.",
    )
    verifying_connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="verifying_profiles",
        help_text="Judges its runs' results; empty: the connection above.",
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        help_text="Blank: the connection's model. Otherwise as the connection's server names it.",
    )
    temperature = models.FloatField(
        default=0.7,
        help_text="0 to 2.",
    )
    specialisations = models.JSONField(
        default=list,
        blank=True,
        help_text="What it is good at, e.g. code_generation; the head node scores task "
        "features against them.",
    )
    allowed_tools = models.JSONField(
        "allowed tools", default=list, blank=True, help_text="Empty: every tool."
    )
    excluded_tools = models.JSONField(
        "excluded tools", default=list, blank=True, help_text="Never offered to its runs."
    )
    concurrency_limit = models.PositiveIntegerField(
        "concurrency limit",
        default=4,
        help_text="Runs of this profile at the same time, across all workers.",
    )
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="LLM tokens per run; empty: RUN_MAX_TOKENS."
    )
    max_tool_calls = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tool calls per run; empty: RUN_MAX_TOOL_CALLS."
    )
    max_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds per run; empty: AGENT_RUN_TIMEOUT."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "agent profile"
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="agentprofile_name_unique",
                violation_error_message="A profile with this name exists already.",
            ),
            models.CheckConstraint(
                condition=models.Q(temperature__gte=0) & models.Q(temperature__lte=TEMPERATURE_MAX),
                name="agentprofile_temperature_range",
                violation_error_message="The temperature is from 0 to 2.",
            ),
            models.CheckConstraint(
                condition=models.Q(concurrency_limit__gte=1),
                name="agentprofile_concurrency_positive",
                violation_error_message="At least one run at a time.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        # The range checks are here rather than as field validators so a form shows one
        # message per field; the database's check constraints guard the other writers.
        errors: dict[str, str] = {}
        self.model = (self.model or "").strip()
        if not (self.persona or "").strip():
            errors["persona"] = "Write the persona: the system prompt its runs start with."
        if self.temperature is not None and not 0 <= self.temperature <= TEMPERATURE_MAX:
            errors["temperature"] = "The temperature is from 0 to 2."
        if self.concurrency_limit is not None and self.concurrency_limit < 1:
            errors["concurrency_limit"] = "At least one run at a time."
        for field in PROFILE_BUDGETS:
            value = getattr(self, field)
            if value is not None and value < 1:
                errors[field] = "A budget is a positive number, or empty for the default."
        problem = _string_list_problem(self.specialisations)
        if not problem and not all(SPECIALISATION.match(s) for s in self.specialisations):
            problem = "Use lower-case words joined by '_', e.g. code_generation."
        if problem:
            errors["specialisations"] = problem
        for field in ("allowed_tools", "excluded_tools"):
            problem = _string_list_problem(getattr(self, field))
            if problem:
                errors[field] = problem
        if "allowed_tools" not in errors and "excluded_tools" not in errors:
            both = sorted(set(self.allowed_tools) & set(self.excluded_tools))
            if both:
                errors["excluded_tools"] = (
                    f"Both allowed and excluded: {', '.join(both)}. Pick one for each tool."
                )
        if errors:
            raise ValidationError(errors)

"""Contract agents (seed 002): a contract a model works on autonomously. Each Start is an
attempt: a Run (kind contract) whose transcript is a Conversation of the agent's own."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class ContractAgent(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="contract_agents"
    )
    name = models.CharField(max_length=100)
    contract = models.TextField()
    # The LLM connection its attempts use; null: the default at each start.
    connection = models.ForeignKey(
        "agents_app.LLMConnection",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="contract_agents",
    )
    # Budgets of one attempt; null: CONTRACT_MAX_TURNS, CONTRACT_MAX_TOKENS, CONTRACT_MAX_SECONDS.
    max_turns = models.PositiveIntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(null=True, blank=True)
    max_seconds = models.PositiveIntegerField(null=True, blank=True)
    # Shown as a tab until the person closes it.
    is_open = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.name

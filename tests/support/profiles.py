"""Seed 001's agent profiles, as migration 0012 creates them."""

import importlib

from django.apps import apps

from agents_app.models import AgentProfile

seeding = importlib.import_module("agents_app.migrations.0012_seed_agent_profiles")
SEEDED = sorted(p["name"] for p in seeding.PROFILES)


def seed_profiles() -> dict[str, AgentProfile]:
    """The four profiles, created by the migration's own function where missing, by name."""
    seeding.create_profiles(apps, None)
    return {p.name: p for p in AgentProfile.objects.filter(name__in=SEEDED)}

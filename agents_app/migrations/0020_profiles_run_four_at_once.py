"""The seeded agent profiles run 4 at a time instead of 2 (and a new profile's default is 4).
Their limit of 2 dated from workers that ran one run per process; a worker now runs many
(docs/ARCHITECTURE.md), and a team's 8 children over the three worker profiles could not all
be in flight at once (3 x 2 = 6). A seeded profile whose limit staff changed keeps theirs."""

from django.db import migrations, models

SEEDED = ["head_node", "research_agent", "builder_agent", "synthesis_agent"]


def raise_limits(apps, schema_editor):
    AgentProfile = apps.get_model("agents_app", "AgentProfile")
    AgentProfile.objects.filter(name__in=SEEDED, concurrency_limit=2).update(concurrency_limit=4)


def lower_limits(apps, schema_editor):
    AgentProfile = apps.get_model("agents_app", "AgentProfile")
    AgentProfile.objects.filter(name__in=SEEDED, concurrency_limit=4).update(concurrency_limit=2)


class Migration(migrations.Migration):
    dependencies = [("agents_app", "0019_runs_wait_their_turn")]

    operations = [
        migrations.AlterField(
            model_name="agentprofile",
            name="concurrency_limit",
            field=models.PositiveIntegerField(
                default=4,
                help_text="Runs of this profile at the same time, across all workers.",
                verbose_name="concurrency limit",
            ),
        ),
        migrations.RunPython(raise_limits, lower_limits),
    ]

"""Seed 001's head node and its three specialists, as agent profiles.

Names, roles, personas, temperatures and specialisations are seed 001's (its agent types, their
configurations and the rows of its selection matrix where each is the primary agent). Each
starts on the default connection with the connection's model (connection null, model blank):
seed 001 names Gemini, Codex and Claude models, which a site may not have; staff point each
profile at a connection in the admin. Seed 001 gives the head node no temperature: it gets a
low one, as its work is deciding and splitting, not writing."""

from django.db import migrations

COLLABORATION = (
    "\n\nCollaboration notes:\n"
    "- Other agents may have completed related tasks\n"
    "- Your output will be used by downstream agents\n"
    "- Be precise and include all necessary details"
)


def persona(agent_type: str, role: str, capabilities: list[str], use_cases: list[str]) -> str:
    # Seed 001's system prompt template, with the agent's role, capabilities and use cases.
    return (
        f"You are a specialized {agent_type} agent in a multi-agent system.\n\n"
        f"Your role: {role}\n\n"
        "Your capabilities:\n"
        + "".join(f"- {c}\n" for c in capabilities)
        + "\nYou are the one to ask for:\n"
        + "".join(f"- {u}\n" for u in use_cases).rstrip("\n")
        + COLLABORATION
    )


PROFILES = [
    {
        "name": "head_node",
        "role": "orchestrator",
        "temperature": 0.2,
        "persona": persona(
            "head node (orchestrator)",
            "Central coordinator that analyzes tasks, delegates work, and aggregates results.",
            [
                "Task analysis and classification",
                "Subtask decomposition",
                "Agent assignment",
                "Progress monitoring",
                "Result aggregation",
                "Error recovery coordination",
            ],
            ["Complex tasks that need several specialised agents"],
        ),
        "specialisations": [
            "task_analysis",
            "subtask_decomposition",
            "agent_assignment",
            "progress_monitoring",
            "result_aggregation",
            "error_recovery",
        ],
    },
    {
        "name": "research_agent",
        "role": "research",
        "temperature": 0.7,
        "persona": persona(
            "research",
            "Information gathering, large context analysis, exploration.",
            [
                "Large context window",
                "Multi-document synthesis",
                "Web research integration",
                "Pattern discovery",
                "Exploratory analysis",
            ],
            [
                "Codebase exploration",
                "Documentation analysis",
                "Market research",
                "Competitive analysis",
                "Large file processing",
            ],
        ),
        "specialisations": [
            "exploration",
            "synthesis",
            "documentation_analysis",
            "large_context",
            "research",
        ],
    },
    {
        "name": "builder_agent",
        "role": "builder",
        "temperature": 0.3,
        "persona": persona(
            "builder",
            "Code generation, implementation, planning.",
            [
                "Strong code generation",
                "Multi-language support",
                "Architecture planning",
                "Test generation",
                "Refactoring",
            ],
            [
                "Feature implementation",
                "Bug fixes",
                "Code refactoring",
                "Test writing",
                "Build configuration",
            ],
        ),
        "specialisations": [
            "code_generation",
            "implementation",
            "testing",
            "refactoring",
            "fast_iteration",
            "documentation",
        ],
    },
    {
        "name": "synthesis_agent",
        "role": "synthesis",
        "temperature": 0.5,
        "persona": persona(
            "synthesis",
            "Complex reasoning, judgment, review, and final synthesis.",
            [
                "Deep reasoning",
                "Code review",
                "Security analysis",
                "Quality judgment",
                "Final synthesis",
            ],
            [
                "Code review",
                "Architecture decisions",
                "Security assessment",
                "Quality validation",
                "Final output generation",
            ],
        ),
        "specialisations": [
            "code_review",
            "security_analysis",
            "architecture_decisions",
            "synthesis",
            "complex_reasoning",
        ],
    },
]


def create_profiles(apps, schema_editor):
    AgentProfile = apps.get_model("agents_app", "AgentProfile")
    for values in PROFILES:
        AgentProfile.objects.get_or_create(
            name=values["name"],
            defaults={**values, "connection": None, "model": "", "concurrency_limit": 2},
        )


def remove_profiles(apps, schema_editor):
    AgentProfile = apps.get_model("agents_app", "AgentProfile")
    AgentProfile.objects.filter(name__in=[p["name"] for p in PROFILES]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0011_agent_profiles"),
    ]

    operations = [migrations.RunPython(create_profiles, remove_profiles)]

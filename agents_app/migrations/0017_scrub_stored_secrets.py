"""Scrub secrets already stored: before every text from outside went through one redaction
point (agents_app.core.secrecy), a model server that echoed its API key (some gateways answer
"Received API Key = Bearer <key>") left the key in the connection's health, the run's error,
its events, steps, tool calls and audit rows.

What is scrubbed: the keys of the LLM connections that can be read where this migration runs
(their `${VAR}` and LLM_API_KEY from this environment, which under `go` is the application's
own), the values of the environment's variables named like secrets, in their common encodings,
and tokens of a known shape (core.secrecy.redact). Only rows that change are written, so it can
run again, and costs one read of each table when there is nothing to scrub. A key that was
stored is exposed: rotate it (README, "Security defaults").
"""

import os
import re

from django.db import migrations

from agents_app.core.secrecy import known_secrets, redact, redact_all

KEY_REFERENCE = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}\Z")
BATCH = 2000

# (model, text fields, JSON fields)
TABLES = [
    ("LLMConnection", ["last_error"], []),
    ("Run", ["error_message", "final_response", "replan_reason"], []),
    ("Step", ["error", "output"], []),
    ("RunEvent", [], ["payload"]),
    ("ToolCall", ["error"], ["result"]),
    ("AuditEvent", ["target"], ["details"]),
]


def connection_keys(apps) -> list[str]:
    LLMConnection = apps.get_model("agents_app", "LLMConnection")
    keys = [os.environ.get("LLM_API_KEY", "")]
    for reference in LLMConnection.objects.values_list("api_key", flat=True):
        match = KEY_REFERENCE.match((reference or "").strip())
        if match:
            keys.append(os.environ.get(match.group(1), ""))
    return [key for key in keys if key]


def scrub(apps, schema_editor):
    secrets = list(known_secrets(connection_keys(apps)))
    for model_name, texts, documents in TABLES:
        model = apps.get_model("agents_app", model_name)
        fields = texts + documents
        # The plain base manager: the audit log's refusal of updates is the product's;
        # scrubbing a secret out of it is this migration's one exception.
        table = model._base_manager
        rows = table.only("pk", *fields).order_by("pk").iterator(chunk_size=BATCH)
        for row in rows:
            changes = {}
            for name in texts:
                value = getattr(row, name)
                if isinstance(value, str) and (scrubbed := redact(value, secrets)) != value:
                    changes[name] = scrubbed
            for name in documents:
                value = getattr(row, name)
                if (scrubbed := redact_all(value, secrets)) != value:
                    changes[name] = scrubbed
            if changes:
                table.filter(pk=row.pk).update(**changes)


class Migration(migrations.Migration):
    dependencies = [("agents_app", "0016_runevent_run_index_in_its_unique_one")]

    operations = [migrations.RunPython(scrub, migrations.RunPython.noop, elidable=True)]

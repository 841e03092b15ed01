"""Make text already stored in JSON columns storable: before a model's lone surrogate (JSON's
"\\udcff", not valid UTF-8) was refused as its tool call's error, SQLite kept it in a call's
arguments and its `tool_call` event, and the run's page and API answered 500 on it from then on
(PostgreSQL refused such rows). Each lone surrogate and NUL in a JSON column of this app
becomes U+FFFD (core.inputs.storable). Only SQLite can hold them and only rows whose JSON text
holds an escape that could be one are read, so elsewhere it does nothing."""

from django.db import connections, migrations

from agents_app.core.inputs import storable


def make_storable(apps, schema_editor):
    connection = connections[schema_editor.connection.alias]
    if connection.vendor != "sqlite":
        return
    quote = connection.ops.quote_name
    for model in apps.get_app_config("agents_app").get_models():
        table = model._base_manager  # the audit log refuses updates; this repair is allowed
        for field in model._meta.concrete_fields:
            if field.get_internal_type() != "JSONField":
                continue
            # Stored as Python's json.dumps writes it: a lone surrogate or NUL as \\uXXXX.
            suspects = table.extra(
                where=[
                    f"({quote(field.column)} LIKE %s OR {quote(field.column)} LIKE %s)",
                ],
                params=["%\\ud%", "%\\u0000%"],
            )
            for pk, value in suspects.values_list("pk", field.name):
                fixed = storable(value)
                if fixed != value:
                    table.filter(pk=pk).update(**{field.name: fixed})


class Migration(migrations.Migration):
    dependencies = [("agents_app", "0017_scrub_stored_secrets")]

    operations = [migrations.RunPython(make_storable, migrations.RunPython.noop, elidable=True)]

"""A lane's model calls written by one commit become one row (ModelExchange.calls, a compressed
frame: engine.exchanges.pack_calls) instead of a row each: each row kept so far becomes a frame
of its one call, and back."""

import zlib

from django.db import migrations, models

from agents_app.engine.exchanges import pack_calls, unpack_calls

CALL_COLUMNS = {
    "sha": "request_sha256",
    "content": "content",
    "tool_calls": "tool_calls",
    "reasoning": "reasoning",
    "finish_reason": "finish_reason",
    "error_code": "error_code",
    "error": "error",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "model": "llm_model",
    "connection": "connection_id",
}


def to_frames(apps, schema_editor):
    ModelExchange = apps.get_model("agents_app", "ModelExchange")
    for row in ModelExchange.objects.order_by("pk").iterator(chunk_size=500):
        call = [getattr(row, column) for column in CALL_COLUMNS.values()]
        call.append(row.created_at.timestamp())
        request = bytes(row.request)
        text = zlib.decompress(request).decode() if request else ""
        row.calls = pack_calls([call], [text], seq=row.seq, phase=row.phase, attempt=row.attempt)
        row.save(update_fields=["calls"])
    checked_now(schema_editor)


def to_rows(apps, schema_editor):
    from datetime import UTC, datetime

    ModelExchange = apps.get_model("agents_app", "ModelExchange")
    for row in list(ModelExchange.objects.order_by("pk")):
        for i, call in enumerate(unpack_calls(row.calls)):
            one = row if i == 0 else ModelExchange(run_id=row.run_id, seq=row.seq + i)
            one.step_id, one.phase, one.attempt = row.step_id, row.phase, row.attempt
            for key, column in CALL_COLUMNS.items():
                setattr(one, column, call[key])
            one.created_at = datetime.fromtimestamp(call["at"], UTC)
            one.request = zlib.compress(call["request"].encode(), 1) if call["request"] else b""
            one.save()
    checked_now(schema_editor)


def checked_now(schema_editor):
    """The rows' deferred constraints checked now, not at the commit: PostgreSQL alters no table
    with checks pending, and the columns go (or come back) in this same transaction."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0029_replay"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelexchange",
            name="calls",
            field=models.BinaryField(default=b""),
            preserve_default=False,
        ),
        migrations.RunPython(to_frames, to_rows),
        # Defaults for the columns that had none, so that going back can add them again to
        # the rows there are (to_rows then fills them).
        *[
            migrations.AlterField(model_name="modelexchange", name=name, field=field)
            for name, field in [
                ("request_sha256", models.CharField(max_length=64, default="")),
                ("content", models.TextField(blank=True, default="")),
                ("reasoning", models.TextField(blank=True, default="")),
                ("finish_reason", models.CharField(blank=True, max_length=20, default="")),
                ("error_code", models.CharField(blank=True, max_length=40, default="")),
                ("error", models.TextField(blank=True, default="")),
                (
                    "llm_model",
                    models.CharField(blank=True, max_length=200, default="", verbose_name="model"),
                ),
            ]
        ],
        migrations.RemoveField(model_name="modelexchange", name="completion_tokens"),
        migrations.RemoveField(model_name="modelexchange", name="connection"),
        migrations.RemoveField(model_name="modelexchange", name="content"),
        migrations.RemoveField(model_name="modelexchange", name="error"),
        migrations.RemoveField(model_name="modelexchange", name="error_code"),
        migrations.RemoveField(model_name="modelexchange", name="finish_reason"),
        migrations.RemoveField(model_name="modelexchange", name="llm_model"),
        migrations.RemoveField(model_name="modelexchange", name="prompt_tokens"),
        migrations.RemoveField(model_name="modelexchange", name="reasoning"),
        migrations.RemoveField(model_name="modelexchange", name="request"),
        migrations.RemoveField(model_name="modelexchange", name="request_sha256"),
        migrations.RemoveField(model_name="modelexchange", name="tool_calls"),
    ]

"""A step's model calls move onto the step's own row (Step.model_calls: the frames of
engine.exchanges.pack_calls, each with its length first), written by the step's own UPDATE;
ModelExchange keeps the calls of no step. Back: each frame a row again, with its step."""

from django.db import migrations, models

from agents_app.engine.exchanges import framed, unframed, unpack_calls


def onto_steps(apps, schema_editor):
    ModelExchange = apps.get_model("agents_app", "ModelExchange")
    Step = apps.get_model("agents_app", "Step")
    kept = ModelExchange.objects.filter(step__isnull=False).order_by("seq")
    appended: dict[int, bytes] = {}
    for row in kept.iterator(chunk_size=500):
        appended[row.step_id] = appended.get(row.step_id, b"") + framed(bytes(row.calls))
    for step in Step.objects.filter(pk__in=appended):
        step.model_calls = appended[step.pk]
        step.save(update_fields=["model_calls"])
    kept.delete()
    checked_now(schema_editor)


def into_rows(apps, schema_editor):
    ModelExchange = apps.get_model("agents_app", "ModelExchange")
    Step = apps.get_model("agents_app", "Step")
    for step in Step.objects.exclude(model_calls=b"").iterator(chunk_size=500):
        for frame in unframed(step.model_calls):
            first = unpack_calls(frame)[0]
            ModelExchange.objects.create(
                run_id=step.run_id,
                step_id=step.pk,
                seq=first["seq"],
                phase=first["phase"],
                attempt=first["attempt"],
                calls=frame,
            )
    checked_now(schema_editor)


def checked_now(schema_editor):
    """The rows' deferred constraints checked now, not at the commit: PostgreSQL alters no table
    with checks pending, and a column goes in this same transaction."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0030_exchange_frames"),
    ]

    operations = [
        migrations.AddField(
            model_name="step",
            name="model_calls",
            field=models.BinaryField(default=b"", editable=False),
        ),
        # Steps reached through another row leave their calls out too (models.runs.Step).
        migrations.AlterModelOptions(
            name="step",
            options={"base_manager_name": "objects", "ordering": ["plan", "index"]},
        ),
        migrations.RunPython(onto_steps, into_rows),
        migrations.RemoveField(model_name="modelexchange", name="step"),
    ]

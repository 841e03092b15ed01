from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0007_task_fast_path"),
    ]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="thinking",
            field=models.TextField(
                blank=True, help_text="The model's reasoning while planning it."
            ),
        ),
    ]

"""A server nobody has checked yet is "unchecked", not "broken": broken now means a check
failed. Rows that were broken only because no check had run yet become unchecked."""

from django.db import migrations, models

NOT_CHECKED = ("Not checked yet.", "Not checked since it was enabled.")


def unchecked_servers(apps, schema_editor):
    MCPServer = apps.get_model("tools_app", "MCPServer")
    MCPServer.objects.filter(status="broken", last_error__in=NOT_CHECKED).update(status="unchecked")


def broken_servers(apps, schema_editor):
    MCPServer = apps.get_model("tools_app", "MCPServer")
    MCPServer.objects.filter(status="unchecked").update(status="broken")


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0002_redact_server_output")]

    operations = [
        migrations.AlterField(
            model_name="mcpserver",
            name="status",
            field=models.CharField(
                choices=[
                    ("unchecked", "Not checked yet"),
                    ("active", "Active"),
                    ("broken", "Broken"),
                    ("disabled", "Disabled"),
                ],
                default="unchecked",
                editable=False,
                max_length=10,
            ),
        ),
        migrations.RunPython(unchecked_servers, broken_servers),
    ]

"""Redact the secrets substituted into each server's configuration from the error and stderr
tail already stored: rows written before redaction existed may quote them. The values are read
from the environment this migration runs in, which under `go` is the application's own."""

import os

from django.db import migrations

from tools_app.secrecy import REFERENCE, redact


def redact_stored_output(apps, schema_editor):
    MCPServer = apps.get_model("tools_app", "MCPServer")
    for server in MCPServer.objects.exclude(last_error="", stderr_tail=""):
        texts = [*server.args, *server.env.values(), server.url, *server.headers.values()]
        names = {n for text in texts if isinstance(text, str) for n in REFERENCE.findall(text)}
        secrets = [value for name in names if (value := os.environ.get(name))]
        error, tail = redact(server.last_error, secrets), redact(server.stderr_tail, secrets)
        if (error, tail) != (server.last_error, server.stderr_tail):
            MCPServer.objects.filter(pk=server.pk).update(last_error=error, stderr_tail=tail)


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0001_initial")]

    operations = [migrations.RunPython(redact_stored_output, migrations.RunPython.noop)]

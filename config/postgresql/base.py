"""Django's PostgreSQL backend, whose cursors know about psycopg's pipeline mode.

A worker's hot-path commit (runs.writer.fenced_run) sends its statements as a pipeline: those
whose answers nothing reads go without waiting for each answer. In pipeline mode a cursor's
row count is known only once its statement's answer came back, and Django reads it right after
the statement (`save(update_fields=...)` fails when it sees no row changed; `QuerySet.update`
returns it). So here reading the row count first waits for the answers still pending: any
statement may run inside a pipelined commit and see its true row count.
"""

from django.db.backends.postgresql import base


class PipelineCursor(base.ServerBindingCursor):
    @property
    def rowcount(self) -> int:
        pipeline = self._conn._pipeline
        if pipeline is not None:
            pipeline.sync()  # the answers pending, this statement's among them
        return super().rowcount


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict:
        params = super().get_connection_params()
        if self.settings_dict["OPTIONS"].get("server_side_binding") is True:
            params["cursor_factory"] = PipelineCursor
        return params

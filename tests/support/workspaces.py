"""A run's workspace as its tools leave it: files written straight to the directory the
worker's `write_file` uses (`runs.files.workspace_dir`)."""

from pathlib import Path

import pytest
from django.core import signals
from django.db import close_old_connections

from agents_app.models import Run
from agents_app.runs.files import workspace_dir


@pytest.fixture
def own_workspaces(settings, tmp_path) -> Path:
    """WORKSPACE_ROOT in this test's own directory: run ids repeat between tests, files must
    not. Import it into a test module (`from tests.support.workspaces import own_workspaces`)
    and ask for it, or mark it autouse there."""
    root = tmp_path / "workspaces"
    root.mkdir()
    settings.WORKSPACE_ROOT = root
    return root


def write_files(run: Run, files: dict[str, str | bytes]) -> Path:
    """Write each `path: content` (text as UTF-8) under the run's workspace; returns it."""
    directory = workspace_dir(run)
    for relative, content in files.items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        path.write_bytes(data)
    return directory


def close_unread(response) -> None:
    """Close a streamed response without reading it, as a server does when its client goes
    away. As the test client does at a stream's end, the database connection is kept: the
    request_finished signal would close the test's own."""
    signals.request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        signals.request_finished.connect(close_old_connections)

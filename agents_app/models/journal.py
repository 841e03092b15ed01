"""A run's workspace journal (issue 36): what each tool call changed in the workspace, one row
a path, so the workspace as it was after any step can be shown and rebuilt (runs.journal)."""

from django.db import models
from django.utils import timezone

from agents_app.models.runs import Run, Step, ToolCall


class ChangeKind(models.TextChoices):
    # A regular file written (created, overwritten, or its mode changed): its content is the
    # blob named by sha256 under WORKSPACE_ROOT/.blobs.
    WRITE = "write", "write"
    DELETE = "delete", "delete"
    # A symlink, or a pipe, socket or device: recorded where it is, never followed or read.
    LINK = "link", "link"
    OTHER = "other", "other"
    # The journal stopped here (Run.journal_complete_until): what follows was not recorded.
    STOPPED = "stopped", "stopped"


class WorkspaceChange(models.Model):
    """One path changed by one tool call (or, `tool_call` null, found changed when a delivery
    began: files already there, or written between deliveries). Written with the step's next
    commit, like the call's result (worker.commits.PendingWrites). `seq` orders a run's
    changes (Run.journal_seq, advanced by the lease holder's commits). `path` is a display
    path (runs.files.display_path), relative to the run's workspace."""

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="workspace_changes", db_index=False
    )
    step = models.ForeignKey(
        Step, on_delete=models.SET_NULL, null=True, blank=True, related_name="workspace_changes"
    )
    tool_call = models.ForeignKey(
        ToolCall, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    seq = models.PositiveIntegerField()
    path = models.TextField()
    kind = models.CharField(max_length=10, choices=ChangeKind.choices)
    sha256 = models.CharField(max_length=64, blank=True)  # a write's content; else ""
    size = models.BigIntegerField(default=0)
    mode = models.PositiveIntegerField(default=0)  # permission bits (st_mode & 0o7777)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="workspace_change_seq_unique")
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.kind} {self.path}"

"""Why a sandboxed call ran nothing: each is a clear sentence for the model and the person."""


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot start here; nothing is run without it."""


class SandboxBusy(Exception):
    """Every slot stayed taken for as long as the call could wait."""


class SandboxCancelled(Exception):
    """The run was cancelled or stopped before its command started."""


class WorkspaceTooLarge(Exception):
    """The workspace has more entries than can be handed to the sandbox in time."""

"""Why a sandboxed call ran nothing: each is a clear sentence for the model and the person."""


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot start here; nothing is run without it."""


class SandboxBusy(Exception):
    """Every slot stayed taken for as long as the call could wait."""

"""A worker's claim on one run: at most one worker executes a run; an expired claim is taken over."""

import logging
import threading
import uuid
from datetime import timedelta

from django.db import connection
from django.db.models import Q
from django.utils import timezone

from agents_app.models import TERMINAL_STATUSES, Run

logger = logging.getLogger(__name__)


class Lease:
    """A claim on one run, renewed by a daemon thread while the worker works."""

    def __init__(self, run_id: int, token: str, seconds: float):
        self.run_id = run_id
        self.token = token
        self.seconds = seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{run_id}", daemon=True)

    @classmethod
    def claim(cls, run_id: int, seconds: float) -> "Lease | None":
        """Claim the run unless a live lease is held: one conditional UPDATE, no race."""
        token = uuid.uuid4().hex
        now = timezone.now()
        claimed = (
            Run.objects.filter(pk=run_id)
            .exclude(status__in=TERMINAL_STATUSES)
            .filter(Q(lease_expires_at__isnull=True) | Q(lease_expires_at__lte=now))
            .update(lease_owner=token, lease_expires_at=now + timedelta(seconds=seconds))
        )
        return cls(run_id, token, seconds) if claimed == 1 else None

    def start(self) -> None:
        self._thread.start()

    def _renew(self) -> None:
        try:
            while not self._stop.wait(self.seconds / 3):
                try:
                    renewed = Run.objects.filter(pk=self.run_id, lease_owner=self.token).update(
                        lease_expires_at=timezone.now() + timedelta(seconds=self.seconds)
                    )
                except Exception:  # a blip; the next tick tries again before the lease expires
                    logger.warning("lease renewal of run %s failed", self.run_id, exc_info=True)
                    continue
                if renewed == 0:
                    self.lost.set()
                    return
        finally:
            connection.close()

    def release(self, *, handed_back: bool = False) -> None:
        """Stop renewing and give the run up; `handed_back`: a commit of this worker already
        did (the run ended or parked), so there is nothing to write."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if handed_back:
            return
        Run.objects.filter(pk=self.run_id, lease_owner=self.token).update(
            lease_owner="", lease_expires_at=None
        )

"""How commands reach the core: through the warm worker, or in process.

``get_service()`` returns an object with ``call(op, **args) -> dict``. The worker
is used unless ``COMPASS_NO_WORKER=1`` (tests, debugging) or ``local=True``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .memory.corelike import CoreLike


class LocalService:
    def __init__(self, core: CoreLike | None = None):
        from .core import Core

        self.core = core or Core()

    def call(self, op: str, **args: Any) -> dict:
        return self.core.call(op, args)

    def close(self) -> None:
        self.core.close()


def no_worker() -> bool:
    """``COMPASS_NO_WORKER=1``: ops run in this process (tests, debugging); the one place it is read."""
    return os.environ.get("COMPASS_NO_WORKER", "") not in ("", "0")


def get_service(local: bool | None = None):
    if local is None:
        local = no_worker()
    if local:
        return LocalService()
    from .worker.client import WorkerService

    return WorkerService()

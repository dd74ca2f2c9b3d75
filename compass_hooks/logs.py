"""Logging to a rotating file in the data dir (never stdout: stdout belongs to the hook contract).

Modules take their logger at import time (``log = get_logger("worker")``), before anything may have decided
the data dir for this process, and a long-lived process (the test suite, a service embedding the core) can
see the data dir change. So the file is chosen when a record is written, not when the logger is made: the
handler follows :func:`compass_hooks.paths.get_paths` and reopens its file when the logs dir moves.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading

_configured: set[str] = set()


class _DataDirHandler(logging.Handler):
    """``<current logs dir>/<component>.log``, 1 MB x 3, reopened when the logs dir changes."""

    def __init__(self, component: str):
        super().__init__()
        self.component = component
        self._file: logging.Handler | None = None
        self._dir: str | None = None
        self._swap = threading.Lock()

    def _target(self) -> logging.Handler:
        from .paths import get_paths

        paths = get_paths()
        logs = str(paths.logs)
        if logs != self._dir or self._file is None:
            with self._swap:
                if logs != self._dir or self._file is None:
                    if self._file is not None:
                        self._file.close()
                    try:
                        paths.ensure()
                        handler: logging.Handler = logging.handlers.RotatingFileHandler(
                            os.path.join(logs, f"{self.component}.log"), maxBytes=1_000_000, backupCount=3,
                            encoding="utf-8")
                    except OSError:  # a read-only or missing data dir: logging must never fail the caller
                        handler = logging.NullHandler()
                    handler.setFormatter(self.formatter)
                    self._file, self._dir = handler, logs
        assert self._file is not None
        return self._file

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._target().emit(record)
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        super().close()


def get_logger(component: str) -> logging.Logger:
    """Logger writing to ``<data>/logs/<component>.log`` of the data dir current when each record is written."""
    logger = logging.getLogger(f"compass.{component}")
    if component in _configured:
        return logger
    logger.setLevel(os.environ.get("COMPASS_LOG_LEVEL", "INFO").upper())
    logger.propagate = False
    handler = _DataDirHandler(component)
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    _configured.add(component)
    return logger

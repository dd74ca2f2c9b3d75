"""Logging to a rotating file in the data dir (never stdout: stdout belongs to the hook contract).

Modules take their logger at import time (``log = get_logger("worker")``), before anything may have decided
the data dir for this process, and a long-lived process (the test suite, a service embedding the core) can
see the data dir change. So the file is chosen when a record is written, not when the logger is made: the
handler follows :func:`compass_hooks.paths.get_paths` and reopens its file when the logs dir moves.

Every line goes through the same redaction pass as a stored memory (:func:`compass_hooks.textrules.secrets.
scrub_text`) before it is written: an exception message can quote a prompt, a query or a command."""

from __future__ import annotations

import logging
import logging.handlers
import os
import threading

from .textrules.secrets import scrub_text

_configured: set[str] = set()
_LINE_CHARS = 20_000  # a log line longer than this is cut (after redaction): logs are not a store of prompts


class _ScrubbingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return scrub_text(super().format(record), _LINE_CHARS)


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
                        paths.ensure(socket_dir=False)
                        handler: logging.Handler = logging.handlers.RotatingFileHandler(
                            os.path.join(logs, f"{self.component}.log"), maxBytes=1_000_000, backupCount=3,
                            encoding="utf-8")
                    except Exception:  # an unusable data dir (unwritable, refused as not private) must not
                        handler = logging.NullHandler()  # break the caller: logging never fails
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
    handler.setFormatter(_ScrubbingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    _configured.add(component)
    return logger

"""Logging to a rotating file in the data dir (never stdout: stdout belongs to the hook contract).

Every line goes through the same redaction pass as a stored memory (:func:`compass_hooks.textrules.secrets.
scrub_text`) before it is written: an exception message can quote a prompt, a query or a command."""

from __future__ import annotations

import logging
import logging.handlers
import os

from .paths import get_paths
from .textrules.secrets import scrub_text

_configured: set[str] = set()
_LINE_CHARS = 20_000  # a log line longer than this is cut (after redaction): logs are not a store of prompts


class _ScrubbingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return scrub_text(super().format(record), _LINE_CHARS)


def get_logger(component: str) -> logging.Logger:
    """Logger writing to ``<data>/logs/<component>.log`` (1 MB x 3)."""
    logger = logging.getLogger(f"compass.{component}")
    if component in _configured:
        return logger
    logger.setLevel(os.environ.get("COMPASS_LOG_LEVEL", "INFO").upper())
    logger.propagate = False
    try:
        paths = get_paths().ensure(socket_dir=False)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            paths.logs / f"{component}.log", maxBytes=1_000_000, backupCount=3, encoding="utf-8"
        )
    except Exception:  # an unusable data dir (unwritable, refused as not private) must not break the caller
        handler = logging.NullHandler()
    handler.setFormatter(_ScrubbingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    _configured.add(component)
    return logger

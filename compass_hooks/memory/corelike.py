"""What the features use of the Core, as a Protocol: ``core: CoreLike`` in drift, memory and the worker.

The Core (``compass_hooks/core.py``, floor 3) wires the features together, so a feature (floor 2) cannot import
it. This Protocol names what they use of it instead. It lives in the memory package because it names the memory
``Store``, and a Protocol on any other package would make a cycle with memory (tests/test_architecture.py counts
type-only imports too); drift and the worker import memory already, audit, embedding and learn never take a core.

Type-only: every user imports it under ``TYPE_CHECKING`` (the modules use ``from __future__ import annotations``),
so it costs nothing at run time, and this module imports its types the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Config
    from ..embedding.base import Embedder
    from ..paths import Paths
    from .store import Store

T = TypeVar("T")


class CoreLike(Protocol):
    """The Core as the features see it (``compass_hooks.core.Core`` is the one implementation)."""

    @property
    def paths(self) -> Paths: ...

    @property
    def config(self) -> Config: ...

    @property
    def state(self) -> dict[str, Any]:
        """Per-feature caches and the worker's hooks (``"worker.defer"``, ...), keyed by name."""
        ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def store(self) -> Store: ...

    def feature(self, name: str, factory: Callable[[CoreLike], T]) -> T:
        """The state of feature ``name``, built once by ``factory(core)`` (thread-safe)."""
        ...

    def call(self, op_name: str, args: dict[str, Any] | None = None) -> dict[str, Any]: ...

    def close(self) -> None: ...

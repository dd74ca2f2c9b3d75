"""Environment helpers for the benchmarks."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator


@contextlib.contextmanager
def scoped_environ(**changes: str | None) -> Iterator[None]:
    """Set (str) or remove (None) environment variables for the block, then put back what was there.
    Benches point ``get_paths()`` at a throw-away data dir this way."""
    def apply(values: dict[str, str | None]) -> None:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    saved = {k: os.environ.get(k) for k in changes}
    try:
        apply(changes)
        yield
    finally:
        apply(saved)

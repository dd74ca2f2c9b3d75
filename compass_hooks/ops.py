"""The operation registry shared by the worker, the in-process service and the MCP server.

An op is ``fn(core, **args) -> dict`` (JSON-serialisable). Feature packages
register theirs in a module named ``ops`` (``compass_hooks/<feature>/ops.py``)
with the :func:`op` decorator; :func:`load_ops` imports all of them. Ops run on
worker threads concurrently: they must be thread-safe.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable

OpFn = Callable[..., dict]
OPS: dict[str, OpFn] = {}
_loaded = False


def op(name: str) -> Callable[[OpFn], OpFn]:
    def deco(fn: OpFn) -> OpFn:
        if name in OPS and OPS[name] is not fn:
            raise RuntimeError(f"op {name!r} registered twice")
        OPS[name] = fn
        return fn

    return deco


def load_ops() -> dict[str, OpFn]:
    global _loaded
    if not _loaded:
        import compass_hooks

        for mod in pkgutil.iter_modules(compass_hooks.__path__):
            if mod.ispkg:
                try:
                    importlib.import_module(f"compass_hooks.{mod.name}.ops")
                except ModuleNotFoundError as exc:
                    if exc.name != f"compass_hooks.{mod.name}.ops":
                        raise
        _loaded = True
    return OPS


def call(core: Any, name: str, args: dict | None = None) -> dict:
    from .errors import InvalidInput

    ops = load_ops()
    if name not in ops:
        raise InvalidInput(f"unknown op {name!r}", f"known ops: {', '.join(sorted(ops))}")
    return ops[name](core, **(args or {}))

"""The floors of the code, checked on every import (module level and the lazy ones inside functions alike).

Bottom to top (docs/architecture.md):

0. base, stdlib only: the package root, dirs, errors, trust, staging, textrules, spool
1. infra: paths, config, logs, versions, the op registry
2. features: embedding, learn (training pieces drift and memory share), audit, memory, drift
3. core: wires the features together
4. worker: server, client, protocol, lifecycle, and the worker's side of the hooks
5. faces: the hook process (hookclient), service, cli, mcp_server
6. compass_eval: benchmarks and evaluations (`bench`, `eval`), added to the CLI by an entry point; nothing in
   the product imports it

A module may import its own floor or any lower one, never a higher one, and the import graph between
packages has no cycle. A new upward import or cycle fails here with the offending edge.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import testdirs

ROOT = testdirs.ROOT
PACKAGES = ("compass_hooks", "mcp_server", "compass_eval")
FLOORS: dict[str, int] = {
    "compass_hooks": 0, "compass_hooks.dirs": 0, "compass_hooks.errors": 0, "compass_hooks.trust": 0,
    "compass_hooks.staging": 0, "compass_hooks.textrules": 0, "compass_hooks.locks": 0, "compass_hooks.spool": 0,
    "compass_hooks.paths": 1, "compass_hooks.config": 1, "compass_hooks.logs": 1, "compass_hooks.versions": 1,
    "compass_hooks.ops": 1,
    "compass_hooks.embedding": 2, "compass_hooks.learn": 2, "compass_hooks.audit": 2, "compass_hooks.memory": 2, "compass_hooks.drift": 2,
    "compass_hooks.core": 3,
    "compass_hooks.worker": 4,
    "compass_hooks.hookclient": 5, "compass_hooks.service": 5, "compass_hooks.cli": 5, "compass_hooks.__main__": 5,
    "mcp_server": 5,
    "compass_eval": 6,
}
# The hook process and the text rules run under `python -I -S` (no site-packages): stdlib and our own modules.
STDLIB_ONLY = ("compass_hooks.hookclient", "compass_hooks.textrules", "compass_hooks.dirs", "compass_hooks.trust",
               "compass_hooks.spool",
               "compass_hooks.worker.hooks.names", "compass_hooks.worker.hooks.output",
               "compass_hooks.worker.hooks.state", "compass_hooks.worker.hooks.guard", "compass_hooks.worker.client",
               "compass_hooks.worker.protocol")


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            name = ".".join(rel.parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


def _imports(mods: dict[str, Path]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(our modules each module imports, top-level third-party names it imports)."""
    ours: dict[str, set[str]] = defaultdict(set)
    third: dict[str, set[str]] = defaultdict(set)
    stdlib = set(sys.stdlib_module_names)
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                names = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in PACKAGES:
                    while name and name not in mods:
                        name = name.rpartition(".")[0]
                    if name and name != mod:
                        ours[mod].add(name)
                elif top and top not in stdlib and top != "__future__":
                    third[mod].add(top)
    return ours, third


def _floor_key(mod: str) -> str:
    parts = mod.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return ".".join(parts[:n])
    raise AssertionError(f"{mod} is on no floor: add it to FLOORS in tests/unit/test_architecture.py")


MODS = _modules()
OURS, THIRD = _imports(MODS)


def test_every_module_is_on_a_floor():
    for mod in MODS:
        _floor_key(mod)


def test_no_import_reaches_a_higher_floor():
    upward = []
    for mod, targets in OURS.items():
        here = FLOORS[_floor_key(mod)]
        for t in targets:
            if FLOORS[_floor_key(t)] > here:
                upward.append(f"{mod} (floor {here}) imports {t} (floor {FLOORS[_floor_key(t)]})")
    assert not upward, "\n".join(sorted(upward))


def test_no_cycle_between_packages():
    """Packages: compass_hooks.<sub> (its modules taken together) and mcp_server."""
    def group(mod: str) -> str:
        parts = mod.split(".")
        if parts[0] == "compass_hooks" and len(parts) > 1:
            key = ".".join(parts[:2])
            return "compass_hooks.worker" if key == "compass_hooks.worker" else key
        return parts[0]

    graph: dict[str, set[str]] = defaultdict(set)
    for mod, targets in OURS.items():
        for t in targets:
            if group(mod) != group(t) and group(t) != "compass_hooks":
                graph[group(mod)].add(group(t))
    cycles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]) if nxt in stack else f"{node} -> {nxt}")
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


@pytest.mark.parametrize("prefix", STDLIB_ONLY)
def test_hook_process_modules_are_stdlib_only(prefix):
    found = {mod: sorted(THIRD[mod]) for mod in MODS if (mod == prefix or mod.startswith(prefix + ".")) and THIRD[mod]}
    assert not found, found


def test_the_checker_sees_lazy_imports():
    """A function-level import counts: the cycles this test exists for were hidden that way."""
    assert "compass_hooks.memory.store" in OURS["compass_hooks.core"]

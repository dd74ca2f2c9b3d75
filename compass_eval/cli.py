"""The ``bench`` and ``eval`` command groups, added to ``compass-hook`` through the entry point
``[project.entry-points."compass_hooks.cli"] eval = "compass_eval.cli:register"`` (pyproject.toml).

Subcommands live in :mod:`compass_eval.commands`; see there for how to add one.
"""

from __future__ import annotations

import importlib
import pkgutil

import click

from . import commands


@click.group("bench")
def bench_group() -> None:
    """Benchmarks: print latency and throughput figures (targets are in the README)."""


@click.group("eval")
def eval_group() -> None:
    """Evaluate compass-hooks on labelled data (drift, memory recall)."""


GROUPS = {"bench": bench_group, "eval": eval_group}


def _discover() -> None:
    for mod in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        prefix = mod.name.split("_", 1)[0]
        if prefix in GROUPS:
            importlib.import_module(f"{commands.__name__}.{mod.name}").register(GROUPS[prefix])


_discover()


def register(cli: click.Group) -> None:
    """The entry point: attach both groups to the product's CLI group."""
    for group in GROUPS.values():
        cli.add_command(group)

"""The ``bench`` and ``eval`` subcommands, one module each (or a few related ones per module).

A module named ``bench_*.py`` or ``eval_*.py`` defines ``register(group)`` and is discovered by
:mod:`compass_eval.cli`, which passes it the ``bench`` or ``eval`` group its name starts with: a new
evaluation is a new module here, nothing else to edit. Modules import only click and the standard library at
module level (every ``compass-hook`` start-up imports them); the product's code is imported inside the
commands.
"""

"""Benchmarks and evaluations of compass-hooks: ``compass-hook bench ...`` and ``compass-hook eval ...``.

Not part of the product a user runs for their own work: it measures the product (latency, throughput,
recall on LoCoMo, drift AUC on labelled prompts) through the product's own code paths. It ships in the same
distribution and adds its commands to the CLI through the ``compass_hooks.cli`` entry point
(:func:`compass_eval.cli.register`). ``compass_eval`` imports ``compass_hooks``; ``compass_hooks`` never
imports ``compass_eval`` (tests/unit/test_architecture.py: compass_eval is the top floor).
"""

"""Where things are, for tests at any depth of tests/ (unit/<area>/, integration/, e2e/)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent  # the checkout: the plugin folder hooks.json runs from
DATA = TESTS / "data"  # labelled corpora (drift, standing instructions, adversarial)
FIXTURES = TESTS / "fixtures"  # hook stdin samples, transcripts, the fake embedder's calibration

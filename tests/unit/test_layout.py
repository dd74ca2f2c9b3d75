"""The tests mirror the code (CONTRIBUTING.md): no test file loose in tests/, one folder per package under
tests/unit/, and test file names unique across the tree (pytest imports each by its basename)."""

from __future__ import annotations

from collections import Counter

import testdirs

TESTS = testdirs.TESTS
# tests/unit/<area>/ -> the package it covers; an area not named here is compass_hooks/<area>/.
PACKAGES = {"eval": "compass_eval", "mcp": "mcp_server"}


def _test_files():
    return [p for p in TESTS.rglob("test_*.py") if not {"data", "fixtures"} & set(p.relative_to(TESTS).parts)]


def test_no_test_file_is_loose_in_tests():
    loose = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert not loose, (f"{loose}: git mv each into tests/unit/<area>/ (in process, fake embedder), tests/integration/ "
                       "(real workers and processes, the real model, load, faults) or tests/e2e/ (CONTRIBUTING.md)")


def test_every_unit_area_is_a_package():
    for folder in sorted((TESTS / "unit").iterdir()):
        if folder.is_dir() and folder.name != "__pycache__":
            package = testdirs.ROOT / PACKAGES.get(folder.name, f"compass_hooks/{folder.name}")
            assert (package / "__init__.py").is_file(), f"tests/unit/{folder.name}/ mirrors no package ({package})"


def test_test_file_names_are_unique():
    twice = sorted(name for name, n in Counter(p.name for p in _test_files()).items() if n > 1)
    assert not twice, f"{twice}: pytest imports test modules by their file name, so each must be unique"

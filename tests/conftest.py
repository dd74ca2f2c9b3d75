"""Shared fixtures. Every test runs as a new user: its own HOME (no XDG_*, COMPASS_*
or CLAUDE_* variables), so the data dir, models dir and socket come from the same
default rules a user's do (compass_hooks/dirs.py). Unit tests get the
deterministic fake embedder (COMPASS_MODEL=fake, the embedder factory's test
extension point), its drift calibration and standing-instruction detector weights where a user's own retrain
would live (``<data>/calibration/fake-64.json``, ``<data>/calibration/instructions/fake-64.json``: test data,
not shipped)
and the in-process service (COMPASS_NO_WORKER=1); tests that need the real model
or a worker take ``real_model`` / unset COMPASS_NO_WORKER."""

from __future__ import annotations

import os
import shutil
import sys
import types
from pathlib import Path

import pytest

# The shared helpers (tests/helpers: testdirs, worker_helpers, hook_helpers, mcp_client, cc_harness, ...) import by
# their plain names from any test at any depth; this conftest is loaded before any test module.
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

from testdirs import FIXTURES, ROOT  # noqa: E402


class _OldImportPath(types.ModuleType):
    """``from tests.mcp_client import ...`` in test files written before the helpers moved: the helper, imported
    on first use. A module file named tests/mcp_client.py would shadow the helper whenever pytest puts tests/ on
    sys.path ahead of tests/helpers (it inserts each test file's folder as it imports it)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):  # __file__, __spec__ ...: what tools scanning sys.modules ask; no import for them
            raise AttributeError(name)
        import mcp_client

        return getattr(mcp_client, name)


sys.modules.setdefault("tests.mcp_client", _OldImportPath("tests.mcp_client"))

# Public evaluation data beside the checkout (LoCoMo is CC BY-NC: read in place, never copied into the repo).
SHARED = Path(os.environ.get("COMPASS_SHARED_DIR", ROOT.parent / "shared"))


def _installed_minilm() -> Path:
    """Where install.sh put MiniLM for the user running the tests (read before any test replaces HOME)."""
    sys.path.insert(0, str(ROOT))
    from compass_hooks import dirs

    for models in dirs.model_search_dirs():
        if (Path(models) / "minilm" / "compass-model.json").is_file():
            return (Path(models) / "minilm").resolve()
    return Path(dirs.models_dir()) / "minilm"


INSTALLED_MINILM = _installed_minilm()
# `compass-hook anchors train --model fake --lofo --no-neighbours --out tests/fixtures/calibration/fake-64.json`
# (docs/drift.md; without the nearest-dev-item features, so a unit test scoring in a fresh HOME does not index the
# dev sets first: tests/unit/drift/test_neighbours.py trains and scores a calibration with them).
FAKE_CALIBRATION = FIXTURES / "calibration" / "fake-64.json"
# `compass-hook instructions train --model fake --out tests/fixtures/calibration/instructions/fake-64.json`.
FAKE_INSTRUCTIONS = FIXTURES / "calibration" / "instructions" / "fake-64.json"
# Downloads stay cached across the tests' fresh HOMEs (the tests that build venvs would fetch torch each time).
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")
# Outside the test's HOME on purpose: the Claude Code CLI (370 MB from npm) is installed once per machine.
E2E_CACHE = Path(os.environ.get("COMPASS_E2E_CACHE", Path.home() / ".cache" / "compass-e2e"))


def as_new_user(monkeypatch, base: Path) -> Path:
    """Make this process a new user: HOME = ``base/home``, no COMPASS_*, XDG_* or CLAUDE_* variables, the hub off.
    Returns the user data dir the code derives from it (nothing created)."""
    home = base / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    for var in list(os.environ):
        if var.startswith(("COMPASS_", "XDG_", "CLAUDE_")) or var == "CLAUDECODE":
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("PIP_CACHE_DIR", PIP_CACHE)
    from compass_hooks import dirs

    return Path(dirs.user_data_dir())


def provide_fake_calibration(data: Path) -> Path:
    """Put the fake embedder's calibration in ``data``/calibration, the folder the scorer reads before the shipped
    anchors/calibration (compass_hooks/drift/scorer.py): where `anchors train` writes a user's own."""
    folder = data / "calibration"
    for d in (data, folder, folder / "instructions"):  # private, as the product makes them
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    # The standing-instruction detector's weights for the fake embedder, where `instructions train` puts a user's.
    shutil.copyfile(FAKE_INSTRUCTIONS, folder / "instructions" / FAKE_INSTRUCTIONS.name)
    return Path(shutil.copyfile(FAKE_CALIBRATION, folder / FAKE_CALIBRATION.name))


@pytest.fixture(autouse=True)
def compass_home(tmp_path, monkeypatch):
    """A fresh HOME; returns the user data dir the code derives from it (created, holding only the fake
    embedder's calibration)."""
    data = as_new_user(monkeypatch, tmp_path)
    monkeypatch.setenv("COMPASS_MODEL", "fake")
    monkeypatch.setenv("COMPASS_NO_WORKER", "1")
    provide_fake_calibration(data)
    return data


def _require(path: Path, what: str) -> None:
    if not path.exists():
        msg = f"{what} not found at {path}: run ./install.sh (or `compass-hook model export --model minilm`)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI installs it; a missing model there is a bug, not a skip
        pytest.skip(msg)


def link_installed_model(models: Path) -> Path:
    """Put the MiniLM that install.sh exported into ``models`` (a symlink: nothing is exported twice)."""
    _require(INSTALLED_MINILM / "compass-model.json", "exported MiniLM model")
    models.mkdir(parents=True, exist_ok=True)
    link = models / "minilm"
    if not link.exists():
        link.symlink_to(INSTALLED_MINILM, target_is_directory=True)
    return link


@pytest.fixture(scope="session")
def shipped_neighbour_index(tmp_path_factory) -> Path | None:
    """The drift neighbour index of the shipped MiniLM calibration, built once per test session by the product's
    own code (compass_hooks/drift/neighbours.py; about 10 s)."""
    from compass_hooks.drift import neighbours as nbr
    from compass_hooks.drift.model import load_calibration

    spec = load_calibration(ROOT / "anchors" / "calibration" / "minilm.json").neighbours
    if not spec:
        return None
    return nbr.build(spec).save(tmp_path_factory.mktemp("neighbours") / "index.npz")


def provide_neighbour_index(data: Path, built: Path | None) -> None:
    """Put ``built`` where the scorer caches it in ``data``: a user's data dir holds it from the worker's first
    minute on (the build itself, in process and in the worker, is tested in tests/unit/drift/test_neighbours.py and
    tests/integration/test_drift_model.py; the e2e user paths start without it)."""
    if built is None:
        return
    from compass_hooks.drift import neighbours as nbr
    from compass_hooks.drift.model import load_calibration

    spec = load_calibration(ROOT / "anchors" / "calibration" / "minilm.json").neighbours
    assert spec is not None
    target = nbr.cache_path(data, spec)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copyfile(built, target)


@pytest.fixture
def real_model(monkeypatch, compass_home, shipped_neighbour_index):
    """The real exported MiniLM, found where a user's is (``<data>/models/minilm`` of the test's HOME), its drift
    neighbour index as the worker leaves it, and the default model name (no COMPASS_MODEL)."""
    folder = link_installed_model(compass_home / "models")
    provide_neighbour_index(compass_home, shipped_neighbour_index)
    monkeypatch.delenv("COMPASS_MODEL", raising=False)
    return folder


@pytest.fixture
def shared_dir():
    # Not part of the install, so a skip even in CI (unlike the model, which install.sh must provide).
    if not (SHARED / "eval").is_dir():
        pytest.skip(f"evaluation data not found at {SHARED}/eval (set COMPASS_SHARED_DIR to the shared folder)")
    return SHARED


@pytest.fixture
def fake_embedder():
    from compass_hooks.embedding.fake import FakeEmbedder

    return FakeEmbedder(dim=64)


@pytest.fixture
def cli_runner():
    from click.testing import CliRunner

    return CliRunner()


@pytest.fixture
def python_exe():
    return sys.executable


def pytest_collection_modifyitems(config, items):
    """Markers by directory: everything under tests/e2e/ (the real Claude Code CLI, the README's install paths,
    from-scratch venvs) is ``e2e`` and ``slow``. tests/unit/ and tests/integration/ mark their own slow modules
    and tests (``slow``: more than ~2 s here), so ``-m "not slow"`` is the fast loop."""
    e2e = Path(__file__).resolve().parent / "e2e"
    for item in items:
        if Path(item.path).is_relative_to(e2e):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)

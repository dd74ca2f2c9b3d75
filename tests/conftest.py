"""Shared fixtures. Every test gets its own data dir (COMPASS_HOME under tmp_path),
the deterministic fake embedder, no hub access and the in-process service."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Public evaluation data beside the checkout (LoCoMo is CC BY-NC: read in place, never copied into the repo).
SHARED = Path(os.environ.get("COMPASS_SHARED_DIR", ROOT.parent / "shared"))


@pytest.fixture(autouse=True)
def compass_home(tmp_path, monkeypatch):
    home = tmp_path / "compass-home"
    monkeypatch.setenv("COMPASS_HOME", str(home))
    monkeypatch.setenv("COMPASS_MODEL", "fake")
    monkeypatch.setenv("COMPASS_NO_WORKER", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    for var in ("CLAUDE_PLUGIN_DATA", "CLAUDE_PLUGIN_ROOT", "COMPASS_MODEL_DIR", "COMPASS_SOCKET", "XDG_RUNTIME_DIR"):
        monkeypatch.delenv(var, raising=False)
    return home


def _require(path: Path, what: str) -> None:
    if not path.exists():
        msg = f"{what} not found at {path}: run ./install.sh (or `compass-hook model export --model minilm`)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI installs it; a missing model there is a bug, not a skip
        pytest.skip(msg)


@pytest.fixture
def real_model(monkeypatch):
    """The real exported MiniLM in <repo>/models/minilm (made by install.sh)."""
    folder = ROOT / "models" / "minilm"
    _require(folder / "compass-model.json", "exported MiniLM model")
    monkeypatch.setenv("COMPASS_MODEL", "minilm")
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

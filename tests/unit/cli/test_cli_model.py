"""`compass-hook model list|verify|export`, `embed` and `doctor` through CliRunner
(fake embedder, empty models dir; the real export is in test_export.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from compass_hooks.cli import cli


@pytest.fixture
def no_models(compass_home):
    """The new user's models dir, where every install path exports (nothing there yet)."""
    return compass_home / "models"


def _one_line_error(result) -> str:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("args", [["model"], ["model", "export"], ["model", "list"], ["model", "verify"], ["model", "bench"], ["embed"], ["doctor"]])
def test_every_command_has_help(cli_runner, args):
    result = cli_runner.invoke(cli, [*args, "--help"])
    assert result.exit_code == 0 and len(result.output.splitlines()) > 3


def test_model_list_empty(cli_runner, no_models):
    result = cli_runner.invoke(cli, ["model", "list", "--json"])
    assert result.exit_code == 0 and json.loads(result.output) == []
    human = cli_runner.invoke(cli, ["model", "list"])
    assert "compass-hook model export --model minilm" in human.output


def test_model_verify_without_models_fails(cli_runner, no_models):
    assert "no models" in _one_line_error(cli_runner.invoke(cli, ["model", "verify"]))


def test_embed_fake_json(cli_runner):
    result = cli_runner.invoke(cli, ["embed", "--json", "hello world", "never push to main"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["model"] == "fake:64" and data["dim"] == 64
    vecs = np.array(data["vectors"])
    assert vecs.shape == (2, 64)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-6)
    again = json.loads(cli_runner.invoke(cli, ["embed", "--json", "hello world"]).output)
    assert again["vectors"][0] == data["vectors"][0]


def test_embed_human(cli_runner):
    result = cli_runner.invoke(cli, ["embed", "--model", "fake:16", "hello"])
    assert result.exit_code == 0 and result.output.startswith("fake:16 16-d  [")


def test_embed_missing_model_is_one_clear_line(cli_runner, no_models):
    line = _one_line_error(cli_runner.invoke(cli, ["embed", "--model", "nope", "hi"]))
    assert line.startswith("Error: model 'nope' is not exported")
    assert "compass-hook model export --model nope" in line


def test_export_unknown_source(cli_runner, no_models):
    line = _one_line_error(cli_runner.invoke(cli, ["model", "export", "--model", "no-such-thing"]))
    assert "unknown model 'no-such-thing'" in line


def test_export_without_extra_says_what_to_install(cli_runner, no_models, monkeypatch):
    from compass_hooks.embedding import export

    monkeypatch.setattr(export, "_EXTRA_MODULES", ("torch_not_installed_here",))
    line = _one_line_error(cli_runner.invoke(cli, ["model", "export", "--model", "minilm"]))
    assert "pip install 'compass-hooks[export]'" in line and "torch_not_installed_here" in line
    assert not no_models.exists() or not any(no_models.iterdir())


def test_doctor_json(cli_runner, no_models):
    result = cli_runner.invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert {"db", "audit_log", "socket", "models", "config"} <= r["paths"].keys()
    assert r["paths"]["models"] == str(no_models) and r["model_dirs"][0] == str(no_models)
    assert {"compass-hooks", "python", "onnxruntime", "tokenizers", "numpy", "mcp", "protocol"} <= r["versions"].keys()
    assert r["default_model"] == {"name": "fake", "ready": True, "detail": r["default_model"]["detail"]}
    assert r["models"] == []
    assert isinstance(r["worker"], dict) and "running" in r["worker"]
    assert r["ok"] is True and r["advice"] == []


def test_doctor_reports_missing_model_and_exits_0(cli_runner, no_models, monkeypatch):
    monkeypatch.setenv("COMPASS_MODEL", "minilm")
    r = json.loads(cli_runner.invoke(cli, ["doctor", "--json"]).output)
    assert r["default_model"]["ready"] is False and r["ok"] is False
    assert any("compass-hook model export --model minilm" in a for a in r["advice"])
    human = cli_runner.invoke(cli, ["doctor"])
    assert human.exit_code == 0
    assert "NOT READY" in human.output and "to do" in human.output
    assert "socket" in human.output
    assert ["looked", "in", str(no_models)] in [line.split() for line in human.output.splitlines()]


def test_doctor_survives_a_broken_config(cli_runner, compass_home):
    compass_home.mkdir(parents=True, exist_ok=True)
    (compass_home / "config.toml").write_text("[model]\nthreds = 1\n")
    result = cli_runner.invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0
    r = json.loads(result.output)
    assert "model.threds" in r["config"]["error"] and r["ok"] is False


def test_model_bench_prints_figures(cli_runner):
    result = cli_runner.invoke(cli, ["model", "bench", "fake", "--runs", "3", "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert r["model"] == "fake" and r["runs"] == 3
    assert r["fp32"]["median_ms"] >= 0 and "int8" not in r  # the fake has no int8 variant

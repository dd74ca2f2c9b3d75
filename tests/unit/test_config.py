"""Config layering: defaults < config.toml < COMPASS_* env; typos are errors."""

from __future__ import annotations

import pytest

from compass_hooks.config import DEFAULTS, load_config, save_config
from compass_hooks.errors import ConfigError


def test_defaults_without_file(tmp_path):
    cfg = load_config(tmp_path / "none.toml", env={})
    assert cfg.source is None
    assert cfg.data == DEFAULTS
    assert cfg.data is not DEFAULTS  # a copy: callers may mutate it


def test_file_values_apply(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text('[model]\nname = "bge-m3"\nthreads = 2\n[hooks]\npretooluse = "deny"\n')
    cfg = load_config(f, env={})
    assert cfg.source == f
    assert (cfg.get("model", "name"), cfg.get("model", "threads"), cfg.get("hooks", "pretooluse")) == ("bge-m3", 2, "deny")
    assert cfg.get("model", "batch_size") == DEFAULTS["model"]["batch_size"]


def test_env_overrides_file(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text('[model]\nname = "bge-m3"\nint8 = false\n')
    cfg = load_config(f, env={"COMPASS_MODEL": "minilm", "COMPASS_INT8": "yes", "COMPASS_THREADS": "3"})
    assert (cfg.get("model", "name"), cfg.get("model", "int8"), cfg.get("model", "threads")) == ("minilm", True, 3)


def test_unknown_key_is_named(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text("[model]\nthreds = 2\n")
    with pytest.raises(ConfigError, match="model.threds"):
        load_config(f, env={})


def test_unknown_section_and_bad_toml(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text("[modle]\nname = 'x'\n")
    with pytest.raises(ConfigError, match=r"\[modle\]"):
        load_config(f, env={})
    f.write_text("[model\n")
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(f, env={})


def test_bad_env_value(tmp_path):
    with pytest.raises(ConfigError, match="COMPASS_THREADS"):
        load_config(tmp_path / "none.toml", env={"COMPASS_THREADS": "many"})
    with pytest.raises(ConfigError, match="COMPASS_INT8"):
        load_config(tmp_path / "none.toml", env={"COMPASS_INT8": "maybe"})


def test_save_round_trip_writes_only_changes(tmp_path):
    f = tmp_path / "sub" / "config.toml"
    cfg = load_config(f, env={})
    cfg.data["model"]["name"] = "bge-m3"
    cfg.data["drift"]["packs"] = ["default", "mine"]
    save_config(cfg, f)
    text = f.read_text()
    assert "threads" not in text and 'name = "bge-m3"' in text
    again = load_config(f, env={})
    assert again.get("model", "name") == "bge-m3" and again.get("drift", "packs") == ["default", "mine"]

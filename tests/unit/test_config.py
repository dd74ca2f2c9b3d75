"""Config layering: defaults < config.toml < COMPASS_* env; typos are errors."""

from __future__ import annotations

import pytest

from compass_hooks.config import DEFAULTS, load_config
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


@pytest.mark.parametrize("body, key, why", [
    ('[model]\nthreads = "two"\n', "model.threads", 'must be a whole number, got "two" (a string)'),
    ("[model]\nthreads = true\n", "model.threads", "must be a whole number"),
    ("[model]\nthreads = 0\n", "model.threads", "must be at least 1"),
    ('[hooks]\npretooluse = "block"\n', "hooks.pretooluse", "must be one of ask, deny, off"),
    ('[hooks]\nenabled = "yes"\n', "hooks.enabled", "must be true or false"),
    ("[memory]\nmin_score = 2\n", "memory.min_score", "must be at most 1"),
    ('[drift]\npacks = "default"\n', "drift.packs", "must be a list of strings"),
    ("[mcp]\nhttp_port = 70000\n", "mcp.http_port", "must be at most 65535"),
    ('[memory]\ninstructions = "on"\n', "memory.instructions", "must be true or false"),
    ("[memory]\ninstructions_budget_chars = -1\n", "memory.instructions_budget_chars", "must be at least 0"),
])
def test_values_of_the_wrong_type_or_range_are_named(tmp_path, body, key, why):
    f = tmp_path / "config.toml"
    f.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_config(f, env={})
    assert f"{f}: {key} {why}" in str(info.value) and "\n" not in str(info.value)


def test_a_bad_environment_override_names_the_variable(tmp_path):
    with pytest.raises(ConfigError, match=r"\$COMPASS_THREADS: model.threads must be at least 1"):
        load_config(tmp_path / "none.toml", env={"COMPASS_THREADS": "0"})
    with pytest.raises(ConfigError, match="COMPASS_THREADS='two' is not a valid int"):
        load_config(tmp_path / "none.toml", env={"COMPASS_THREADS": "two"})


def test_optional_values_may_be_numbers(tmp_path):
    f = tmp_path / "config.toml"
    f.write_text("[memory]\nmin_score = 0.3\n[drift]\nthreshold = 0.5\n[worker]\nidle_timeout_s = 60\n")
    cfg = load_config(f, env={})
    assert (cfg.get("memory", "min_score"), cfg.get("drift", "threshold"), cfg.get("worker", "idle_timeout_s")) == \
        (0.3, 0.5, 60)


def test_the_cli_names_the_bad_key(cli_runner, compass_home):
    from compass_hooks.cli import cli

    (compass_home / "config.toml").write_text('[model]\nthreads = "two"\n')
    res = cli_runner.invoke(cli, ["recall", "anything"])
    assert res.exit_code == 1 and "model.threads must be a whole number" in res.output
    assert len(res.output.strip().splitlines()) == 1


def test_every_setting_has_a_check():
    """A key added to DEFAULTS without a SCHEMA entry would load any value unchecked."""
    from compass_hooks.config import DEFAULTS, SCHEMA

    assert {s: set(v) for s, v in SCHEMA.items()} == {s: set(v) for s, v in DEFAULTS.items()}

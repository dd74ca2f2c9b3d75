"""``compass-hook config``: show the settings in force, and change ``config.toml`` without opening an editor."""

from __future__ import annotations

import click

from . import echo_json


def _path():
    from ..paths import get_paths

    return get_paths().config


@click.group("config")
def config_group() -> None:
    """Show or change settings (<data>/config.toml; COMPASS_* variables override it).

    Keys are SECTION.KEY, e.g. model.name, hooks.pretooluse, memory.recall_k; `config show` lists them all.
    """


@config_group.command("show")
@click.option("--json", "as_json", is_flag=True, help='Print {"path", "settings": {section: {key: value}}} as JSON.')
def show_cmd(as_json: bool) -> None:
    """Every setting in force (defaults, the file, then COMPASS_* variables)."""
    from ..config import _toml_value, load_config

    path = _path()
    cfg = load_config(path)
    if as_json:
        echo_json({"path": str(path), "exists": path.exists(), "settings": cfg.data})
        return
    click.echo(f"# {path}{'' if path.exists() else ' (not written yet: all defaults)'}")
    for section, values in cfg.data.items():
        click.echo(f"[{section}]")
        for key, value in values.items():
            click.echo(f"{key} = {_toml_value(value) if value is not None else '(unset: the documented default)'}")


@config_group.command("path")
def path_cmd() -> None:
    """Print where config.toml is (it may not exist yet)."""
    click.echo(str(_path()))


@config_group.command("set")
@click.argument("key")
@click.argument("value")
@click.option("--json", "as_json", is_flag=True, help='Print {"key", "value", "path"} as JSON.')
def set_cmd(key: str, value: str, as_json: bool) -> None:
    """Set KEY (SECTION.KEY) to VALUE, read as TOML: 2, true, 0.7, '["default", "infra"]'; a plain word is a string.

    The value is checked first and the file keeps its comments. A running worker reads the file when it
    starts: `compass-hook worker stop` applies a change now (the next hook starts it again).
    """
    from ..config import edit_config

    path = _path()
    new = edit_config(path, key, value)
    if as_json:
        echo_json({"key": key, "value": new, "path": str(path)})
    else:
        click.echo(f"{key} = {value if isinstance(new, str) else new!r} in {path}")


@config_group.command("unset")
@click.argument("key")
@click.option("--json", "as_json", is_flag=True, help='Print {"key", "value", "path"} as JSON (value: the default).')
def unset_cmd(key: str, as_json: bool) -> None:
    """Remove KEY (SECTION.KEY) from config.toml: the default applies again."""
    from ..config import edit_config

    path = _path()
    new = edit_config(path, key, None)
    if as_json:
        echo_json({"key": key, "value": new, "path": str(path)})
    else:
        click.echo(f"{key}: back to the default ({new!r}) in {path}")


def register(cli: click.Group) -> None:
    cli.add_command(config_group)

"""Configuration: defaults < ``config.toml`` in the data dir < ``COMPASS_*`` env vars.

Stdlib only (the hook client reads it, under ``python -I -S``: no pydantic there). Sections are flat dicts;
unknown keys in the file are rejected with the key named, so typos do not silently do nothing, and every value
is checked against :data:`SCHEMA` (its type and range), so ``threads = "two"`` is an error naming
``model.threads`` when the config is loaded, not a failure of every hook later with a hint about something else.
"""

from __future__ import annotations

import copy
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - Python 3.10
    import tomli as _toml

DEFAULTS: dict[str, dict[str, Any]] = {
    "model": {
        "name": "minilm",  # default embedding model (folder name under the models dir)
        "int8": False,  # use model_int8.onnx when the export has one
        # onnxruntime intra-op threads. 2 (spinning off, so idle threads do not fight numpy/BLAS): faster per
        # hook prompt and per import than 1 on a 2-core machine (figures: models/README.md, docs/memory.md).
        "threads": 2,
        "batch_size": 32,
    },
    "worker": {
        "idle_timeout_s": 1800.0,  # worker exits after this long without a request
        "start_timeout_s": 60.0,  # `worker start` waits this long for readiness
        "request_timeout_s": 5.0,
    },
    "hooks": {
        "budget_chars": 4000,  # total injected text per hook call (Claude Code caps at 10,000)
        "cold_start_s": 3.0,  # first prompt waits this long for a cold worker, then fails open
        "connect_timeout_s": 0.5,
        "request_timeout_s": 2.5,
        "failures_before_notice": 3,
        "max_stdin_bytes": 2_000_000,
        "pretooluse": "ask",  # ask | deny | off for destructive Bash commands
        "enabled": True,
    },
    "drift": {
        "packs": ["default"],
        "top_k": 3,
        "threshold": None,  # None: the calibrated default shipped with the packs
    },
    "memory": {
        "enabled": True,
        "recall_k": 3,
        "min_score": None,  # None: the documented default relevance floor
        "exclude_recent_turns": 3,
        "opt_out_projects": [],
        "instructions": True,  # detect standing instructions and show the ones in force with every prompt
        "instructions_budget_chars": 800,  # the standing-instructions block (whole rules only; never cut)
    },
    "mcp": {
        "http_host": "127.0.0.1",
        "http_port": 8765,
    },
}

class Check:
    """A value's type and range: ``kind`` is bool, int, float, str or list (of strings); ``lo``/``hi`` bound
    numbers, ``choices`` strings; ``optional`` allows None (unset in the file: the documented default)."""

    def __init__(self, kind: type, lo: float | None = None, hi: float | None = None,
                 choices: tuple[str, ...] = (), optional: bool = False):
        self.kind, self.lo, self.hi, self.choices, self.optional = kind, lo, hi, choices, optional

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit, or None."""
        if value is None:
            return None if self.optional else "must be set"
        names = {bool: "true or false", int: "a whole number", float: "a number", str: "a string",
                 list: "a list of strings"}
        if self.kind is bool:
            ok = isinstance(value, bool)
        elif self.kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        elif self.kind is list:
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        else:
            ok = isinstance(value, self.kind)
        if not ok:
            return f"must be {names[self.kind]}, got {_shown(value)}"
        if self.choices and value not in self.choices:
            return f"must be one of {', '.join(self.choices)}, got {_shown(value)}"
        if self.lo is not None and value < self.lo:
            return f"must be at least {self.lo:g}, got {value!r}"
        if self.hi is not None and value > self.hi:
            return f"must be at most {self.hi:g}, got {value!r}"
        return None


def _shown(value: Any) -> str:
    kind = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)
    text = repr(value) if not isinstance(value, str) else '"' + value[:40] + '"'
    return f"{text} ({kind})"


# Ranges say what cannot work (a negative timeout, a port past 65535), not what is sensible: tests and users
# tune timeouts well below their defaults.
SCHEMA: dict[str, dict[str, Check]] = {
    "model": {"name": Check(str), "int8": Check(bool), "threads": Check(int, 1, 256), "batch_size": Check(int, 1, 4096)},
    "worker": {"idle_timeout_s": Check(float, 0.01), "start_timeout_s": Check(float, 0.01),
               "request_timeout_s": Check(float, 0.001)},
    "hooks": {"budget_chars": Check(int, 0, 10_000), "cold_start_s": Check(float, 0), "connect_timeout_s":
              Check(float, 0.001), "request_timeout_s": Check(float, 0.001), "failures_before_notice": Check(int, 1),
              "max_stdin_bytes": Check(int, 1), "pretooluse": Check(str, choices=("ask", "deny", "off")),
              "enabled": Check(bool)},
    "drift": {"packs": Check(list), "top_k": Check(int, 1, 50), "threshold": Check(float, 0, 1, optional=True)},
    "memory": {"enabled": Check(bool), "recall_k": Check(int, 1, 50), "min_score": Check(float, -1, 1, optional=True),
               "exclude_recent_turns": Check(int, 0), "opt_out_projects": Check(list), "instructions": Check(bool),
               "instructions_budget_chars": Check(int, 0, 10_000)},
    "mcp": {"http_host": Check(str), "http_port": Check(int, 0, 65535)},
}


def validate(cfg: "Config", origin: dict[tuple[str, str], str] | None = None) -> None:
    """Raise ConfigError for the first value that does not fit :data:`SCHEMA`, naming the key and where it was
    set (the file, or the environment variable)."""
    origin = origin or {}
    for section, checks in SCHEMA.items():
        for key, check in checks.items():
            why = check.problem(cfg.data[section][key])
            if why:
                where = origin.get((section, key), f"{cfg.source or 'config'}")
                raise ConfigError(f"{where}: {section}.{key} {why}",
                                  f"fix it (default: {_toml_value(DEFAULTS[section][key]) if DEFAULTS[section][key] is not None else 'unset'}) "
                                  "or delete the line")


# env var -> (section, key, type)
ENV_OVERRIDES: dict[str, tuple[str, str, type]] = {
    "COMPASS_MODEL": ("model", "name", str),
    "COMPASS_INT8": ("model", "int8", bool),
    "COMPASS_THREADS": ("model", "threads", int),
    "COMPASS_IDLE_TIMEOUT": ("worker", "idle_timeout_s", float),
    "COMPASS_START_TIMEOUT": ("worker", "start_timeout_s", float),
    "COMPASS_BUDGET_CHARS": ("hooks", "budget_chars", int),
    "COMPASS_COLD_START": ("hooks", "cold_start_s", float),
    "COMPASS_CONNECT_TIMEOUT": ("hooks", "connect_timeout_s", float),
    "COMPASS_REQUEST_TIMEOUT": ("hooks", "request_timeout_s", float),
    "COMPASS_PRETOOLUSE": ("hooks", "pretooluse", str),
}


def _coerce(value: str, typ: type, name: str) -> Any:
    try:
        if typ is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(value)
        return typ(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r} is not a valid {typ.__name__}") from None


@dataclass
class Config:
    data: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(DEFAULTS))
    source: Path | None = None

    def get(self, section: str, key: str) -> Any:
        return self.data[section][key]

    def section(self, name: str) -> dict[str, Any]:
        return self.data[name]


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Load the config. A missing file is fine; a malformed one raises ConfigError."""
    if path is None:
        from .paths import get_paths

        path = get_paths().config
    environ: Mapping[str, str] = os.environ if env is None else env
    cfg = Config(source=path if path.exists() else None)
    origin: dict[tuple[str, str], str] = {}
    if path.exists():
        try:
            parsed = _toml.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, _toml.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}", "fix or delete the file") from None
        _apply_file(cfg, parsed, path, origin)
    for name, (section, key, typ) in ENV_OVERRIDES.items():
        if name in environ:
            cfg.data[section][key] = _coerce(environ[name], typ, name)
            origin[(section, key)] = f"${name}"
    validate(cfg, origin)
    return cfg


def _apply_file(cfg: Config, parsed: Mapping[str, Any], path: Path, origin: dict[tuple[str, str], str]) -> None:
    """Lay the parsed file over ``cfg``: an unknown section or key is an error naming it (a typo must not
    silently do nothing)."""
    for section, values in parsed.items():
        if section not in DEFAULTS or not isinstance(values, dict):
            raise ConfigError(f"{path}: unknown section [{section}]", f"known: {', '.join(DEFAULTS)}")
        for key, value in values.items():
            if key not in DEFAULTS[section]:
                raise ConfigError(f"{path}: unknown key {section}.{key}")
            cfg.data[section][key] = value
            origin[(section, key)] = str(path)


def _toml_value(value: Any) -> str:
    """``value`` as TOML text: how the validation hint shows a key's default ("fix it (default: ...)")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {value!r} to TOML")


def _parse_value(section: str, key: str, text: str) -> Any:
    """A value given on the command line, read as TOML (``2``, ``true``, ``["default", "infra"]``); text that is
    not TOML is taken as a string when the key holds strings, so ``config set model.name bge-m3`` needs no quotes."""
    try:
        return _toml.loads(f"v = {text}")["v"]
    except _toml.TOMLDecodeError:
        if SCHEMA[section][key].kind is str:
            return text
        raise ConfigError(f"{section}.{key} {SCHEMA[section][key].problem(text)}",
                          f"e.g. {_toml_value(DEFAULTS[section][key])}" if DEFAULTS[section][key] is not None
                          else "e.g. 0.7") from None


def _split_key(dotted: str) -> tuple[str, str]:
    section, _, key = dotted.partition(".")
    if section not in SCHEMA:
        raise ConfigError(f"unknown section {section!r} in {dotted!r}", f"keys look like model.name; sections: "
                          f"{', '.join(SCHEMA)}")
    if key not in SCHEMA[section]:
        raise ConfigError(f"unknown key {dotted!r}", f"keys of [{section}]: {', '.join(SCHEMA[section])}")
    return section, key


def edit_config(path: Path, dotted: str, text: str | None) -> Any:
    """Set ``section.key`` to ``text`` (read as TOML), or remove it from the file (``text`` None: back to the
    default), keeping the file's comments, order and formatting (tomlkit), and return the new value.

    The value is checked against :data:`SCHEMA` before anything is written, and the file is replaced atomically
    (same mode, 0600 for a new one), so a bad value or a crash leaves the old file as it was. tomlkit is imported
    here, not at the top: the hook client imports this module under ``python -I -S``."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    section, key = _split_key(dotted)
    value = None if text is None else _parse_value(section, key, text)
    if value is not None:
        why = SCHEMA[section][key].problem(value)
        if why:
            raise ConfigError(f"{dotted} {why}", f"default: {_toml_value(DEFAULTS[section][key])}"
                              if DEFAULTS[section][key] is not None else "unset it to use the documented default")
    try:
        doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}", "fix or delete the file") from None
    table = doc.get(section)
    if value is None:
        if table is not None and key in table:
            del table[key]
            if not table:
                del doc[section]
    else:
        if table is None:
            table = tomlkit.table()
            doc[section] = table
        table[key] = value
    text_out = tomlkit.dumps(doc)
    # Whatever else the file holds must still load: a set never leaves a config that every hook then rejects.
    try:
        parsed = _toml.loads(text_out)
    except _toml.TOMLDecodeError as exc:  # pragma: no cover - tomlkit writes valid TOML
        raise ConfigError(f"cannot write {dotted}: {exc}") from None
    cfg = Config(source=path)
    origin: dict[tuple[str, str], str] = {}
    _apply_file(cfg, parsed, path, origin)
    validate(cfg, origin)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text_out)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return DEFAULTS[section][key] if value is None else value

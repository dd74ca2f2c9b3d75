"""Which project a memory belongs to, and whether the user opted a project out.

Project id = the git top-level of the hook's ``cwd`` (found by walking up for a
``.git`` directory or file, so no ``git`` process is spawned on the hot path),
else the cwd itself, as an absolute path string. ``GLOBAL`` is the global scope.

The CLI's ``--project`` takes a name or a path: anything that looks like a path
(``/``, ``.``, ``~``) is resolved like a cwd; ``global`` means the global scope;
a bare name matches a stored project id exactly or by its last path component,
and otherwise is used verbatim as an id (e.g. ``conv-26`` for an eval import).
A name is never opened as a file. Stdlib only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from ..errors import InvalidInput
from .store import GLOBAL

IGNORE_FILE = ".compass-ignore"
_GLOBAL_NAMES = {"global", GLOBAL}


def git_toplevel(start: str | os.PathLike) -> Path | None:
    """The nearest ancestor (or self) containing ``.git`` (dir, or file for worktrees/submodules)."""
    try:
        p = Path(start).expanduser().resolve()
    except (OSError, RuntimeError):
        return None
    for d in (p, *p.parents):
        try:
            if (d / ".git").exists():
                return d
        except OSError:
            return None
    return None


def project_id(cwd: str | os.PathLike | None) -> str:
    """Project id for a working directory (GLOBAL when there is none)."""
    if not cwd:
        return GLOBAL
    top = git_toplevel(cwd)
    if top is not None:
        return str(top)
    try:
        return str(Path(cwd).expanduser().resolve())
    except (OSError, RuntimeError):
        return str(cwd)


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", ".", "~")) or os.sep in value


def resolve(value: str | None, known: Iterable[str] = (), cwd: str | None = None) -> str:
    """A ``--project`` value (name or path; None = the current directory) to a project id."""
    if value is None:
        return project_id(cwd or os.getcwd())
    value = value.strip()
    if not value:
        raise InvalidInput("empty --project", "give a project name, a path, or 'global'")
    if value.lower() in _GLOBAL_NAMES:
        return GLOBAL
    known = list(known)
    if value in known:
        return value
    if _looks_like_path(value):
        return project_id(value)
    by_name = sorted({k for k in known if k != GLOBAL and Path(k).name == value})
    if len(by_name) == 1:
        return by_name[0]
    if len(by_name) > 1:
        raise InvalidInput(f"project name {value!r} is ambiguous", "pass the path instead: " + ", ".join(by_name))
    return value


def is_opted_out(project: str, config: Any = None) -> bool:
    """True when the user opted this project out of memory (config list or ``.compass-ignore``)."""
    if project == GLOBAL:
        return False
    listed: list[str] = []
    if config is not None:
        try:
            listed = list(config.get("memory", "opt_out_projects") or [])
        except (KeyError, AttributeError):
            listed = []
    for entry in listed:
        entry = str(entry)
        if entry == project or Path(project).name == entry:
            return True
        if _looks_like_path(entry):
            try:
                if str(Path(entry).expanduser().resolve()) == project:
                    return True
            except (OSError, RuntimeError):
                pass
    if project.startswith("/"):
        try:
            return (Path(project) / IGNORE_FILE).exists()
        except OSError:
            return False
    return False

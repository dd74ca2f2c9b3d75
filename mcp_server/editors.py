"""MCP client configs for the editors we support, and a writer that merges ours in (and takes it out).

The writer never clobbers: it parses the existing file, touches only our own
entry (``compass``), keeps every other server and setting, writes a timestamped
backup before changing anything, and does nothing when the entry is already
right (idempotent). JSON files may have comments and trailing commas (Zed's
settings, VS Code's mcp.json are JSONC): the entry's span is edited in the text
(:mod:`.jsonc`), so every comment stays. A YAML file that is not ours, or text
that is not JSON even with comments, is refused with the snippet to paste by hand.

Every entry names the project the server serves by default (``--project DIR``, the
git top-level of where ``mcp config`` ran, or ``--project``): Claude Desktop starts
servers in ``/``, and a server whose client offers no MCP roots would otherwise take
``/`` for the project. Clients that do offer roots (their open workspace) still win.

What ``--write`` wrote is recorded in ``<data>/mcp-configs.json`` so ``compass-hook
uninstall`` (and ``mcp config CLIENT --remove``) can take our entries out again.

It never writes through anything but a regular file: a symlink, a device (``/dev/null`` when run as root), a
FIFO (which would block a read) or a socket at the target is refused with a one-line reason, checked on the
descriptor it reads (``O_NOFOLLOW | O_NONBLOCK``, then ``fstat``) so nothing can be swapped in between. The new
content goes to a fresh temporary file in the same directory (``O_EXCL``, the old file's mode) that is
renamed over the target, so a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shlex
import shutil
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from compass_hooks.errors import InvalidInput

from . import SERVER_NAME, jsonc

READ_ONLY_TOOLS = ["drift_check", "recall", "constraints", "status", "list", "drift_history"]
_YAML_MARKER = "# compass-hooks MCP server (written by `compass-hook mcp config continue`)"


def server_command() -> list[str]:
    """Absolute command for this install's server: the venv's ``compass-mcp`` script.

    ``sys.prefix`` (not the resolved interpreter) so a venv stays a venv: its python
    is usually a symlink to the base interpreter, which has no compass-hooks.
    """
    script = Path(sys.prefix) / ("Scripts/compass-mcp.exe" if os.name == "nt" else "bin/compass-mcp")
    if script.exists():
        return [str(script)]
    found = shutil.which("compass-mcp")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "mcp_server"]


def default_project() -> str:
    """The project an entry names when ``--project`` is not given: the git top-level of this directory."""
    from compass_hooks.memory.project import project_id

    return project_id(os.getcwd())


def server_args(project: str | None = None) -> list[str]:
    """``--project DIR`` (or ``global``) for the server: the project it serves when the client offers no roots."""
    from compass_hooks.memory.project import project_id

    if project is None:
        project = default_project()
    elif project.strip().lower() != "global":
        project = project_id(os.path.abspath(os.path.expanduser(project)))
    else:
        project = "global"
    return ["--project", project]


def server_env() -> dict[str, str]:
    """Only what the user chose: COMPASS_HOME when it is set (the data dir must match the hooks')."""
    home = os.environ.get("COMPASS_HOME")
    return {"COMPASS_HOME": str(Path(home).expanduser().absolute())} if home else {}


def _home() -> Path:
    return Path.home()


def _app_config_dir() -> Path:
    """Where desktop apps keep their settings: ~/Library/Application Support, %APPDATA% or ~/.config."""
    if sys.platform == "darwin":
        return _home() / "Library" / "Application Support"
    if os.name == "nt":
        return Path(os.environ.get("APPDATA", _home() / "AppData" / "Roaming"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    default_path: Callable[[], Path]
    container: str  # top-level key holding the servers ("" for Continue's YAML block file)
    entry: Callable[[list[str], dict[str, str]], dict[str, Any]]
    note: str = ""


def _stdio(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {"command": cmd[0], "args": cmd[1:], "env": env}


def _cline(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    # Read-only tools are auto-approved; remember/forget change the store, so Cline asks.
    return {**_stdio(cmd, env), "disabled": False, "autoApprove": list(READ_ONLY_TOOLS)}


def _zed(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {"source": "custom", **_stdio(cmd, env)}


def _vscode(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {"type": "stdio", **_stdio(cmd, env)}


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("claude-code", "Claude Code", lambda: Path.cwd() / ".mcp.json", "mcpServers", _stdio,
           "Project scope (.mcp.json in this directory). The compass-hooks plugin already bundles this server; "
           "use this only without the plugin."),
    Client("claude-desktop", "Claude Desktop", lambda: _app_config_dir() / "Claude" / "claude_desktop_config.json",
           "mcpServers", _stdio, "Restart Claude Desktop after writing."),
    Client("cursor", "Cursor", lambda: _home() / ".cursor" / "mcp.json", "mcpServers", _stdio,
           "Global; for one project use --path .cursor/mcp.json."),
    Client("cline", "Cline", lambda: _app_config_dir() / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
           / "settings" / "cline_mcp_settings.json", "mcpServers", _cline,
           "Read-only tools are in autoApprove; remember and forget ask first."),
    Client("windsurf", "Windsurf", lambda: _home() / ".codeium" / "windsurf" / "mcp_config.json", "mcpServers",
           _stdio),
    Client("zed", "Zed", lambda: _app_config_dir() / "zed" / "settings.json" if sys.platform != "darwin"
           else _home() / ".config" / "zed" / "settings.json", "context_servers", _zed,
           "Zed supports MCP tools and prompts; Compass is tools-only."),
    Client("continue", "Continue", lambda: _home() / ".continue" / "mcpServers" / "compass.yaml", "", _stdio,
           "A block file of its own; for one workspace use --path .continue/mcpServers/compass.yaml."),
    Client("vscode", "VS Code", lambda: Path.cwd() / ".vscode" / "mcp.json", "servers", _vscode,
           "Workspace scope (.vscode/mcp.json in this directory); for every workspace add it to your user "
           "profile's mcp.json (MCP: Open User Configuration) with --path."),
)}


def get_client(name: str) -> Client:
    try:
        return CLIENTS[name]
    except KeyError:
        raise InvalidInput(f"unknown MCP client {name!r}", f"choose one of: {', '.join(CLIENTS)}") from None


def entry_for(client: str, project: str | None = None) -> dict[str, Any]:
    return get_client(client).entry(server_command() + server_args(project), server_env())


def _yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid YAML double-quoted scalar


def continue_yaml(entry: dict[str, Any]) -> str:
    from compass_hooks import __version__

    lines = [_YAML_MARKER, "name: Compass", f"version: {__version__}", "schema: v1", "mcpServers:",
             f"  - name: {SERVER_NAME}", f"    command: {_yaml_str(entry['command'])}"]
    lines.append("    args: [" + ", ".join(_yaml_str(a) for a in entry["args"]) + "]")
    if entry["env"]:
        lines.append("    env:")
        lines.extend(f"      {k}: {_yaml_str(v)}" for k, v in entry["env"].items())
    else:
        lines.append("    env: {}")
    return "\n".join(lines) + "\n"


def snippet(client: str, project: str | None = None) -> str:
    """The text `compass-hook mcp config CLIENT` prints."""
    c = get_client(client)
    entry = entry_for(client, project)
    if not c.container:
        return continue_yaml(entry)
    text = json.dumps({c.container: {SERVER_NAME: entry}}, indent=2)
    if client == "claude-code":
        env = " ".join(f"--env {k}={shlex.quote(v)}" for k, v in entry["env"].items())
        cmd = " ".join(shlex.quote(p) for p in [entry["command"], *entry["args"]])
        text += f"\n\nor, for every project:\n  claude mcp add --scope user {env + ' ' if env else ''}{SERVER_NAME} -- {cmd}"
    return text


@dataclass
class WriteResult:
    client: str
    path: Path
    action: str  # created | updated | unchanged | removed | absent
    backup: Path | None

    def as_dict(self) -> dict[str, Any]:
        return {"client": self.client, "path": str(self.path), "action": self.action,
                "backup": str(self.backup) if self.backup else None}


_MAX_CONFIG_BYTES = 16 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _parent_problem(path: Path) -> str | None:
    """The first parent of ``path`` that exists and is not a directory (a file where a folder should be)."""
    for parent in reversed(path.parents):
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"cannot reach {parent}: {exc.strerror or exc}"
        if not stat.S_ISDIR(st.st_mode):
            return f"{parent} is a file, not a directory"
    return None


def _read_existing(path: Path) -> tuple[str, int] | None:
    """(text, mode) of the config file at ``path``, None when there is none; refuses anything but a regular file
    (one-line InvalidInput) without following a symlink or blocking on a FIFO."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise InvalidInput(f"cannot use {path}: {_parent_problem(path) or 'a parent is not a directory'}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise InvalidInput(f"{path} is a symlink; not writing through it",
                           f"point --path at the file it links to ({os.path.realpath(path)}) if that is the one")
    if not stat.S_ISREG(st.st_mode):
        raise InvalidInput(f"{path} is {_kind(st.st_mode)}, not a regular file; not touching it",
                           "point --path at a JSON/YAML config file")
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        what = "a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise InvalidInput(f"cannot read {path}: {what}; not touching it") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped between the lstat and the open
            raise InvalidInput(f"{path} is {_kind(st.st_mode)}, not a regular file; not touching it")
        if st.st_size > _MAX_CONFIG_BYTES:
            raise InvalidInput(f"{path} is larger than {_MAX_CONFIG_BYTES // (1024 * 1024)} MB; not a config file")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        return b"".join(chunks).decode("utf-8"), stat.S_IMODE(st.st_mode)
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text; not touching it") from None


def _write_new(path: Path, text: str, mode: int) -> None:
    """Create ``path`` (which must not exist) with ``text``; never follows a symlink planted there."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        os.fchmod(fd, mode)  # the umask must not widen or narrow what the user had
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _backup(path: Path, old: str, mode: int) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 0
    while True:  # two writes in one second keep both backups
        backup = path.with_name(f"{path.name}.bak-{stamp}" + (f"-{n}" if n else ""))
        try:
            _write_new(backup, old, mode)
            return backup
        except FileExistsError:
            n += 1


def _atomic_write(path: Path, text: str, mode: int = 0o600) -> None:
    """Write ``text`` to a fresh temporary file next to ``path`` and rename it over ``path``."""
    problem = _parent_problem(path)
    if problem:
        raise InvalidInput(f"cannot write {path}: {problem}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    tmp = path.with_name(f".{path.name}.compass-tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        _write_new(tmp, text, mode)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise InvalidInput(f"cannot write {path}: {exc.strerror or exc}") from None


def _load_json(path: Path, raw: str, client: Client) -> dict[str, Any]:
    """The config's data; JSON with comments and trailing commas is read too (edited in place, comments kept)."""
    if not raw.strip():
        return {}
    try:
        data = jsonc.loads(raw)
    except (jsonc.JSONCError, ValueError) as exc:
        raise InvalidInput(
            f"{path} is not JSON, even allowing comments ({exc}); not touching it",
            f"add the snippet from `compass-hook mcp config {client.name}` under \"{client.container}\" by hand") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; not touching it")
    servers = data.get(client.container)
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInput(f"{path}: \"{client.container}\" is not an object; not touching it")
    return data


def _edited(path: Path, old: str, client: Client, entry: dict[str, Any] | None) -> str:
    """``old`` with our entry set (or removed, ``entry`` None), checked by parsing the result: everything but
    our entry must be what it was."""
    before = _load_json(path, old, client)
    try:
        if entry is None:
            new = jsonc.remove_member(old, client.container, SERVER_NAME)
            new = old if new is None else new
        elif not old.strip():
            new = json.dumps({client.container: {SERVER_NAME: entry}}, indent=2) + "\n"
        else:
            new = jsonc.set_member(old, client.container, SERVER_NAME, entry)
        after = jsonc.loads(new)
    except (jsonc.JSONCError, ValueError) as exc:
        raise InvalidInput(f"cannot merge into {path} safely ({exc}); not touching it",
                           f"edit \"{client.container}\" by hand (`compass-hook mcp config {client.name}` prints "
                           "the entry)") from None
    want = dict(before)
    servers = dict(want.get(client.container) or {})
    servers.pop(SERVER_NAME, None)
    if entry is not None:
        servers[SERVER_NAME] = entry
    if entry is not None or client.container in want:
        want[client.container] = servers
    got = dict(after)
    if isinstance(got.get(client.container), dict) and not got[client.container] and client.container not in want:
        got.pop(client.container)
    if got != want:
        raise InvalidInput(f"merging into {path} would change more than the compass entry; not touching it",
                           f"edit \"{client.container}\" by hand")
    return new


RECORD = "mcp-configs.json"


def _record_path() -> Path:
    from compass_hooks.paths import get_paths

    return get_paths().data / RECORD


def written() -> list[dict[str, str]]:
    """The editor configs ``--write`` put our entry into (client, path), oldest first."""
    try:
        data = json.loads(_record_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    rows = data.get("written") if isinstance(data, dict) else None
    return [r for r in rows or [] if isinstance(r, dict) and isinstance(r.get("client"), str)
            and isinstance(r.get("path"), str) and r["client"] in CLIENTS]


def _remember_write(client: str, path: Path, present: bool) -> None:
    """Keep the record of our entries current: add (client, path) when written, drop it when removed."""
    rows = [r for r in written() if not (r["client"] == client and r["path"] == str(path))]
    if present:
        rows.append({"client": client, "path": str(path), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    target = _record_path()
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _atomic_write(target, json.dumps({"written": rows}, indent=1) + "\n")
    except InvalidInput:
        pass  # the config itself is written; only uninstall's list of what to undo misses it


def write_config(client: str, path: Path | None = None, project: str | None = None) -> WriteResult:
    """Merge our server into the client's config file (see the module docstring)."""
    c = get_client(client)
    path = (path or c.default_path()).expanduser().absolute()
    entry = entry_for(client, project)
    existing = _read_existing(path)
    if not c.container:
        text = continue_yaml(entry)
        if existing is not None:
            old, mode = existing
            if old == text:
                _remember_write(client, path, True)
                return WriteResult(client, path, "unchanged", None)
            if _YAML_MARKER not in old:
                raise InvalidInput(f"{path} exists and was not written by compass-hooks; not touching it",
                                   "point --path at a new file in a mcpServers/ folder (e.g. "
                                   ".continue/mcpServers/compass.yaml)")
            backup = _backup(path, old, mode)
            _atomic_write(path, text, mode)
            _remember_write(client, path, True)
            return WriteResult(client, path, "updated", backup)
        _atomic_write(path, text)
        _remember_write(client, path, True)
        return WriteResult(client, path, "created", None)

    if existing is not None:
        old, mode = existing
        data = _load_json(path, old, c)
        if (data.get(c.container) or {}).get(SERVER_NAME) == entry:
            _remember_write(client, path, True)
            return WriteResult(client, path, "unchanged", None)
        new = _edited(path, old, c, entry)
        backup = _backup(path, old, mode)
        _atomic_write(path, new, mode)
        _remember_write(client, path, True)
        return WriteResult(client, path, "updated", backup)
    _atomic_write(path, json.dumps({c.container: {SERVER_NAME: entry}}, indent=2) + "\n")
    _remember_write(client, path, True)
    return WriteResult(client, path, "created", None)


def remove_config(client: str, path: Path | None = None) -> WriteResult:
    """Take our entry out of the client's config (backup first; other servers and comments stay). A Continue
    block file we wrote is deleted. ``absent`` when there was nothing of ours."""
    c = get_client(client)
    path = (path or c.default_path()).expanduser().absolute()
    existing = _read_existing(path)
    if existing is None:
        _remember_write(client, path, False)
        return WriteResult(client, path, "absent", None)
    old, mode = existing
    if not c.container:
        if _YAML_MARKER not in old:
            raise InvalidInput(f"{path} was not written by compass-hooks; not touching it")
        backup = _backup(path, old, mode)
        os.unlink(path)
        _remember_write(client, path, False)
        return WriteResult(client, path, "removed", backup)
    data = _load_json(path, old, c)
    if SERVER_NAME not in (data.get(c.container) or {}):
        _remember_write(client, path, False)
        return WriteResult(client, path, "absent", None)
    new = _edited(path, old, c, None)
    backup = _backup(path, old, mode)
    _atomic_write(path, new, mode)
    _remember_write(client, path, False)
    return WriteResult(client, path, "removed", backup)

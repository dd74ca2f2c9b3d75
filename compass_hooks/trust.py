"""Trust checks for the files and sockets only this user may own: the data and socket dirs (0700, ours, not a
symlink), a socket before we connect to it, and the uid of a process that connects to us.

One home for each check, stdlib only and import-light: the hook process runs :func:`socket_problem` before
every request (``worker.client``), the worker runs the others.
"""

from __future__ import annotations

import os
import socket
import stat
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:  # pathlib costs milliseconds on the hook hot path
    from pathlib import Path


# --- private files and dirs -------------------------------------------------------------------------------------

_NOFOLLOW_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def ensure_private_dir(path: Path, follow: bool = False) -> Path:
    """Create ``path`` as an owner-only (0700) directory; refuse a symlink or a dir owned by another user.

    The checks and the chmod are made on one descriptor opened with ``O_NOFOLLOW``: a symlink swapped in
    between a check and a chmod (another user's, in /tmp) is never followed, and another user's directory is
    never chmodded. ``follow=True`` accepts a symlink to a directory of ours (the user's own data dir may be
    one); the target must still be ours. Raises :class:`~compass_hooks.errors.InvalidInput` with a one-line
    reason."""
    from .errors import InvalidInput

    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    except OSError as exc:
        raise InvalidInput(f"cannot create {path}: {exc.strerror or exc}") from None
    flags = _NOFOLLOW_DIR & ~(0 if not follow else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise InvalidInput(f"{path} is a symlink, not a directory we created",
                               "remove it; compass-hooks creates it itself") from None
        if not os.path.isdir(path):
            raise InvalidInput(f"{path} is not a directory (a symlink?)",
                               "remove it; compass-hooks creates it itself") from None
        raise InvalidInput(f"cannot open {path}: {exc.strerror or exc} (owned by another user?)",
                           "remove it or fix its owner") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISDIR(st.st_mode):
            raise InvalidInput(f"{path} is not a directory (a symlink?)", "remove it; compass-hooks creates it itself")
        if st.st_uid != os.getuid():
            raise InvalidInput(f"{path} is owned by uid {st.st_uid}, not you ({os.getuid()})",
                               "remove it or fix its owner")
        if stat.S_IMODE(st.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    return path


def private_problems(path: Path) -> list[str]:
    """Problems that make ``path`` readable or writable by others (empty: private)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    problems = []
    if stat.S_ISLNK(st.st_mode):
        problems.append(f"{path} is a symlink")
    if st.st_uid != os.getuid():
        problems.append(f"{path} is owned by uid {st.st_uid}")
    if stat.S_IMODE(st.st_mode) & 0o077:
        problems.append(f"{path} has mode {stat.S_IMODE(st.st_mode):04o} (group/other access)")
    return problems


def dir_problem(path: str | os.PathLike) -> str | None:
    """Why a directory we are about to create or use must be refused (None: ours, or absent so we create it).
    Checked before anything waits on it: a planted ``/tmp/compass-<uid>`` must fail fast, not time out."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot stat {path}: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symlink, not a directory we created"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not you ({os.getuid()})"
    return None


# --- sockets ------------------------------------------------------------------------------------------------------

def peer_uid(sock: socket.socket) -> int:
    """The uid of the process on the other end of a connected Unix socket.

    Linux ``SO_PEERCRED``; macOS ``LOCAL_PEERCRED`` (struct xucred: version, uid, ...).
    Raises OSError where neither exists, so callers fail closed.
    """
    if hasattr(socket, "SO_PEERCRED"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1]
    if hasattr(socket, "LOCAL_PEERCRED"):  # pragma: no cover - macOS
        raw = sock.getsockopt(0, socket.LOCAL_PEERCRED, struct.calcsize("2I") + 16 * 4 + 4)
        return struct.unpack_from("2I", raw)[1]
    raise OSError("cannot read the peer's uid on this platform")  # pragma: no cover


def socket_problem(path: str | os.PathLike) -> str | None:
    """Why the socket file at ``path`` must not be trusted (None: it is ours, or absent).

    A client checks this before connecting: a socket planted by another user (e.g. in a pre-created
    ``/tmp/compass-<uid>`` fallback dir) would otherwise receive every prompt and could answer with injected
    context.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot stat {path}: {exc}"
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} is not a socket"
    uid = os.getuid()
    if st.st_uid != uid:
        return f"socket {path} is owned by uid {st.st_uid}, not you ({uid})"
    try:
        parent = os.lstat(os.path.dirname(os.path.abspath(path)) or ".")
    except OSError as exc:
        return f"cannot stat the socket dir of {path}: {exc}"
    if parent.st_uid != uid or stat.S_IMODE(parent.st_mode) & 0o022:
        return f"the socket dir of {path} is owned by uid {parent.st_uid} or writable by others"
    return None

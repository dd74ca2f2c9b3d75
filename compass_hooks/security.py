"""Shared security helpers (stdlib only).

- :func:`looks_like_instruction` flags stored text that addresses the model
  (memory poisoning would otherwise become prompt injection), and
  :func:`injectable_text` replaces such text with a neutral placeholder.
- :func:`project_key` turns a project name into a file-name-safe key: project
  names come from hook payloads and tool calls, so they are never paths.
- :func:`ensure_private_dir`, :func:`check_private` keep the data and socket dirs
  owner-only.
- :func:`peer_uid` reads the connecting process's uid from a Unix socket.
- :func:`tcp_listeners` lists the TCP ports a process listens on (from /proc),
  so tests and ``doctor`` can show there is no network listener.

Secret redaction and ``<private>`` handling live in
``compass_hooks.memory.privacy``; they are not duplicated here.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import stat
import struct
from pathlib import Path

from .errors import InvalidInput

# Phrases that only make sense as instructions *to the model* (or as forged
# conversation structure). A user's own constraint ("never push to main") is an
# instruction too, but to the agent about the work; it is not flagged. Each
# pattern is named so a flag says why.
_INSTRUCTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("override", r"\b(ignore|disregard|forget|override|bypass)\b.{0,40}\b(previous|prior|above|earlier|all|any|"
                 r"your|the|system|safety)\b.{0,30}\b(instructions?|prompts?|rules|guidelines|guardrails|"
                 r"directives|messages|context)\b"),
    ("new-instructions", r"\b(new|updated|real|actual|hidden|secret)\s+(system\s+)?(instructions|prompt|orders|directives)\b"),
    ("role-play", r"\byou\s+are\s+(now|no\s+longer)\b|\bfrom\s+now\s+on,?\s+you\b|\bact\s+as\s+(an?\s+)?"
                  r"(unrestricted|jailbroken|different)\b|\bdeveloper\s+mode\b|\bjailbreak|\bDAN\b"),
    ("system-prompt", r"\b(reveal|print|show|repeat|output|leak)\b.{0,30}\b(system\s+prompt|your\s+instructions)\b"),
    ("forged-turn", r"(^|\n)\s*(system|assistant)\s*:\s|<\|?(im_start|im_end|system|endoftext)\|?>|"
                    r"</?(system|assistant|instructions?|human)>|\[/?(INST|SYS)\]|<<SYS>>"),
    ("addresses-model", r"\b(dear\s+)?(AI|assistant|claude|LLM|language\s+model|agent)\s*[,:]\s*(you\s+)?(must|should|"
                        r"will|need\s+to|ignore|always|never|do\s+not)\b"),
    ("conceal", r"\b(do\s+not|don't|never)\s+(tell|inform|mention\s+(this\s+)?to|show|alert|warn)\s+(the\s+)?user\b|"
                r"\bwithout\s+(telling|asking|informing)\s+the\s+user\b"),
    ("exfiltrate", r"\b(curl|wget|fetch|post|send|upload|exfiltrate)\b.{0,60}\b(secrets?|credentials?|tokens?|"
                   r"api[_\s-]?keys?|passwords?|\.env|ssh|id_rsa)\b.{0,40}\b(to|https?://)"),
    ("pipe-to-shell", r"\b(curl|wget)\b[^\n|]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b"),
)
_COMPILED = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in _INSTRUCTION_PATTERNS)
# Zero-width and bidi controls hide text from a human reviewer but not from the model.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def instruction_flags(text: str) -> list[str]:
    """The names of the instruction-like patterns ``text`` matches (empty: looks like data)."""
    if not text:
        return []
    flat = _INVISIBLE.sub("", text)
    flags = [name for name, rx in _COMPILED if rx.search(flat)]
    if flat != text:
        flags.append("invisible-characters")
    if not flags:
        # The store flags text at write time with the memory module's detector (it also knows some
        # non-English phrasings); anything it flags is flagged here too, so the two never disagree
        # in the direction that matters.
        from .memory.privacy import looks_like_instructions

        if looks_like_instructions(flat):
            flags.append("instruction-pattern")
    return flags


def looks_like_instruction(text: str) -> bool:
    """True when stored text reads like instructions to the model rather than data about the work."""
    return bool(instruction_flags(text))


def injectable_text(text: str, ref: str = "") -> tuple[str, list[str]]:
    """(text safe to quote in injected context, flags). Flagged text is replaced, never passed verbatim."""
    flags = instruction_flags(text)
    if not flags:
        return text, []
    where = f" ({ref})" if ref else ""
    return (f"[withheld: this stored text reads like instructions to the model ({', '.join(flags)}); "
            f"review it with the CLI{where}]"), flags


# --- project names are keys, not paths ---------------------------------------------------------------------------

_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
MAX_PROJECT_NAME = 4096


def project_key(name: str) -> str:
    """A file-name-safe key for a project name or path: ``<slug>-<sha256[:12]>``.

    Deterministic, never contains a path separator or ``..``, and two different
    names never share a key by accident (the hash covers the full name).
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("project name is empty or not a string")
    if len(name) > MAX_PROJECT_NAME or "\x00" in name:
        raise InvalidInput("project name is too long or contains a NUL byte")
    base = name.rstrip("/\\").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    slug = _SLUG.sub("-", base).strip("-")[:40] or "project"
    return f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"


def safe_child(base: Path, name: str) -> Path:
    """``base / name`` for a single plain file name; raises InvalidInput for anything that could escape ``base``."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\x00" in name or name.startswith("~")):
        raise InvalidInput(f"not a plain file name: {name!r}")
    path = base / name
    if path.resolve().parent != base.resolve():
        raise InvalidInput(f"{name!r} resolves outside {base}")
    return path


# --- private files and dirs -------------------------------------------------------------------------------------

def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` as an owner-only (0700) directory; refuse a symlink or a dir owned by another user."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"{path} is not a directory (a symlink?)", "remove it; compass-hooks creates it itself")
    if st.st_uid != os.getuid():
        raise InvalidInput(f"{path} is owned by uid {st.st_uid}, not you ({os.getuid()})", "remove it or fix its owner")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def check_private(path: Path) -> list[str]:
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

    A client must check this before connecting: a socket planted by another user
    (e.g. in a pre-created ``/tmp/compass-<uid>`` fallback dir) would otherwise
    receive every prompt and could answer with injected context.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISSOCK(st.st_mode):
        return f"{path} is not a socket"
    if st.st_uid != os.getuid():
        return f"socket {path} is owned by uid {st.st_uid}, not you ({os.getuid()})"
    parent = os.lstat(os.path.dirname(os.path.abspath(path)) or ".")
    if parent.st_uid != os.getuid() or stat.S_IMODE(parent.st_mode) & 0o022:
        return f"the socket dir of {path} is owned by uid {parent.st_uid} or writable by others"
    return None


def _socket_inodes(pid: int) -> set[int]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _hex_addr(hexaddr: str) -> str:
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if len(raw) == 4:
        addr = socket.inet_ntop(socket.AF_INET, raw[::-1])
    else:  # /proc stores IPv6 as four little-endian 32-bit words
        addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return f"{addr}:{int(port, 16)}"


def tcp_listeners(pid: int) -> list[str]:
    """``addr:port`` of every TCP socket process ``pid`` has in LISTEN state (Linux /proc; [] elsewhere)."""
    if not Path("/proc/net/tcp").exists():
        return []
    inodes = _socket_inodes(pid)
    out = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[9]) in inodes:  # 0A = TCP_LISTEN
                out.append(_hex_addr(cols[1]))
    return sorted(out)

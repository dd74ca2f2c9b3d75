"""Building and checking the native hook client (``hooks/compass_hook_client.c``).

The binary goes next to the venv's interpreter (``<venv>/bin/compass-hook-client``),
where ``hooks/compass-hook.sh`` looks for it. It is compiled with this package's
protocol and version baked in, so a client left over from another version is
refused by the worker (it hands every hook to the Python client: slower, still
correct) and :func:`status` reports it stale. No compiler: no binary, and the
Python client does the work.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .. import PROTOCOL_VERSION, __version__
from ..errors import BuildFailed
from ..worker.hooks.fast import CLIENT_NAME

SOURCE = Path("hooks") / "compass_hook_client.c"
CFLAGS = ("-O2", "-std=c99", "-Wall", "-Wextra")


def expected_version() -> str:
    return f"{CLIENT_NAME} {__version__} protocol {PROTOCOL_VERSION}"


def default_target() -> Path:
    """Beside the interpreter running this (the venv ``compass-hook.sh`` picks)."""
    return Path(sys.prefix) / "bin" / CLIENT_NAME


def default_source() -> Path:
    from ..paths import plugin_root

    return plugin_root() / SOURCE


def find_compiler() -> str | None:
    for cand in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if cand and shutil.which(cand):
            return cand
    return None


def built_version(target: Path) -> str | None:
    try:
        out = subprocess.run([str(target), "--version"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def build(source: Path | None = None, target: Path | None = None, cc: str | None = None) -> dict[str, Any]:
    """Compile the client to ``target`` (atomically: a running hook never sees half a file)."""
    source = Path(source or default_source())
    target = Path(target or default_target())
    if not source.is_file():
        raise BuildFailed(f"no client source at {source}", "run this from a compass-hooks checkout or plugin dir")
    compiler = cc or find_compiler()
    if compiler is None:
        raise BuildFailed("no C compiler found (tried $CC, cc, gcc, clang)",
                          "install one (Debian: apt install gcc; macOS: xcode-select --install) or keep the "
                          "Python client, which does the same work more slowly")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    cmd = [compiler, *CFLAGS, f"-DCOMPASS_PROTOCOL={PROTOCOL_VERSION}", f'-DCOMPASS_VERSION="{__version__}"',
           "-o", str(tmp), str(source)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise BuildFailed(f"{compiler} exited {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-600:]}",
                              "the Python client keeps working; report the compiler output")
        got = built_version(tmp)
        if got != expected_version():
            raise BuildFailed(f"the built client reports {got!r}, expected {expected_version()!r}")
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise BuildFailed(f"compiling the client failed: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return {"target": str(target), "compiler": compiler, "version": expected_version(),
            "seconds": round(time.perf_counter() - t0, 2)}


def status(target: Path | None = None) -> dict[str, Any]:
    """Whether the client is there and matches this package (what ``doctor`` shows)."""
    target = Path(target or default_target())
    if not target.exists():
        state = "missing"
        version = None
    else:
        version = built_version(target)
        state = "ok" if version == expected_version() else "stale"
    hint = {"missing": "`compass-hook client build` makes hooks skip the Python start-up",
            "stale": "rebuild it: `compass-hook client build`", "ok": None}[state]
    disabled = os.environ.get("COMPASS_FAST_CLIENT") == "0"
    return {"state": state, "path": str(target), "version": version, "expected": expected_version(),
            "disabled_by_env": disabled, "hint": hint}

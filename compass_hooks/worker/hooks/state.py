"""The consecutive-failure streak of the hooks (``get_paths().hook_state``).

Hooks fail open silently, so a broken install would go unnoticed: after
``hooks.failures_before_notice`` failures in a row, one hook shows the user a
short ``systemMessage`` (what is wrong, how to fix it), once per streak. Any
success ends the streak. Stdlib only; the success path is one ``stat``.
"""

from __future__ import annotations

import json
import os
import time

NOTICE = ("Compass hooks are not adding context right now ({reason}); your prompts are passing through unchanged. "
          "Run `compass-hook doctor` to see what is wrong.")


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def _locked(path: str):
    import fcntl

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def record_failure(path: str, reason: str, threshold: int) -> str | None:
    """Count one failure; the notice text when this failure completes a streak of ``threshold``."""
    fd = _locked(path)
    try:
        data = _read(path)
        failures = int(data.get("failures", 0)) + 1
        notify = threshold > 0 and failures >= threshold and not data.get("notified")
        _write(path, {"failures": failures, "notified": bool(data.get("notified")) or notify,
                      "reason": reason[:300], "since": data.get("since") or time.time(), "last": time.time()})
    finally:
        os.close(fd)
    return NOTICE.format(reason=reason[:160]) if notify else None


def record_success(path: str) -> None:
    """End a failure streak (no write when there is none: the common case costs one stat)."""
    if not os.path.exists(path):
        return
    fd = _locked(path)
    try:
        os.unlink(path)
    except OSError:
        pass
    finally:
        os.close(fd)


def current(path: str) -> dict:
    return _read(path)

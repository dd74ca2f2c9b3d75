"""A clean copy of the plugin for Claude Code to install from.

Claude Code 2.1.328 copies a local-directory marketplace's plugin folder whole
into ``~/.claude/plugins/cache`` (leaving out only ``.git`` and symlinks), so a
checkout with a dev venv, build output or caches would be copied with them on
every install and update. install.sh therefore registers a staged copy instead:
``<user data dir>/plugin/compass-hooks`` holds exactly the files git tracks, plus
untracked files git does not ignore (or, outside git, everything but the
ignore list below), and ``<user data dir>/plugin/.claude-plugin/marketplace.json``
is a one-plugin marketplace named ``compass-local`` pointing at it.

Stdlib only: ``python -I -S -m compass_hooks.staging CHECKOUT DEST``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys

MARKETPLACE = "compass-local"
PLUGIN = "compass-hooks"
# Outside git: what never belongs in the plugin copy (a dev's venv, exports, build output, caches).
IGNORE = (".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache",
          ".ruff_cache", ".mypy_cache", ".compass-bench", "models/*/")


def _ignored(rel: str) -> bool:
    parts = rel.split("/")
    for pat in IGNORE:
        if pat.endswith("/"):
            if len(parts) > 2 and fnmatch.fnmatch("/".join(parts[:2]), pat.rstrip("/")):
                return True
        elif any(fnmatch.fnmatch(p, pat) for p in parts):
            return True
    return False


def plugin_files(root: str) -> list[str]:
    """Relative paths of the plugin's files (regular files only; symlinks are not copied by Claude Code either)."""
    names: list[str] | None = None
    if os.path.isdir(os.path.join(root, ".git")):
        proc = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                              capture_output=True)
        if proc.returncode == 0:
            names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    if names is None:
        names = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel_dir = os.path.relpath(dirpath, root)
            dirnames[:] = [d for d in dirnames if not _ignored(os.path.normpath(os.path.join(rel_dir, d)) + "/x")]
            names += [os.path.normpath(os.path.join(rel_dir, f)) for f in filenames]
    out = []
    for rel in sorted(set(names)):
        full = os.path.join(root, rel)
        if os.path.isfile(full) and not os.path.islink(full) and not _ignored(rel):
            out.append(rel)
    return out


def stage(root: str, dest: str) -> str:
    """Copy the plugin into ``dest/compass-hooks`` (replacing an older copy) and write the marketplace; the copy."""
    root = os.path.abspath(root)
    target = os.path.join(dest, PLUGIN)
    if os.path.realpath(root) == os.path.realpath(target):
        return target  # running from the staged copy itself
    os.makedirs(dest, mode=0o700, exist_ok=True)
    tmp = os.path.join(dest, f".{PLUGIN}.new-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    for rel in plugin_files(root):
        dst = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(root, rel), dst)
    old = os.path.join(dest, f".{PLUGIN}.old-{os.getpid()}")
    if os.path.exists(target):
        os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
    with open(os.path.join(root, ".claude-plugin", "plugin.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    market = {
        "name": MARKETPLACE,
        "owner": {"name": "compass-hooks contributors"},
        "metadata": {"description": f"compass-hooks staged by install.sh from {root}", "version": meta.get("version")},
        "plugins": [{"name": PLUGIN, "source": f"./{PLUGIN}", "description": meta.get("description", "")}],
    }
    os.makedirs(os.path.join(dest, ".claude-plugin"), exist_ok=True)
    with open(os.path.join(dest, ".claude-plugin", "marketplace.json"), "w", encoding="utf-8") as fh:
        json.dump(market, fh, indent=2)
        fh.write("\n")
    return target


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m compass_hooks.staging CHECKOUT DEST", file=sys.stderr)
        return 2
    print(stage(argv[0], argv[1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

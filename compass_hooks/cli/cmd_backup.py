"""``compass-hook backup [DEST]`` and ``compass-hook restore SRC``: the store, the audit log and what the log
covers, copied consistently and verified before anything is replaced.

A backup is a directory (0700, files 0600):

- ``compass.db``: SQLite's online backup of the store (one read snapshot, while everything keeps running);
- ``audit.log``: the log, copied while holding its writers' lock, the same lock during which the store is copied,
  so every change is in both copies or, when it was committed just before, in the store's copy as a pending
  intent that the next write logs (``audit verify`` counts it as pending, not as tampering);
- ``anchors/``, ``calibration/``, ``config.toml`` when present: the user's anchor packs and weights (audited
  too), a local drift retrain, the settings;
- ``manifest.json``: format, version, counts, the audit root and the SHA-256 of every file.

``restore`` copies the backup into the data dir beside the live files, checks the manifest's hashes and runs
``audit verify`` on the copy (the chain, the Merkle root, every memory and pack against the log), and only then
stops the worker, moves the live files aside into ``pre-restore-<time>/`` (nothing is deleted) and renames the
copy into place. Over a store that holds memories it asks first; off a terminal it needs ``--yes``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click

from . import echo_json

FORMAT = "compass-backup/1"
MANIFEST = "manifest.json"
DB = "compass.db"
LOG = "audit.log"
EXTRA = ("anchors", "calibration", "config.toml")  # copied when present (dirs: their regular files)
# What a restore moves aside and replaces in the data dir.
LIVE = (DB, f"{DB}-wal", f"{DB}-shm", LOG) + EXTRA


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _files(root: Path) -> list[str]:
    """Relative paths of the regular files under ``root`` (the manifest's list), sorted."""
    out = []
    for dirpath, _, names in os.walk(root):
        for n in names:
            full = Path(dirpath) / n
            if full.is_file() and not full.is_symlink():
                out.append(full.relative_to(root).as_posix())
    return sorted(x for x in out if x != MANIFEST)


def _copy_private(src: Path, dst: Path) -> None:
    """Copy a file or a directory's regular files, 0600 files in 0700 dirs (memories are personal)."""
    if src.is_dir():
        dst.mkdir(mode=0o700, exist_ok=True)
        for child in sorted(src.iterdir()):
            if child.is_symlink() or not (child.is_file() or child.is_dir()):
                continue
            _copy_private(child, dst / child.name)
        return
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out, open(src, "rb") as inp:
        shutil.copyfileobj(inp, out)


def _paths_at(base: Any, folder: Path) -> Any:
    """The data dir's paths with the store, the log and the user's packs in ``folder`` (what verify reads)."""
    return dataclasses.replace(base, data=folder, db=folder / DB, audit_log=folder / LOG,
                               anchors_user=folder / "anchors", config=folder / "config.toml")


def _verify(folder: Path, base: Any) -> dict[str, Any]:
    """Check a backup folder: its manifest's hashes, then ``audit verify`` over it. Raises ClickException."""
    from ..audit.verify import verify
    from ..memory.store import read_memories

    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{folder} is not a compass backup: cannot read {MANIFEST} ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or not isinstance(manifest.get("files"), dict):
        raise click.ClickException(f"{folder}/{MANIFEST} is not a {FORMAT} manifest")
    for rel, digest in manifest["files"].items():
        path = folder / rel
        if not path.is_file():
            raise click.ClickException(f"backup damaged: {rel} is missing from {folder}")
        if _sha256(path) != digest:
            raise click.ClickException(f"backup damaged: {rel} does not match the SHA-256 in its manifest")
    report = verify(_paths_at(base, folder), read_memories)
    if not report.ok:
        raise click.ClickException(f"backup fails audit verify: {report.problems[0].message} (nothing was restored)")
    return {"manifest": manifest, "audit_entries": report.entries, "audit_root": report.root,
            "memories": report.memories_checked, "pending": report.pending}


@click.command("backup")
@click.argument("dest", required=False, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")
def backup_cmd(dest: Path | None, as_json: bool) -> None:
    """Copy the store, the audit log, your anchors and config into DEST, a new directory.

    DEST defaults to ./compass-backup-YYYYmmdd-HHMMSS. The store is copied with SQLite's online backup while
    the worker keeps running; `compass-hook restore DEST` verifies and puts it back.
    """
    from ..audit.log import held
    from ..audit.verify import walk_chain
    from ..audit import merkle
    from ..memory.backup import snapshot
    from ..paths import get_paths
    from ..versions import versions

    paths = get_paths()
    dest = (dest or Path(f"compass-backup-{time.strftime('%Y%m%d-%H%M%S')}")).expanduser().absolute()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise click.ClickException(f"{dest} exists and is not an empty directory; give a new path")
    if not paths.db.is_file():
        raise click.ClickException(f"no memory store at {paths.db}: nothing to back up yet")
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    done = False
    try:
        with held(paths) as fd:  # writers wait while the store and the log are copied together
            stats = snapshot(paths.db, dest / DB)
            size = os.fstat(fd).st_size
            with open(dest / LOG, "xb") as log_out:
                os.fchmod(log_out.fileno(), 0o600)
                offset = 0
                while offset < size:
                    chunk = os.pread(fd, min(1 << 20, size - offset), offset)
                    if not chunk:
                        break
                    log_out.write(chunk)
                    offset += len(chunk)
        for name in EXTRA:
            src = paths.data / name
            if src.exists() and not src.is_symlink():
                _copy_private(src, dest / name)
        entries, _, _ = walk_chain(dest / LOG)
        manifest = {"format": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                    "compass_hooks": versions(include_export=False).get("compass-hooks"), "source": str(paths.data),
                    "memories": stats["memories"], "schema_version": stats["schema_version"],
                    "audit_entries": len(entries), "audit_root": merkle.root([e["hash"] for e in entries]),
                    "files": {rel: _sha256(dest / rel) for rel in _files(dest)}}
        fd2 = os.open(dest / MANIFEST, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd2, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=1)
            fh.write("\n")
        done = True
    finally:
        if not done:
            shutil.rmtree(dest, ignore_errors=True)
    out = {"backup": str(dest), **{k: manifest[k] for k in ("memories", "audit_entries", "audit_root")},
           "files": sorted(manifest["files"])}
    if as_json:
        echo_json(out)
    else:
        click.echo(f"backed up {manifest['memories']} memories and {manifest['audit_entries']} audit entries "
                   f"to {dest}")
        click.echo(f"restore with: compass-hook restore {dest}")


@click.command("restore")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--yes", is_flag=True, help="Replace the current store without asking (needed off a terminal).")
@click.option("--check", is_flag=True, help="Only verify the backup (manifest hashes and audit verify); change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def restore_cmd(src: Path, yes: bool, check: bool, as_json: bool) -> None:
    """Verify the backup SRC and put it in place of the current store and audit log.

    The backup is copied into the data dir and checked there first (manifest hashes, then `audit verify`);
    only then is the worker stopped and are the current files moved aside into pre-restore-<time>/ (kept, not
    deleted). Replacing a store that holds memories asks first, or needs --yes off a terminal.
    """
    from ..memory.backup import count_memories
    from ..paths import get_paths

    paths = get_paths().ensure()
    src = src.expanduser().absolute()
    stage = paths.data / f".restore-{os.getpid()}-{int(time.time())}"
    stage.mkdir(mode=0o700)
    try:
        for rel in [MANIFEST, DB, LOG, *EXTRA]:
            if (src / rel).exists() and not (src / rel).is_symlink():
                _copy_private(src / rel, stage / rel)
        checked = _verify(stage, paths)
        if check:
            out = {"backup": str(src), "ok": True, "restored": False, **{k: checked[k] for k in (
                "memories", "audit_entries", "audit_root", "pending")}}
            if as_json:
                echo_json(out)
            else:
                click.echo(f"backup OK: {checked['memories']} memories, {checked['audit_entries']} audit entries, "
                           f"root {checked['audit_root']}")
            return
        current = count_memories(paths.db)
        if current:
            if not yes and not sys.stdin.isatty():
                raise click.UsageError(f"the store {paths.db} holds {current} memories; add --yes to replace it "
                                       "(it is moved aside, not deleted)")
            if not yes:
                click.confirm(f"Replace the store holding {current} memories with the backup's "
                              f"{checked['memories']}? (the current files are kept in pre-restore-<time>/)",
                              abort=True)
        from ..worker.client import stop_worker

        stopped = stop_worker()
        if stopped.get("running"):
            raise click.ClickException(f"the worker (pid {stopped.get('pid')}) did not stop; nothing was restored")
        aside = paths.data / f"pre-restore-{time.strftime('%Y%m%d-%H%M%S')}"
        moved = []
        for name in LIVE:
            if (paths.data / name).exists() or (paths.data / name).is_symlink():
                aside.mkdir(mode=0o700, exist_ok=True)
                os.replace(paths.data / name, aside / name)
                moved.append(name)
        for name in [DB, LOG, *EXTRA]:
            if (stage / name).exists():
                os.replace(stage / name, paths.data / name)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    out = {"backup": str(src), "ok": True, "restored": True, "memories": checked["memories"],
           "audit_entries": checked["audit_entries"], "audit_root": checked["audit_root"],
           "previous": str(aside) if moved else None, "worker_stopped": bool(stopped.get("was_running"))}
    if as_json:
        echo_json(out)
        return
    click.echo(f"restored {checked['memories']} memories and {checked['audit_entries']} audit entries from {src} "
               f"(verified, root {checked['audit_root']})")
    if moved:
        click.echo(f"the previous files are in {aside}")


def register(cli: click.Group) -> None:
    cli.add_command(backup_cmd)
    cli.add_command(restore_cmd)

"""``compass-hook audit``: verify, show and prove entries of the tamper-evident audit log."""

from __future__ import annotations

import re

import click

from . import echo_json, set_exit_status


def _print_entry(e: dict) -> None:
    digest = (e.get("content_sha256") or "-")[:12]
    click.echo(f"{e['seq']:>6}  {e['time']}  {e['actor']:<6} {e['action']:<14} {e['object_type']}:{e['object_id']}"
               f"  sha256={digest}  hash={e['hash'][:12]}")


@click.group("audit")
def audit() -> None:
    """The tamper-evident audit log of every change to memories and anchors.

    Entries are hash-chained and covered by a Merkle root; `verify` recomputes
    everything and never re-baselines.
    """


@audit.command("verify")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.option("--root", "expect_root", metavar="HEX", help="A Merkle root noted earlier (from `audit show`).")
@click.option("--size", "expect_size", type=click.IntRange(min=0), metavar="N",
              help="How many entries that root covered (default: all).")
def verify_cmd(as_json: bool, expect_root: str | None, expect_size: int | None) -> None:
    """Recompute the chain, the Merkle root, every memory and pack hash.

    Exits 0 when everything matches, 1 when anything differs (naming the first
    bad entry). With --root, also proves the first N entries are unchanged
    since that root was noted.
    """
    from ..audit.verify import verify
    from ..memory.store import read_memories
    from ..paths import get_paths

    if expect_root is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", expect_root):
        raise click.UsageError("--root must be 64 hex digits (a SHA-256 from `audit show`)")
    if expect_size is not None and expect_root is None:
        raise click.UsageError("--size needs --root")
    report = verify(get_paths(), read_memories, expect_root=expect_root, expect_size=expect_size)
    set_exit_status(0 if report.ok else 1)  # also when the reader closes the pipe early (`| head -1`)
    if as_json:
        echo_json(report.as_dict())
    elif report.ok:
        click.echo(f"audit OK: {report.entries} entries, root {report.root}, "
                   f"{report.memories_checked} memories and {report.packs_checked} packs match")
        if report.pending:
            click.echo(f"{report.pending} change(s) committed just before an interruption are not in the log "
                       "yet (their intents are kept with the store): the worker writes them, or run "
                       "`compass-hook audit repair`")
    else:
        click.echo(f"audit FAILED: {report.problems[0].message}")
        for p in report.problems[1:20]:
            click.echo(f"  also: {p.message}")
        if len(report.problems) > 20:
            click.echo(f"  ... and {len(report.problems) - 20} more (see --json)")
        click.echo(f"({report.entries} valid entries of {report.lines} lines; nothing was changed)")
    if not report.ok:
        raise SystemExit(1)


@audit.command("show")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("-n", "count", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many of the latest entries to show (0 = all).")
def show_cmd(as_json: bool, count: int) -> None:
    """Show the latest entries, the log size and its Merkle root."""
    from ..audit import merkle
    from ..audit.verify import walk_chain
    from ..paths import get_paths

    paths = get_paths()
    entries, lines, problem = walk_chain(paths.audit_log)
    root = merkle.root([e["hash"] for e in entries])
    shown = entries if count == 0 else entries[-count:]
    if as_json:
        echo_json({"size": len(entries), "lines": lines, "root": root, "entries": shown,
                   "problem": problem.message if problem else None})
        return
    click.echo(f"{len(entries)} entries, Merkle root {root}")
    for e in shown:
        _print_entry(e)
    if entries:
        click.echo(f"to check later that these entries are unchanged: "
                   f"compass-hook audit verify --root {root} --size {len(entries)}")
    if problem:
        click.echo(f"warning: the log is not valid past entry {len(entries) - 1}: {problem.message} "
                   "(run `compass-hook audit verify`)")


@audit.command("proof")
@click.argument("seq", type=click.IntRange(min=0), metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def proof_cmd(seq: int, as_json: bool) -> None:
    """Print and check the Merkle inclusion proof of entry ID (its seq number)."""
    from ..audit.verify import proof
    from ..paths import get_paths

    result = proof(get_paths(), seq)
    if as_json:
        echo_json(result)
    else:
        _print_entry(result["entry"])
        click.echo(f"tree size {result['tree_size']}, root {result['root']}")
        for i, h in enumerate(result["proof"]):
            click.echo(f"  {i}: {h}")
        click.echo("proof verified" if result["verified"] else "PROOF DOES NOT VERIFY")
    if not result["verified"]:
        raise SystemExit(1)


@audit.command("seal-packs")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def seal_packs_cmd(as_json: bool) -> None:
    """Write anchors/SHA256SUMS for the shipped packs (run after changing a pack, then commit it)."""
    from ..audit.packs import SUMS_NAME, shipped_dir, write_pack_sums
    from ..paths import get_paths

    folder = shipped_dir(get_paths())
    if not folder.is_dir():
        raise click.ClickException(f"no shipped anchors folder at {folder}")
    sums = write_pack_sums(folder)
    if as_json:
        echo_json({"file": str(folder / SUMS_NAME), "packs": sums})
    else:
        click.echo(f"wrote {folder / SUMS_NAME} ({len(sums)} packs)")


def register(cli: click.Group) -> None:
    cli.add_command(audit)

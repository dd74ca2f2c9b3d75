"""``compass-hook audit repair``: record genuine gaps in the audit log as new, audited entries.

Its own module (attached to the ``audit`` group that ``cmd_audit`` registers; discovery runs in name order),
so ``audit verify``'s code and this one change independently.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from . import echo_json, set_exit_status


def _describe(plan: dict[str, Any]) -> list[str]:
    out = []
    if plan["pending"]:
        out.append(f"write {plan['pending']} pending entr{'y' if plan['pending'] == 1 else 'ies'} (changes committed "
                   "just before an interruption)")
    if plan["tail"] == "cut":
        out.append(f"move the torn last line (line {plan['tail_line']}) of the log to a side file")
    elif plan["tail"] == "newline":
        out.append("end the log's last line (a whole entry without its newline)")
    if plan["add"]:
        out.append(f"repair-add {len(plan['add'])} memor{'y' if len(plan['add']) == 1 else 'ies'} with no entry: "
                   f"{', '.join(plan['add'][:10])}{' ...' if len(plan['add']) > 10 else ''}")
    if plan["forget"]:
        out.append(f"repair-forget {len(plan['forget'])} logged memor{'y' if len(plan['forget']) == 1 else 'ies'} "
                   f"that are gone: {', '.join(plan['forget'][:10])}{' ...' if len(plan['forget']) > 10 else ''}")
    return out


@click.command("repair")
@click.option("--dry-run", is_flag=True, help="Only show what would be recorded.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--accept-modified", is_flag=True,
              help="Also record memories whose text differs from the log, or that were forgotten and are back, "
                   "as they are now (after you checked them, e.g. a restored backup).")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and the result as JSON.")
def repair_cmd(dry_run: bool, yes: bool, accept_modified: bool, as_json: bool) -> None:
    """Record genuine gaps in the audit log as new entries; never edit or remove one.

    First writes the entries of changes an interruption left pending. Then a memory
    that exists with no entry (a crash in an older version, a store restored from a
    backup) gets a `repair-add` entry, one that is logged but gone a `repair-forget`,
    and a torn last line (a crash mid-append) is moved to audit.log.torn-TIME. A
    memory whose text differs from its entry looks like tampering and is left
    reported unless you pass --accept-modified. A log edited in the middle is not
    repaired. Exits 1 when `audit verify` still fails afterwards.
    """
    from ..audit import memory_recorder
    from ..audit import repair
    from ..audit.verify import verify
    from ..errors import StoreError
    from ..memory.store import Store, integrity_problems, read_memories
    from ..paths import get_paths

    paths = get_paths()
    store = None
    if paths.db.exists():
        problems = integrity_problems(paths.db)
        if problems:
            raise StoreError(f"the memory store {paths.db} is corrupt: {problems[0]}",
                             "restore a backup or move it aside first; repair only records what a sound store holds")
        store = Store(paths.db, on_change=memory_recorder(paths))

    def read() -> tuple[dict[str, str], int]:
        if store is None:
            return {}, 0
        return {str(r["id"]): r["text"] for r in store.iter_rows()}, len(store.pending_audit())

    def flush() -> dict[str, Any]:
        return store.flush_audit(min_age=0) if store is not None else {"recorded": 0, "error": None}

    try:
        memories, pending = read()
        plan = repair.plan(paths, memories, pending).as_dict()
        steps = _describe(plan)
        left = plan["modified"] + plan["resurrected"]
        if plan["blocked"]:
            set_exit_status(1)
            if as_json:
                echo_json({"plan": plan, "done": None})
            else:
                click.echo(f"not repaired: the log itself is invalid: {plan['blocked']} (repair never rewrites "
                           "history; `compass-hook audit verify` names the first bad entry)")
            raise SystemExit(1)
        if dry_run:
            if as_json:
                echo_json({"plan": plan, "done": None})
            else:
                click.echo("would:" if steps else "nothing to repair")
                for s in steps:
                    click.echo(f"  - {s}")
                if left:
                    click.echo(f"  {'record' if accept_modified else 'not without --accept-modified:'} {len(left)} "
                               f"memories that differ from the log: {', '.join(left[:10])}")
            return
        if not yes and (steps or (left and accept_modified)):
            if not sys.stdin.isatty():
                raise click.UsageError("repair writes to the audit log: confirm with --yes (or run it in a terminal)")
            for s in steps:
                click.echo(f"  - {s}")
            if left and accept_modified:
                click.echo(f"  - record {len(left)} memories that differ from the log as they are now")
            click.confirm("Record these in the audit log?", abort=True)
        done = repair.apply(paths, read, flush, accept_modified=accept_modified)
    finally:
        if store is not None:
            store.close()
    report = verify(paths, read_memories)
    set_exit_status(0 if report.ok else 1)
    if as_json:
        echo_json({"plan": plan, "done": done, "verify": report.as_dict()})
    else:
        if done["side_file"]:
            click.echo(f"moved the torn last line to {done['side_file']}")
        elif done["tail"] == "newline":
            click.echo("ended the log's last line")
        if done["recorded_pending"]:
            click.echo(f"wrote {done['recorded_pending']} pending entries")
        for label, key in (("repair-add", "added"), ("repair-forget", "forgotten"), ("repair-edit", "accepted")):
            if done[key]:
                click.echo(f"{label}: {', '.join(done[key][:20])}{' ...' if len(done[key]) > 20 else ''}")
        if done["left"]:
            click.echo(f"left as reported (differs from the log; --accept-modified records them): "
                       f"{', '.join(done['left'][:20])}")
        click.echo(f"audit {'OK' if report.ok else 'still FAILED: ' + report.problems[0].message} "
                   f"({report.entries} entries)")
    if not report.ok:
        raise SystemExit(1)


def register(cli: click.Group) -> None:
    group = cli.commands.get("audit")
    if isinstance(group, click.Group):  # cmd_audit (discovered first: names sort) owns the group
        group.add_command(repair_cmd)

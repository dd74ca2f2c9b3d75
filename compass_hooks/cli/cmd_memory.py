"""Memory commands: remember, recall, list, recent, edit, import, export, forget, constraints.

All of them go through ``get_service()`` (the warm worker, or in process with
``COMPASS_NO_WORKER=1``). ``--project`` takes a name or a path; paths are
resolved here, against this shell's cwd, because the worker's cwd is not yours.
Without ``--project`` the project is the git top-level of the cwd; a project named with ``--project`` must
hold memories (a typo is an error naming the known projects, not an empty answer).

Batch input (``import``, ``recall --jsonl``): every bad line is reported with its
number, the good ones are kept, and the command exits 1 when any line failed.
Bulk data moves in pages of a few MB (a worker message has a 16 MiB ceiling), so
neither an export of large memories nor an import of long lines hits it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any, BinaryIO, Iterator

import click

from ..errors import CompassError, StoreError, WorkerUnavailable
from ..memory.kinds import KINDS
from . import echo_json, set_exit_status

IMPORT_BATCH = 256
# Bytes of JSON lines per import call, and the longest line taken: both well under the worker's 16 MiB
# message ceiling (a line is re-encoded into the request).
IMPORT_BATCH_BYTES = 4 * 1024 * 1024
IMPORT_MAX_LINE = 8 * 1024 * 1024
RECALL_BATCH = 64
# Results per recall call: with up to 20,000 characters a memory, a reply stays well under the ceiling.
RECALL_RESULTS_PER_CALL = 100


def _project_arg(value: str | None) -> str:
    """A project id for the service: paths resolved locally; names passed as names."""
    from ..memory.project import _looks_like_path, project_id

    if value is None:
        return project_id(os.getcwd())
    if _looks_like_path(value.strip()):
        return project_id(value.strip())
    return value.strip()


def _service():
    from ..service import get_service

    return get_service()


def _age(created: float | None) -> str:
    from ..memory.inject import age

    return age(created)


def _line(m: dict, project: bool = False) -> str:
    score = f" {m['score']:.2f}" if isinstance(m.get("score"), (int, float)) else ""
    sess = f" session {str(m['session'])[:8]}" if m.get("session") else ""
    pin = " pinned" if m.get("pinned") else ""
    tags = "".join(f" #{t}" for t in m.get("tags") or [])
    where = f" {m['project']}" if project and m.get("project") else ""
    text = " ".join(str(m.get("text", "")).split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"[{m['id']}] {m.get('kind')}{pin}{score}{tags} ({_age(m.get('created'))}{sess}{where}): {text}"


def _where(project: str | None) -> dict[str, Any]:
    """Op arguments for a --project value: a named project must hold memories (``strict_project``); without one,
    this directory's project, which may be new."""
    if project is None:
        return {"project": _project_arg(None)}
    return {"project": _project_arg(project), "strict_project": True}


def _tags(values: tuple[str, ...]) -> list[str]:
    """--tag a --tag b,c -> [a, b, c] (the store checks and normalises them)."""
    return [t for v in values for t in v.split(",") if t.strip()]


TAG_HELP = "Tag (repeatable, or comma-separated)."


@click.command("remember")
@click.argument("text", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(KINDS), help="What it is (default: detected from the text, else note).")
@click.option("--project", "project", metavar="NAME|PATH", help="Project (default: this directory's git root); 'global' for all projects.")
@click.option("--pin", is_flag=True, help="Pin it: always shown in the session brief.")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help=TAG_HELP)
@click.option("--ref", metavar="ID", help="Your own external id for it (kept verbatim).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored memory as JSON.")
def remember_cmd(text: tuple[str, ...], kind: str | None, project: str | None, pin: bool, tags: tuple[str, ...],
                 ref: str | None, as_json: bool) -> None:
    """Store TEXT as a memory (secrets redacted, <private> text dropped).

    Example: compass-hook remember --kind constraint --pin "never force-push to main"
    """
    svc = _service()
    try:
        out = svc.call("remember", text=" ".join(text), kind=kind, project=_project_arg(project), pin=pin, ref=ref,
                       source="cli", tags=_tags(tags))
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    m = out["memory"]
    verb = "remembered" if out.get("new", True) else "already remembered"
    click.echo(f"{verb} {_line(m)}")
    if m.get("redactions"):
        click.echo(f"({m['redactions']} secret(s) redacted before storing)", err=True)
    _audit_warning(out)


def _audit_warning(out: dict) -> None:
    """The write is done; only its audit entry waits (stored as an intent, written once the log can be)."""
    if out.get("audit_pending"):
        click.echo(f"warning: stored, but the audit log was not written ({out['audit_pending']}); the entry is "
                   "kept pending and written once that is fixed (`compass-hook audit verify` shows it)", err=True)


def _read_jsonl(stream: BinaryIO) -> Iterator[tuple[int, Any, str | None, int]]:
    """(line number, parsed value or None, error or None, bytes read) per non-blank line."""
    for n, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        try:
            yield n, json.loads(raw.decode("utf-8")), None, len(raw)
        except UnicodeDecodeError:
            yield n, None, "not UTF-8", len(raw)
        except ValueError as exc:
            yield n, None, f"not JSON ({getattr(exc, 'msg', exc)})", len(raw)


def _open(path: str) -> BinaryIO:
    if path == "-":
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}") from None


def _recall_k(obj: dict, default: int) -> int:
    k = obj.get("k", default)
    if k is None:
        return default
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
        raise ValueError(f'"k" must be a whole number from 1 to 100, got {json.dumps(k)[:40]}')
    return k


def _recall_jsonl(svc: Any, path: str, k: int, project: str | None, filters: dict[str, Any]) -> int:
    """Answer every line in order; returns how many lines were bad."""
    default = _project_arg(project)
    stream = _open(path)
    batch: list[dict] = []
    bad = 0

    def flush() -> None:
        if not batch:
            return
        out = svc.call("recall", queries=batch, project=default, k=k, **filters)
        for res in out["results"]:
            results = [{f: h.get(f) for f in ("id", "ref", "text", "score", "kind", "session", "created")}
                       for h in res["results"]]
            click.echo(json.dumps({"query": res["query"], "results": results}, ensure_ascii=False))
        batch.clear()

    try:
        for n, obj, err, _ in _read_jsonl(stream):
            item: dict[str, Any] = {}
            if err is None and (not isinstance(obj, dict) or not isinstance(obj.get("query"), str)
                                or not obj["query"].strip()):
                err = 'needs {"query": "..."}'
            if err is None:
                try:
                    item = {"query": obj["query"], "k": _recall_k(obj, k)}
                    if obj.get("project") is not None:
                        if not isinstance(obj["project"], str) or not obj["project"].strip():
                            raise ValueError('"project" must be a name or a path')
                        item["project"] = _project_arg(obj["project"])
                except ValueError as exc:
                    err = str(exc)
            if err:
                # Keep output aligned with input: an error line in place of the results.
                flush()
                bad += 1
                set_exit_status(1)
                click.echo(f"line {n}: {err}", err=True)
                click.echo(json.dumps({"query": obj.get("query") if isinstance(obj, dict) else None,
                                       "results": [], "error": err, "line": n}, ensure_ascii=False))
                continue
            if batch and sum(b["k"] for b in batch) + item["k"] > RECALL_RESULTS_PER_CALL:
                flush()
            batch.append(item)
            if len(batch) >= RECALL_BATCH:
                flush()
        flush()
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if bad:
        click.echo(f"{bad} bad line(s)", err=True)
    return bad


@click.command("recall")
@click.argument("query", nargs=-1)
@click.option("--project", metavar="NAME|PATH", help="Project (default: this directory's git root).")
@click.option("-k", "k", type=click.IntRange(1, 100), default=5, show_default=True, help="How many results.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only these kinds (repeatable).")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Only memories with this tag (repeatable: all of them).")
@click.option("--since", metavar="WHEN", help='Only memories from then on: a date, "yesterday", "last week", "上周".')
@click.option("--until", metavar="WHEN", help='Only memories before then (a day counts whole: "--until yesterday").')
@click.option("--min-score", type=float, default=None,
              help="Relevance floor on the meaning match (default memory.min_score, 0.35); keyword matches always count.")
@click.option("--global", "everywhere", is_flag=True, help="Search every project.")
@click.option("--jsonl", "jsonl", metavar="FILE|-",
              help='Batch: lines {"query", "project"?, "k"?} in, lines {"query", "results"} out, same order.')
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def recall_cmd(query: tuple[str, ...], project: str | None, k: int, kinds: tuple[str, ...], tags: tuple[str, ...],
               since: str | None, until: str | None, min_score: float | None, everywhere: bool,
               jsonl: str | None, as_json: bool) -> None:
    """Search memories for QUERY (keyword + meaning), best first; only relevant ones.

    A memory counts when it shares a searched word with QUERY or its meaning is close enough (--min-score), so
    a query about something never discussed finds nothing rather than the least unrelated memories.
    With --jsonl, a bad line is answered in place by an error line (and named on stderr), the others are
    answered, and the command exits 1 when any line was bad.
    """
    if jsonl and query:
        raise click.UsageError("give a QUERY or --jsonl, not both")
    if not jsonl and not query:
        raise click.UsageError("give a QUERY (or --jsonl FILE)")
    svc = _service()
    try:
        filters = {"since": since, "until": until, "tags": _tags(tags) or None, "min_score": min_score}
        if jsonl:
            if _recall_jsonl(svc, jsonl, k, project, filters):
                raise SystemExit(1)
            return
        out = svc.call("recall", query=" ".join(query), k=k, kinds=list(kinds) or None,
                       scope="global" if everywhere else "project", **filters,
                       **({} if everywhere and project is None else _where(project)))
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    if not out["memories"]:
        below = out.get("below_floor") or 0
        click.echo("nothing relevant found" + (f" ({below} weaker match{'es' if below != 1 else ''} below the "
                                                f"relevance floor {out.get('min_score')}; --min-score lowers it)"
                                                if below else ""))
    for m in out["memories"]:
        click.echo(_line(m, project=everywhere))


class _NoBar:
    """Stand-in progress bar for stdin (unknown length)."""

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int) -> None:
        return None


@click.command("import")
@click.argument("file", metavar="FILE.jsonl|-")
@click.option("--project", metavar="NAME|PATH", help="Put every line in this project (else each line's own, else global).")
@click.option("--tag", "tags", multiple=True, metavar="TAG", help="Add this tag to every imported memory (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def import_cmd(file: str, project: str | None, tags: tuple[str, ...], as_json: bool) -> None:
    """Import memories from JSONL: {"text", "ref"?, "project"?, "session"?, "role"?, "kind"?, "ts"?, "tags"?}.

    Every bad line is reported with its line number and skipped; the good lines are
    stored, and the command exits 1 when any line was bad. Lines with a ref (or a key)
    already imported into the project are counted as duplicates, so importing the
    same file again adds nothing. `export` output imports back unchanged.
    """
    proj = _project_arg(project) if project else None
    extra_tags = _tags(tags) or None
    stream = _open(file)
    total: dict[str, Any] = {"added": 0, "duplicates": 0, "errors": []}
    t0 = time.perf_counter()
    size = os.path.getsize(file) if file != "-" else 0
    svc = _service()
    pending: set[str] = set()
    try:
        batch: list[Any] = []
        lines: list[int] = []
        held = 0

        def flush() -> None:
            nonlocal held
            if not batch:
                return
            try:
                out = svc.call("import_batch", items=batch, project=proj, lines=lines, tags=extra_tags)
            except (WorkerUnavailable, StoreError) as exc:  # nothing later can work either: stop, say how far
                raise click.ClickException(
                    f"{exc} -- stopped before line {lines[0]}: {total['added']} imported so far; importing the "
                    "file again skips what is already there") from None
            except CompassError as exc:  # this batch only: its lines are named, the next batch is tried
                total["errors"].extend({"line": n, "error": exc.message} for n in lines)
            else:
                total["added"] += out["added"]
                total["duplicates"] += out["duplicates"]
                total["errors"].extend(out["errors"])
                if out.get("audit_pending"):
                    pending.add(out["audit_pending"])
            batch.clear()
            lines.clear()
            held = 0

        bar_cm = click.progressbar(length=size, label="importing", file=sys.stderr) if size else _NoBar()
        with bar_cm as bar:
            for n, obj, err, nbytes in _read_jsonl(stream):
                if err is None and nbytes > IMPORT_MAX_LINE:
                    err = (f"line is {nbytes / 1048576:.1f} MB, over the {IMPORT_MAX_LINE // 1048576} MB a line may "
                           "have (a memory keeps 20,000 characters of text)")
                if err:
                    total["errors"].append({"line": n, "error": err})
                else:
                    if batch and held + nbytes > IMPORT_BATCH_BYTES:
                        flush()
                    batch.append(obj)
                    lines.append(n)
                    held += nbytes
                if len(batch) >= IMPORT_BATCH:
                    flush()
                bar.update(nbytes)
            flush()
    finally:
        svc.close()
        if stream is not sys.stdin.buffer:
            stream.close()
    total["errors"].sort(key=lambda e: e["line"])
    total["seconds"] = round(time.perf_counter() - t0, 2)
    if total["errors"]:
        set_exit_status(1)
    if as_json:
        echo_json(total)
    else:
        for e in total["errors"]:
            click.echo(f"line {e['line']}: {e['error']}", err=True)
        click.echo(f"imported {total['added']}, duplicates {total['duplicates']}, bad lines {len(total['errors'])}"
                   f" in {total['seconds']} s")
    for why in sorted(pending):
        _audit_warning({"audit_pending": why})
    if total["errors"]:
        raise SystemExit(1)


class _AtomicFile:
    """Write ``path`` as a new 0600 file next to it and rename it into place on success: a failed or
    interrupted export leaves the target untouched, and memories are never readable by other users."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(self.path)}.", suffix=".tmp",
                                        dir=os.path.dirname(self.path))  # mkstemp creates it 0600
        self.fh = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, text: str) -> None:
        self.fh.write(text)

    def commit(self) -> None:
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        self.fh.close()
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


@click.command("export")
@click.option("--project", metavar="NAME|PATH", help="Only this project (default: every project).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write to this file (created 0600, in place only once complete; default: stdout).")
def export_cmd(project: str | None, output: str | None) -> None:
    """Print memories as JSONL that `compass-hook import` reads back losslessly.

    Memories are read in pages of a few MB, so large ones never hit the worker's message size limit.
    """
    proj = _project_arg(project) if project else None
    try:
        target = _AtomicFile(output) if output else None
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    svc = _service()
    n = 0
    done = False
    try:
        # How many there are, for the progress bar (on stderr: stdout may be the export itself). It also
        # makes a named project that holds nothing an error before anything is written.
        total = svc.call("list", project=proj, every_project=proj is None, limit=1,
                         strict_project=proj is not None)["total"]
        after = 0
        with click.progressbar(length=total, label="exporting", file=sys.stderr) as bar:
            while True:
                page = svc.call("export", project=proj, after_id=after, limit=1000)
                for row in page["rows"]:
                    line = json.dumps(row, ensure_ascii=False)
                    if target is not None:
                        target.write(line + "\n")
                    else:
                        click.echo(line)
                    n += 1
                bar.update(len(page["rows"]))
                if page["next_after"] is None:
                    break
                after = page["next_after"]
        if target is not None:
            try:
                target.commit()
            except OSError as exc:
                raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        done = True
    finally:
        svc.close()
        if target is not None and not done:
            target.abort()
    if output:
        click.echo(f"exported {n} memories to {output}", err=True)


@click.command("forget")
@click.argument("memory_id", required=False, metavar="ID")
@click.option("--project", metavar="NAME|PATH", help="Forget every memory of this project.")
@click.option("--session", metavar="SESSION_ID", help="Forget every memory of this session.")
@click.option("--yes", is_flag=True, help="Do not ask before forgetting a whole project or session.")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
def forget_cmd(memory_id: str | None, project: str | None, session: str | None, yes: bool, as_json: bool) -> None:
    """Delete a memory by ID, or all of a project or a session (vectors and search rows too)."""
    if sum(x is not None for x in (memory_id, project, session)) != 1:
        raise click.UsageError("give exactly one of: ID, --project, --session")
    args: dict[str, Any] = {"source": "cli"}
    if memory_id is not None:
        digits = memory_id.strip().lstrip("#")
        if not (digits.isascii() and digits.isdigit()):  # int() would read "٥" as 5 and forget memory 5
            raise click.BadParameter(f"{memory_id!r} is not a memory id (ASCII digits, as `recall` shows them)",
                                     param_hint="ID")
        args["id"] = int(digits)
    elif project is not None:
        args["project"] = _project_arg(project)  # forget checks it exists: "forgot 0" would read as done
    else:
        args["session"] = session
    if memory_id is None and not yes:
        what = f"project {args['project']}" if project else f"session {session}"
        if not sys.stdin.isatty():  # an agent's Bash tool, a script: nobody can answer, so nothing is deleted
            raise click.UsageError(f"forgetting every memory of {what} needs --yes when stdin is not a terminal")
        click.confirm(f"Forget every memory of {what}?", abort=True)
    svc = _service()
    try:
        out = svc.call("forget", **args)
    finally:
        svc.close()
    if as_json:
        echo_json(out)
    else:
        click.echo(f"forgot {out['removed']} memor{'y' if out['removed'] == 1 else 'ies'}")
        _audit_warning(out)


@click.command("constraints")
@click.option("--project", metavar="NAME|PATH", help="Project (default: this directory's git root).")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
def constraints_cmd(project: str | None, as_json: bool) -> None:
    """List the project's rules: pinned memories, constraints and corrections (plus global ones)."""
    svc = _service()
    try:
        out = svc.call("constraints", **_where(project))
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    if not out["constraints"]:
        click.echo(f"no constraints recorded for {out['project']}")
    for m in out["constraints"]:
        click.echo(_line(m))


def _list_options(fn):
    for opt in reversed([
        click.option("--project", metavar="NAME|PATH", help="Project (default: this directory's git root)."),
        click.option("--all-projects", "every_project", is_flag=True, help="Every project (shows each one's path)."),
        click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only these kinds (repeatable)."),
        click.option("--tag", "tags", multiple=True, metavar="TAG", help="Only memories with this tag (repeatable: all)."),
        click.option("--session", metavar="SESSION_ID", help="Only this session's memories."),
        click.option("--since", metavar="WHEN", help='From then on: a date, "yesterday", "last week", "3 days ago", "上周".'),
        click.option("--until", metavar="WHEN", help='Before then (a day counts whole: "--until yesterday").'),
        click.option("--pinned", "pinned", flag_value=True, default=None, help="Only pinned memories."),
        click.option("--offset", type=click.IntRange(min=0), default=0, help="Skip this many (paging)."),
        click.option("--oldest-first", is_flag=True, help="Oldest first instead of newest first."),
        click.option("--json", "as_json", is_flag=True, help="Print the memories as JSON."),
    ]):
        fn = opt(fn)
    return fn


def _list(project: str | None, every_project: bool, kinds: tuple[str, ...], tags: tuple[str, ...],
          session: str | None, since: str | None, until: str | None, pinned: bool | None, limit: int, offset: int,
          oldest_first: bool, as_json: bool) -> None:
    if every_project and project is not None:
        raise click.UsageError("give --project or --all-projects, not both")
    svc = _service()
    try:
        out = svc.call("list", kinds=list(kinds) or None, tags=_tags(tags) or None, session=session, since=since,
                       until=until, pinned=pinned, limit=limit, offset=offset, oldest_first=oldest_first,
                       every_project=every_project, **({} if every_project else _where(project)))
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    if not out["memories"]:
        click.echo("no memories match" + ("" if every_project else f" in {out['project']}"))
        return
    for m in out["memories"]:
        click.echo(_line(m, project=every_project))
    shown = offset + len(out["memories"])
    if shown < out["total"]:
        click.echo(f"({len(out['memories'])} of {out['total']}; --offset {shown} for more)", err=True)


@click.command("list")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True, help="How many at most.")
@_list_options
def list_cmd(limit: int, **filters: Any) -> None:
    """List memories, newest first, filtered by project, kind, tag, session and time.

    Example: compass-hook list --kind constraint --since "last week" --tag deploy
    """
    _list(limit=limit, **filters)


@click.command("recent")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True, help="How many at most.")
@_list_options
def recent_cmd(limit: int, **filters: Any) -> None:
    """The latest memories of this project (`list` with a short default limit).

    Example: compass-hook recent --since yesterday --all-projects
    """
    _list(limit=limit, **filters)


@click.command("edit")
@click.argument("memory_id", metavar="ID")
@click.option("--text", help="The new text (secrets redacted, <private> dropped; re-embedded and re-indexed).")
@click.option("--kind", type=click.Choice(KINDS), help="The new kind.")
@click.option("--pin/--unpin", "pin", default=None, help="Pin it (shown in every session brief) or unpin it.")
@click.option("--tag", "add_tags", multiple=True, metavar="TAG", help="Add a tag (repeatable, or comma-separated).")
@click.option("--untag", "remove_tags", multiple=True, metavar="TAG", help="Remove a tag (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the memory after the change as JSON.")
def edit_cmd(memory_id: str, text: str | None, kind: str | None, pin: bool | None, add_tags: tuple[str, ...],
             remove_tags: tuple[str, ...], as_json: bool) -> None:
    """Change memory ID in place: its text, kind, pin or tags (audited; the id stays).

    Example: compass-hook edit 12 --text "never force-push to main or release/*" --pin --tag git
    """
    svc = _service()
    try:
        out = svc.call("edit", id=memory_id, text=text, kind=kind, pin=pin, add_tags=_tags(add_tags) or None,
                       remove_tags=_tags(remove_tags) or None, source="cli")
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    what = ", ".join(out["changed"]) or "nothing (already so)"
    click.echo(f"edited {what}: {_line(out['memory'])}")
    _audit_warning(out)


def register(cli: click.Group) -> None:
    for cmd in (remember_cmd, recall_cmd, list_cmd, recent_cmd, edit_cmd, import_cmd, export_cmd, forget_cmd,
                constraints_cmd):
        cli.add_command(cmd)

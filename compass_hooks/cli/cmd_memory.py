"""Memory commands: remember, recall, import, export, forget, constraints.

All of them go through ``get_service()`` (the warm worker, or in process with
``COMPASS_NO_WORKER=1``). ``--project`` takes a name or a path; paths are
resolved here, against this shell's cwd, because the worker's cwd is not yours.
Without ``--project`` the project is the git top-level of the cwd.

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


def _line(m: dict) -> str:
    score = f" {m['score']:.2f}" if isinstance(m.get("score"), (int, float)) else ""
    sess = f" session {str(m['session'])[:8]}" if m.get("session") else ""
    pin = " pinned" if m.get("pinned") else ""
    text = " ".join(str(m.get("text", "")).split())
    if len(text) > 160:
        text = text[:157] + "..."
    return f"[{m['id']}] {m.get('kind')}{pin}{score} ({_age(m.get('created'))}{sess}): {text}"


@click.command("remember")
@click.argument("text", nargs=-1, required=True)
@click.option("--kind", type=click.Choice(["constraint", "decision", "correction", "note", "lesson", "prompt"]),
              help="What it is (default: detected from the text, else note).")
@click.option("--project", "project", metavar="NAME|PATH", help="Project (default: this directory's git root); 'global' for all projects.")
@click.option("--pin", is_flag=True, help="Pin it: always shown in the session brief.")
@click.option("--ref", metavar="ID", help="Your own external id for it (kept verbatim).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored memory as JSON.")
def remember_cmd(text: tuple[str, ...], kind: str | None, project: str | None, pin: bool, ref: str | None,
                 as_json: bool) -> None:
    """Store TEXT as a memory (secrets redacted, <private> text dropped).

    Example: compass-hook remember --kind constraint --pin "never force-push to main"
    """
    svc = _service()
    try:
        out = svc.call("remember", text=" ".join(text), kind=kind, project=_project_arg(project), pin=pin, ref=ref,
                       source="cli")
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


def _recall_jsonl(svc: Any, path: str, k: int, project: str | None) -> int:
    """Answer every line in order; returns how many lines were bad."""
    default = _project_arg(project)
    stream = _open(path)
    batch: list[dict] = []
    bad = 0

    def flush() -> None:
        if not batch:
            return
        out = svc.call("recall", queries=batch, project=default, k=k)
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
@click.option("--kind", "kinds", multiple=True, help="Only these kinds (repeatable).")
@click.option("--global", "everywhere", is_flag=True, help="Search every project.")
@click.option("--jsonl", "jsonl", metavar="FILE|-",
              help='Batch: lines {"query", "project"?, "k"?} in, lines {"query", "results"} out, same order.')
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def recall_cmd(query: tuple[str, ...], project: str | None, k: int, kinds: tuple[str, ...], everywhere: bool,
               jsonl: str | None, as_json: bool) -> None:
    """Search memories for QUERY (keyword + meaning), best first.

    With --jsonl, a bad line is answered in place by an error line (and named on stderr), the others are
    answered, and the command exits 1 when any line was bad.
    """
    if jsonl and query:
        raise click.UsageError("give a QUERY or --jsonl, not both")
    if not jsonl and not query:
        raise click.UsageError("give a QUERY (or --jsonl FILE)")
    svc = _service()
    try:
        if jsonl:
            if _recall_jsonl(svc, jsonl, k, project):
                raise SystemExit(1)
            return
        out = svc.call("recall", query=" ".join(query), project=_project_arg(project), k=k,
                       kinds=list(kinds) or None, scope="global" if everywhere else "project")
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    if not out["memories"]:
        click.echo("nothing found")
    for m in out["memories"]:
        click.echo(_line(m))


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
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
def import_cmd(file: str, project: str | None, as_json: bool) -> None:
    """Import memories from JSONL: {"text", "ref"?, "project"?, "session"?, "role"?, "kind"?, "ts"?}.

    Every bad line is reported with its line number and skipped; the good lines are
    stored, and the command exits 1 when any line was bad. Lines with a ref (or a key)
    already imported into the project are counted as duplicates, so importing the
    same file again adds nothing. `export` output imports back unchanged.
    """
    proj = _project_arg(project) if project else None
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
                out = svc.call("import_batch", items=batch, project=proj, lines=lines)
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
        after = 0
        while True:
            page = svc.call("export", project=proj, after_id=after, limit=1000)
            for row in page["rows"]:
                line = json.dumps(row, ensure_ascii=False)
                if target is not None:
                    target.write(line + "\n")
                else:
                    click.echo(line)
                n += 1
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
        args["project"] = _project_arg(project)
    else:
        args["session"] = session
    if memory_id is None and not yes and sys.stdin.isatty():
        what = f"project {args['project']}" if project else f"session {session}"
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
        out = svc.call("constraints", project=_project_arg(project))
    finally:
        svc.close()
    if as_json:
        echo_json(out)
        return
    if not out["constraints"]:
        click.echo(f"no constraints recorded for {out['project']}")
    for m in out["constraints"]:
        click.echo(_line(m))


def register(cli: click.Group) -> None:
    for cmd in (remember_cmd, recall_cmd, import_cmd, export_cmd, forget_cmd, constraints_cmd):
        cli.add_command(cmd)

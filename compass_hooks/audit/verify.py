"""``audit verify``: recompute the chain, the Merkle root and every audited object.

Read-only by design: verification never writes the log, the store or a pack, so
it can never re-baseline a tampered state into a trusted one. Problems in the log
itself stop the chain walk at the FIRST bad entry (everything after it is
unproven); object checks then run against the entries before it.

Pending changes: the store commits an *intent* (actor, action, id, content hash)
with every memory change and clears it once the log has the entry. An intent the
log does not cover yet (a crash, or a log that could not be written) counts as
that object's last entry, marked pending: a memory written just before a crash is
"pending", not "exists but the log has no add entry". The next worker start (or
``audit repair``) appends it. A memory whose text differs from its intent's hash
is still reported.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import merkle
from ..errors import CompassError
from .log import GENESIS, REMOVALS, REPLAY_SLACK_S, _FIELDS, entry_hash, entry_time, iter_lines, sha256_hex
from .packs import DATA_PACKS, SUMS_NAME, compute_pack_sums, data_pack_path, read_pack_sums, shipped_dir

_HEX64 = frozenset("0123456789abcdef")


@dataclass
class Problem:
    kind: str  # chain | entry | memory | pack | store
    message: str
    line: int | None = None
    seq: int | None = None
    object_id: str | None = None


@dataclass
class Report:
    entries: int = 0  # entries that passed the chain check
    lines: int = 0
    root: str = merkle.EMPTY_ROOT
    memories_checked: int = 0
    memories_text_only: int = 0  # last logged before the audit covered kind/pinned/project/flags: text only
    packs_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    memory_source: str = ""
    pending: int = 0  # memory changes committed with an intent that the log does not have yet

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "lines": self.lines,
            "root": self.root,
            "memories_checked": self.memories_checked,
            "memories_text_only": self.memories_text_only,
            "packs_checked": self.packs_checked,
            "memory_source": self.memory_source,
            "pending": self.pending,
            "first_problem": asdict(self.problems[0]) if self.problems else None,
            "problems": [asdict(p) for p in self.problems],
        }


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX64


def _entry_problem(raw: bytes, n: int, expected_seq: int, prev: str) -> tuple[dict | None, Problem | None]:
    try:
        entry = json.loads(raw)
    except ValueError:
        return None, Problem("entry", f"line {n} is not JSON (truncated or edited)", line=n)
    if not isinstance(entry, dict) or set(entry) != set(_FIELDS) | {"hash"}:
        return None, Problem("entry", f"line {n} does not have exactly the entry fields", line=n)
    seq = entry["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool):
        return None, Problem("entry", f"line {n}: seq is not an integer", line=n)
    if not _is_hex64(entry["hash"]) or entry["hash"] != entry_hash(entry):
        return None, Problem("entry", f"entry seq {seq} (line {n}) was edited: its hash does not match its content",
                             line=n, seq=seq, object_id=_oid(entry))
    if seq != expected_seq:
        what = "removed" if seq > expected_seq else "inserted or reordered"
        return None, Problem("chain", f"entry seq {seq} at line {n}, expected seq {expected_seq}: entries were {what}",
                             line=n, seq=seq, object_id=_oid(entry))
    if entry["prev"] != prev:
        return None, Problem("chain", f"entry seq {seq} (line {n}) does not chain to the entry before it "
                             "(an entry was removed, inserted or rewritten)", line=n, seq=seq, object_id=_oid(entry))
    if entry["content_sha256"] is not None and not _is_hex64(entry["content_sha256"]):
        return None, Problem("entry", f"entry seq {seq} (line {n}): content_sha256 is not a SHA-256",
                             line=n, seq=seq, object_id=_oid(entry))
    return entry, None


def _oid(entry: dict) -> str | None:
    oid = entry.get("object_id")
    return oid if isinstance(oid, str) else None


def walk_chain(path: Path) -> tuple[list[dict], int, Problem | None]:
    """The entries up to the first bad one, the number of lines, and that first problem."""
    entries: list[dict] = []
    prev = GENESIS
    n = 0
    for n, raw in iter_lines(path):
        entry, problem = _entry_problem(raw, n, len(entries), prev)
        if problem:
            return entries, _count_lines(path), problem
        assert entry is not None
        entries.append(entry)
        prev = entry["hash"]
    return entries, n, None


def _count_lines(path: Path) -> int:
    return sum(1 for _ in iter_lines(path))


def last_by_object(entries: Iterable[dict], object_type: str) -> dict[str, dict]:
    last: dict[str, dict] = {}
    for e in entries:
        if e["object_type"] == object_type:
            last[e["object_id"]] = e
    return last


def _matches(digest: str | None, value: bytes | str | tuple) -> int | None:
    """Which accepted form of ``value`` (a tuple: current format first, older ones after) hashes to ``digest``."""
    for i, form in enumerate(value if isinstance(value, tuple) else (value,)):
        if digest == sha256_hex(form):
            return i
    return None


# How an object differs from its last entry: no entry at all, forgotten but present, other content, gone unlogged.
UNLOGGED, RESURRECTED, MODIFIED, MISSING = "unlogged", "resurrected", "modified", "missing"


def object_diff(current: Mapping[str, Any], last: dict[str, dict]) -> list[tuple[str, str]]:
    """(object id, how it differs) for every object whose current state its last entry does not describe. An
    object's value is its content, or a tuple of the content forms accepted (current format first; see
    memory.audited)."""
    out: list[tuple[str, str]] = []
    for oid in sorted(current):
        entry = last.get(oid)
        if entry is None:
            out.append((oid, UNLOGGED))
        elif entry["action"] in REMOVALS:
            out.append((oid, RESURRECTED))
        elif _matches(entry["content_sha256"], current[oid]) is None:
            out.append((oid, MODIFIED))
    for oid in sorted(set(last) - set(current)):
        if last[oid]["action"] not in REMOVALS:
            out.append((oid, MISSING))
    return out


def _where(entry: dict) -> str:
    return "a pending change" if entry.get("pending") else f"seq {entry['seq']}"


def check_objects(current: Mapping[str, bytes | str], last: dict[str, dict], kind: str, label: str) -> list[Problem]:
    """Compare the objects that exist now with the last logged entry for each."""
    problems: list[Problem] = []
    for oid, how in object_diff(current, last):
        entry = last.get(oid) or {}
        seq = entry.get("seq")
        if how == UNLOGGED:
            problems.append(Problem(kind, f"{label} {oid} exists but the log has no add entry for it", object_id=oid))
        elif how == RESURRECTED:
            problems.append(Problem(kind, f"{label} {oid} was forgotten ({_where(entry)}) but still exists",
                                    seq=seq, object_id=oid))
        elif how == MODIFIED:
            problems.append(Problem(kind, f"{label} {oid} differs from its last logged hash ({_where(entry)})",
                                    seq=seq, object_id=oid))
        else:
            problems.append(Problem(kind, f"{label} {oid} is logged ({_where(entry)}) but missing: "
                                    "removed without a log entry", seq=seq, object_id=oid))
    return problems


def apply_pending(entries: list[dict], last: dict[str, dict], pending: Iterable[dict]) -> int:
    """Make each intent the log does not cover yet its object's last entry (marked ``pending``); returns how
    many. An intent is covered by an entry for the same object, action and hash written since it was made."""
    count = 0
    newest_first = list(reversed(entries))
    for intent in pending:
        oid, action, digest = str(intent["memory_id"]), intent["action"], intent.get("content_sha256")
        since = float(intent.get("created") or 0.0) - REPLAY_SLACK_S
        covered = False
        for e in newest_first:
            t = entry_time(e)
            if t is not None and t < since:
                break
            if e["object_type"] == "memory" and e["object_id"] == oid and e["action"] == action \
                    and e["content_sha256"] == digest:
                covered = True
                break
        if not covered:
            last[oid] = {"action": action, "content_sha256": digest, "seq": None, "pending": True}
            count += 1
    return count


def check_shipped_packs(folder: Path) -> tuple[int, list[Problem]]:
    sums = read_pack_sums(folder)
    actual = compute_pack_sums(folder)
    if sums is None:
        if not actual:
            return 0, []
        return len(actual), [Problem("pack", f"{folder / SUMS_NAME} is missing, so the shipped packs cannot be checked "
                                     "(run `compass-hook audit seal-packs` from a trusted checkout)")]
    problems = []
    for name in sorted(set(sums) | set(actual)):
        if name not in actual:
            problems.append(Problem("pack", f"shipped pack {name} is listed in {SUMS_NAME} but missing", object_id=name))
        elif name not in sums:
            problems.append(Problem("pack", f"shipped pack {name} is not listed in {SUMS_NAME}", object_id=name))
        elif sums[name] != actual[name]:
            problems.append(Problem("pack", f"shipped pack {name} was modified: its SHA-256 differs from {SUMS_NAME}",
                                    object_id=name))
    return len(actual), problems


def _data_packs(paths: Any) -> dict[str, bytes]:
    out = {}
    for oid in DATA_PACKS:
        p = data_pack_path(paths, oid)
        if p.is_file():
            out[oid] = p.read_bytes()
    return out


# ({id: content or the tuple of its accepted forms}, where from) or the same plus [pending intents]; raises
# CompassError when unreadable.
MemoryReader = Callable[[Any], "tuple[Any, ...]"]


# How often a check that met a write in progress is taken again before its findings are reported as they are.
CONCURRENT_RETRIES = 5


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def verify(paths: Any, memory_reader: MemoryReader, expect_root: str | None = None,
           expect_size: int | None = None) -> Report:
    """Check the log, the store and the packs. ``memory_reader(paths)`` gives the memories that exist now
    ({id: content or its accepted forms}, where from): the caller's, so the audit knows nothing of the store. ``expect_root`` (with
    ``expect_size``, default all entries) is a root the user noted earlier: the first ``expect_size`` entries
    must still hash to it.

    The worker may write while this reads. The log is read before the store, and a change is committed with its
    intent, appended to the log, and only then has its intent cleared; so a change that lands between the two
    reads either still has its intent (pending, not a problem) or has already grown the log. Findings made while
    the log grew are therefore taken again, a few times, before they are reported."""
    log = Path(paths.audit_log)
    report = Report()
    for _ in range(CONCURRENT_RETRIES):
        size = _log_size(log)
        report = _verify_once(paths, memory_reader, expect_root, expect_size)
        if report.ok or _log_size(log) == size:
            break
    return report


def _verify_once(paths: Any, memory_reader: MemoryReader, expect_root: str | None,
                 expect_size: int | None) -> Report:
    report = Report()
    entries, report.lines, chain_problem = walk_chain(Path(paths.audit_log))
    report.entries = len(entries)
    hashes = [e["hash"] for e in entries]
    report.root = merkle.root(hashes)
    if chain_problem:
        report.problems.append(chain_problem)
    if expect_root is not None:
        size = len(hashes) if expect_size is None else expect_size
        if size > len(hashes):
            report.problems.append(Problem("chain", f"the log has {len(hashes)} valid entries, fewer than the "
                                           f"{size} the expected root covers: entries were removed"))
        elif merkle.root(hashes[:size]) != expect_root.lower():
            why = ("the log was rewritten" if expect_size is not None
                   else "the log was rewritten, or it grew since (give the size the root was noted at)")
            report.problems.append(Problem("chain", f"the first {size} entries do not hash to the expected root: {why}"))
    try:
        memories, report.memory_source, *rest = memory_reader(paths)
    except CompassError as exc:  # a corrupt store: that is the finding, and no memory can be checked
        report.problems.append(Problem("store", exc.message))
    else:
        report.memories_checked = len(memories)
        last = last_by_object(entries, "memory")
        report.pending = apply_pending(entries, last, rest[0] if rest else [])
        report.problems += check_objects(memories, last, "memory", "memory")
        report.memories_text_only = sum(1 for oid, value in memories.items() if oid in last
                                        and (_matches(last[oid]["content_sha256"], value) or 0) > 0)
    n_shipped, shipped = check_shipped_packs(shipped_dir(paths))
    data_packs = _data_packs(paths)
    report.packs_checked = n_shipped + len(data_packs)
    report.problems += shipped
    report.problems += check_objects(data_packs, last_by_object(entries, "pack"), "pack", "pack")
    return report


def proof(paths: Any, seq: int) -> dict[str, Any]:
    """Inclusion proof for entry ``seq`` against the root of the whole (valid) log, checked."""
    from ..errors import NotFound, AuditError

    entries, _, problem = walk_chain(Path(paths.audit_log))
    if not 0 <= seq < len(entries):
        if problem is not None and seq >= len(entries):
            raise AuditError(f"entry {seq} is at or after the first bad entry: {problem.message}",
                             "run `compass-hook audit verify`")
        raise NotFound(f"no audit entry with seq {seq}", f"the log has entries 0..{len(entries) - 1}"
                       if entries else "the log is empty")
    hashes = [e["hash"] for e in entries]
    path = merkle.inclusion_proof(hashes, seq)
    root = merkle.root(hashes)
    return {
        "entry": entries[seq],
        "tree_size": len(hashes),
        "root": root,
        "proof": path,
        "verified": merkle.verify_inclusion(hashes[seq], seq, len(hashes), path, root),
    }

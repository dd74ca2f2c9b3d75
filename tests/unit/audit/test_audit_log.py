"""record_change: chained entries, concurrent writers, failure leaves nothing partial."""

from __future__ import annotations

import errno
import json
import multiprocessing as mp
import os
import stat

import pytest

from compass_hooks.audit import GENESIS, record_change, sha256_hex
from compass_hooks.audit.log import entry_hash
from compass_hooks.errors import AuditError, InvalidInput
from compass_hooks.paths import get_paths


def read_entries(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _add(paths, oid: str, text: str = "x", actor: str = "cli") -> dict:
    return record_change(paths, actor=actor, action="add", object_type="memory", object_id=oid, content=text)


def test_entries_are_chained_and_hashed():
    paths = get_paths().ensure()
    a = _add(paths, "m1", "use uv, not pip")
    b = record_change(paths, actor="hook", action="forget", object_type="memory", object_id="m1", content=None)
    assert a["seq"] == 0 and a["prev"] == GENESIS
    assert b["seq"] == 1 and b["prev"] == a["hash"]
    assert a["content_sha256"] == sha256_hex("use uv, not pip") and b["content_sha256"] is None
    entries = read_entries(paths.audit_log)
    assert entries == [a, b]
    assert all(e["hash"] == entry_hash(e) for e in entries)
    assert stat.S_IMODE(os.stat(paths.audit_log).st_mode) == 0o600


def test_hash_commits_to_every_field():
    paths = get_paths().ensure()
    e = _add(paths, "m1", "text")
    for key, value in [("object_id", "m2"), ("actor", "mcp"), ("seq", 5), ("content_sha256", "0" * 64), ("time", "t")]:
        assert entry_hash({**e, key: value}) != e["hash"], key


@pytest.mark.parametrize(
    "kwargs",
    [
        {"actor": "root"},
        {"action": "Add; rm"},
        {"object_type": "file"},
        {"object_id": ""},
        {"object_id": "a\nb"},
        {"content": None},  # only removals may omit the content
    ],
)
def test_bad_arguments_rejected(kwargs):
    paths = get_paths().ensure()
    args = {"actor": "cli", "action": "add", "object_type": "memory", "object_id": "m1", "content": "t", **kwargs}
    with pytest.raises(InvalidInput):
        record_change(paths, **args)
    assert not paths.audit_log.exists() or paths.audit_log.stat().st_size == 0


def _writer(home: str, worker: int, n: int) -> None:
    os.environ["COMPASS_HOME"] = home
    paths = get_paths()
    for i in range(n):
        _add(paths, f"w{worker}-{i}", f"text {worker} {i}")


def test_concurrent_processes_keep_one_chain(compass_home):
    get_paths().ensure()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(compass_home), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    entries = read_entries(get_paths().audit_log)
    assert len(entries) == 160
    assert [e["seq"] for e in entries] == list(range(160))
    prev = GENESIS
    for e in entries:
        assert e["prev"] == prev and e["hash"] == entry_hash(e)
        prev = e["hash"]
    assert {e["object_id"] for e in entries} == {f"w{w}-{i}" for w in range(4) for i in range(40)}


def test_disk_full_leaves_no_partial_line(monkeypatch):
    paths = get_paths().ensure()
    _add(paths, "m1")
    before = paths.audit_log.read_bytes()
    real_write = os.write

    def half_then_enospc(fd, data):
        real_write(fd, data[: len(data) // 2])  # the disk took half of it, then filled up
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(os, "write", half_then_enospc)
        with pytest.raises(AuditError) as info:
            _add(paths, "m2")
    assert "No space left" in str(info.value) and "free disk space" in str(info.value)
    assert paths.audit_log.read_bytes() == before
    assert _add(paths, "m3")["seq"] == 1  # the log is still usable afterwards


def test_partial_tail_is_refused_not_papered_over():
    paths = get_paths().ensure()
    _add(paths, "m1")
    with open(paths.audit_log, "ab") as f:
        f.write(b'{"seq": 1, "tru')
    with pytest.raises(AuditError, match="partial line"):
        _add(paths, "m2")


def test_tail_read_handles_long_lines():
    paths = get_paths().ensure()
    for i in range(3):
        _add(paths, "x" * 250 + str(i))
    e = _add(paths, "m-last")
    assert e["seq"] == 3
    assert json.loads(paths.audit_log.read_bytes().splitlines()[-1]) == e

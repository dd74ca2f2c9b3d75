"""audit verify: every kind of tampering is reported, naming the first bad entry; nothing is re-baselined."""

from __future__ import annotations

import dataclasses
import json

import pytest

from compass_hooks.audit import record_change, record_pack, write_pack_sums
from compass_hooks.audit.log import entry_hash
from compass_hooks.audit.verify import proof, verify
from compass_hooks.errors import NotFound
from compass_hooks.paths import get_paths


@pytest.fixture
def paths(tmp_path):
    root = tmp_path / "plugin"
    (root / "anchors").mkdir(parents=True)
    (root / "anchors" / "default.json").write_text('{"schema_version": 1, "name": "default", "anchors": []}')
    write_pack_sums(root / "anchors")
    return dataclasses.replace(get_paths().ensure(), plugin_root=root)


def _reader(memories: dict[str, str]):
    return lambda paths: (dict(memories), "test")


def _build(paths) -> dict[str, str]:
    """Three memories added, one edited, one forgotten: returns the store that matches the log."""
    for mid, text in [("m1", "use uv"), ("m2", "no force push"), ("m3", "tabs")]:
        record_change(paths, actor="cli", action="add", object_type="memory", object_id=mid, content=text)
    record_change(paths, actor="mcp", action="edit", object_type="memory", object_id="m3", content="spaces")
    record_change(paths, actor="hook", action="forget", object_type="memory", object_id="m2", content=None)
    return {"m1": "use uv", "m3": "spaces"}


def _lines(paths) -> list[str]:
    return paths.audit_log.read_text().splitlines()


def _write(paths, lines: list[str]) -> None:
    paths.audit_log.write_text("".join(line + "\n" for line in lines))


def test_consistent_state_verifies(paths):
    store = _build(paths)
    report = verify(paths, _reader(store))
    assert report.ok, report.problems
    assert report.entries == 5 and report.memories_checked == 2 and report.packs_checked == 1


def test_empty_everything_verifies(paths):
    assert verify(paths, _reader({})).ok


@pytest.mark.parametrize(
    "store, needle",
    [
        ({"m1": "use pip", "m3": "spaces"}, "memory m1 differs from its last logged hash (seq 0)"),
        ({"m1": "use uv", "m3": "tabs"}, "memory m3 differs from its last logged hash (seq 3)"),  # edit rolled back
        ({"m1": "use uv", "m3": "spaces", "m9": "planted"}, "memory m9 exists but the log has no add entry"),
        ({"m1": "use uv", "m2": "no force push", "m3": "spaces"}, "memory m2 was forgotten (seq 4) but still exists"),
        ({"m3": "spaces"}, "memory m1 is logged (seq 0) but missing"),
    ],
)
def test_store_tampering_is_reported(paths, store, needle):
    _build(paths)
    report = verify(paths, _reader(store))
    assert not report.ok
    assert [p.message for p in report.problems if needle in p.message] and needle in report.problems[0].message


def _edit_line(paths, index: int, rehash: bool) -> None:
    lines = _lines(paths)
    e = json.loads(lines[index])
    e["object_id"] = "m-evil"
    if rehash:
        e["hash"] = entry_hash(e)
    lines[index] = json.dumps(e)
    _write(paths, lines)


def test_edited_entry_is_named(paths):
    store = _build(paths)
    _edit_line(paths, 2, rehash=False)
    first = verify(paths, _reader(store)).problems[0]
    assert first.kind == "entry" and first.seq == 2 and first.line == 3 and "was edited" in first.message


def test_edited_and_rehashed_entry_breaks_the_chain_at_the_next(paths):
    store = _build(paths)
    _edit_line(paths, 1, rehash=True)
    first = verify(paths, _reader(store)).problems[0]
    assert first.kind == "chain" and first.seq == 2 and "does not chain" in first.message


def test_removed_entry_is_named(paths):
    store = _build(paths)
    lines = _lines(paths)
    del lines[1]
    _write(paths, lines)
    first = verify(paths, _reader(store)).problems[0]
    assert first.seq == 2 and first.line == 2 and "removed" in first.message


def test_inserted_entry_is_named(paths):
    store = _build(paths)
    lines = _lines(paths)
    lines.insert(2, lines[1])  # a replayed copy of a valid entry
    _write(paths, lines)
    first = verify(paths, _reader(store)).problems[0]
    assert first.line == 3 and first.seq == 1 and "inserted or reordered" in first.message


def test_reordered_entries_are_named(paths):
    store = _build(paths)
    lines = _lines(paths)
    lines[1], lines[2] = lines[2], lines[1]
    _write(paths, lines)
    first = verify(paths, _reader(store)).problems[0]
    assert first.line == 2 and first.seq == 2


def test_truncated_tail_is_named(paths):
    store = _build(paths)
    data = paths.audit_log.read_bytes()
    paths.audit_log.write_bytes(data[:-30])
    report = verify(paths, _reader(store))
    assert report.problems[0].line == 5 and "not JSON" in report.problems[0].message
    assert report.entries == 4 and report.lines == 5


def test_dropped_last_entry_is_caught_by_the_store_or_a_noted_root(paths):
    store = _build(paths)
    noted = verify(paths, _reader(store)).root
    _write(paths, _lines(paths)[:-1])  # drop the forget: the chain alone is still valid
    report = verify(paths, _reader(store))
    assert "memory m2 is logged (seq 1) but missing" in report.problems[0].message
    report = verify(paths, _reader({**store, "m2": "no force push"}), expect_root=noted, expect_size=5)
    assert len(report.problems) == 1 and "fewer than the 5" in report.problems[0].message


def test_rewritten_log_is_caught_by_a_noted_root(paths):
    store = _build(paths)
    noted = verify(paths, _reader(store)).root
    paths.audit_log.unlink()
    _build(paths)  # an attacker regenerates a fully valid log with other times
    assert verify(paths, _reader(store)).ok
    report = verify(paths, _reader(store), expect_root=noted, expect_size=5)
    assert not report.ok and "do not hash to the expected root" in report.problems[0].message


def test_verify_never_writes(paths):
    _build(paths)
    before = paths.audit_log.read_bytes()
    verify(paths, _reader({"m9": "planted"}))
    assert paths.audit_log.read_bytes() == before


def test_hand_edited_shipped_pack_is_reported(paths):
    pack = paths.plugin_root / "anchors" / "default.json"
    pack.write_text(pack.read_text().replace('"anchors": []', '"anchors": [{"id": "x"}]'))
    (paths.plugin_root / "anchors" / "extra.json").write_text("{}")
    msgs = [p.message for p in verify(paths, _reader({})).problems]
    assert msgs == [
        "shipped pack default.json was modified: its SHA-256 differs from SHA256SUMS",
        "shipped pack extra.json is not listed in SHA256SUMS",
    ]


def test_missing_sums_file_is_reported(paths):
    (paths.plugin_root / "anchors" / "SHA256SUMS").unlink()
    assert "SHA256SUMS is missing" in verify(paths, _reader({})).problems[0].message


def test_user_pack_changes_must_be_logged(paths):
    user = paths.anchors_user / "user.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('{"schema_version": 1, "name": "user", "anchors": []}')
    assert "pack user exists but the log has no add entry" in verify(paths, _reader({})).problems[0].message
    record_pack(paths, "user", actor="cli", action="anchor-add")
    assert verify(paths, _reader({})).ok
    user.write_text(user.read_text() + " ")
    assert "pack user differs from its last logged hash" in verify(paths, _reader({})).problems[0].message
    user.unlink()
    assert "pack user is logged (seq 0) but missing" in verify(paths, _reader({})).problems[0].message
    assert record_pack(paths, "user", actor="cli")["action"] == "pack-remove"
    assert verify(paths, _reader({})).ok


def test_proof_for_each_entry_and_unknown_id(paths):
    _build(paths)
    for seq in range(5):
        result = proof(paths, seq)
        assert result["verified"] and result["entry"]["seq"] == seq and result["tree_size"] == 5
    with pytest.raises(NotFound):
        proof(paths, 5)

"""Anchor packs: schema validation, user pack CLI (audited), reload on change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compass_hooks.cli import cli
from compass_hooks.drift import pack as pm
from compass_hooks.errors import AnchorPackError
from compass_hooks.paths import get_paths
import testdirs

ROOT = testdirs.ROOT


def _anchor(**kw):
    base = {"id": "x-1", "text": "Delete the failing test", "polarity": "negative", "category": "test_tampering",
            "weight": 1.0, "lang": "en"}
    base.update(kw)
    return base


def _write(tmp_path, data) -> Path:
    f = tmp_path / "pack.json"
    f.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return f


def test_shipped_packs_are_valid_and_cover_categories():
    default = pm.load_pack_file(ROOT / "anchors" / "default.json")
    cats = {a.category for a in default.anchors}
    assert set(pm.NEGATIVE_CATEGORIES) <= cats and set(pm.POSITIVE_CATEGORIES) <= cats
    assert {a.lang for a in default.anchors} == {"en", "zh", "ja", "es", "de", "fr", "pt"}
    pm.load_pack_file(ROOT / "anchors" / "infra.json")


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d.update(schema_version=2), "schema_version"),
    (lambda d: d.pop("name"), "name"),
    (lambda d: d.update(anchors={}), "anchors"),
    (lambda d: d["anchors"][0].update(polarity="bad"), "anchors[0].polarity"),
    (lambda d: d["anchors"][0].update(category="nope"), "anchors[0].category"),
    (lambda d: d["anchors"][0].update(category="verification"), "anchors[0].category"),
    (lambda d: d["anchors"][0].update(weight=-1), "anchors[0].weight"),
    (lambda d: d["anchors"][0].pop("text"), "anchors[0].text"),
    (lambda d: d["anchors"][0].update(id="bad id!"), "anchors[0].id"),
    (lambda d: d["anchors"].append(_anchor()), "anchors[1].id"),
    (lambda d: d["anchors"][0].update(extra=1), "anchors[0].extra"),
])
def test_bad_pack_names_file_and_field(tmp_path, mutate, field):
    data = {"schema_version": 1, "name": "t", "anchors": [_anchor()]}
    mutate(data)
    f = _write(tmp_path, data)
    with pytest.raises(AnchorPackError) as exc:
        pm.load_pack_file(f)
    assert str(f) in str(exc.value) and f"'{field}'" in str(exc.value)


def test_invalid_json_is_reported(tmp_path):
    f = _write(tmp_path, "{not json")
    with pytest.raises(AnchorPackError, match="json"):
        pm.load_pack_file(f)


def test_user_pack_cli_add_list_remove_is_audited(cli_runner):
    paths = get_paths()
    r = cli_runner.invoke(cli, ["anchors", "add", "Ship it without the staging check", "--polarity", "negative",
                                "--category", "bypass_checks", "--id", "mine-1"])
    assert r.exit_code == 0, r.output
    r = cli_runner.invoke(cli, ["anchors", "list", "--json"])
    data = json.loads(r.output)
    assert any(a["id"] == "mine-1" and a["pack"] == "user" for a in data["anchors"])
    assert str(pm.user_pack_path(paths)) in data["packs"]
    r = cli_runner.invoke(cli, ["anchors", "add", "dup", "--polarity", "negative", "--category", "bypass_checks", "--id", "mine-1"])
    assert r.exit_code != 0 and "already exists" in r.output
    r = cli_runner.invoke(cli, ["anchors", "add", "x", "--polarity", "negative", "--category", "verification"])
    assert r.exit_code != 0 and "category" in r.output
    assert cli_runner.invoke(cli, ["anchors", "remove", "mine-1"]).exit_code == 0
    assert cli_runner.invoke(cli, ["anchors", "remove", "mine-1"]).exit_code != 0
    entries = [json.loads(line) for line in paths.audit_log.read_text().splitlines()]
    actions = [(e["action"], e["object_type"], e["object_id"]) for e in entries]
    assert ("anchor-add", "anchor", "mine-1") in actions and ("anchor-remove", "anchor", "mine-1") in actions
    assert cli_runner.invoke(cli, ["audit", "verify"]).exit_code == 0


def test_verify_command(cli_runner, tmp_path):
    assert cli_runner.invoke(cli, ["anchors", "verify"]).exit_code == 0
    bad = _write(tmp_path, {"schema_version": 1, "name": "t", "anchors": [_anchor(polarity="?")]})
    r = cli_runner.invoke(cli, ["anchors", "verify", str(bad)])
    assert r.exit_code != 0 and "anchors[0].polarity" in r.output


def test_scorer_reembeds_on_change_and_keeps_last_good(fake_embedder):
    from compass_hooks.core import Core
    from compass_hooks.drift.scorer import get_state

    core = Core(embedder=fake_embedder)
    state = get_state(core)
    first = state.snapshot()
    assert state.snapshot() is first  # cached while nothing changes
    pm.add_user_anchor(get_paths(), "Rename every table in production tonight", "negative", "destructive_operation",
                       anchor_id="mine-2")
    second = state.snapshot()
    assert second is not first and any(a.id == "mine-2" for a in second.index.anchors)
    pm.user_pack_path(get_paths()).write_text("{broken", encoding="utf-8")
    third = state.snapshot()
    assert third is second and "user.json" in state.last_error
    assert state.score(["hello"])[0]["text"] == "hello"  # still scoring on the last good packs


def test_per_project_pack_selection(cli_runner, fake_embedder):
    from compass_hooks.core import Core
    from compass_hooks.drift.scorer import get_state

    r = cli_runner.invoke(cli, ["anchors", "use", "default", "infra", "--project", "ops-repo"])
    assert r.exit_code == 0, r.output
    assert cli_runner.invoke(cli, ["anchors", "use", "nosuchpack", "--project", "x"]).exit_code != 0
    state = get_state(Core(embedder=fake_embedder))
    packs = lambda project: {a.pack for a in state.snapshot(project).index.anchors}  # noqa: E731
    assert packs("/home/me/ops-repo") == {"default", "infra"} and packs("/home/me/web") == {"default"}
    r = cli_runner.invoke(cli, ["anchors", "list", "--json", "--project", "ops-repo"])
    assert any(p.endswith("infra.json") for p in json.loads(r.output)["packs"])
    assert cli_runner.invoke(cli, ["anchors", "use", "--clear", "--project", "ops-repo"]).exit_code == 0
    assert packs("/home/me/ops-repo") == {"default"}
    pm.projects_path(get_paths()).write_text("[]", encoding="utf-8")
    assert packs("/home/me/ops-repo") == {"default"} and "projects" in state.last_error


def test_cli_anchor_changes_reach_a_running_worker_without_a_restart(cli_runner, monkeypatch):
    """`anchors add/remove` run as drift ops in the worker (which caches anchor matrices); its next score uses them."""
    from compass_hooks.worker import client
    from worker_helpers import start_worker, stop_worker

    monkeypatch.delenv("COMPASS_NO_WORKER")
    pid = start_worker()["pid"]
    text = "Rename every table in production tonight without telling anyone"

    def nearest() -> str:
        out = client.request("score", {"texts": [text]}, socket_path=str(get_paths().socket), timeout=10)
        return out["results"][0]["anchors"][0]["id"]

    try:
        assert nearest() != "mine-w"  # scored once: the worker holds the shipped anchors
        r = cli_runner.invoke(cli, ["anchors", "add", text, "--polarity", "negative", "--category",
                                    "destructive_operation", "--id", "mine-w"])
        assert r.exit_code == 0, r.output
        assert nearest() == "mine-w"  # the anchor's own text: similarity 1
        assert cli_runner.invoke(cli, ["anchors", "remove", "mine-w"]).exit_code == 0
        assert nearest() != "mine-w"
        assert client.ping(str(get_paths().socket))["pid"] == pid  # the same worker throughout
    finally:
        stop_worker()
    entries = [json.loads(line) for line in get_paths().audit_log.read_text().splitlines()]
    assert [(e["actor"], e["action"], e["object_id"]) for e in entries if e["object_type"] == "anchor"] == [
        ("cli", "anchor-add", "mine-w"), ("cli", "anchor-remove", "mine-w")]

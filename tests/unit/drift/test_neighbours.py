"""The nearest-dev-item features (compass_hooks/drift/neighbours.py): the scorer's inverted index gives what training
computed from the dense kernel; a calibration trained with them scores with them once their index exists, and with
its head without them until then, saying so."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from compass_hooks.drift import neighbours as nbr
from compass_hooks.drift.probe import HASHED, SCALES, block_kernel, sparse_rows

TEXTS = ["drop the prod table now", "explain what DROP TABLE does", "删掉生产库", "本番のDBを消して", "ok", "",
         "git push --force origin main, no review", "thanks, that works", "borra la base de producción entera",
         "skip the tests and merge it", "run the tests again please", "¿qué hace git reset --hard?"]
LANGS = ["en", "en", "zh", "ja", "en", "en", "en", "en", "es", "en", "en", "es"]


def _rows(texts=TEXTS, langs=LANGS):
    cues = np.zeros((len(texts), 27), bool)
    cues[::3, 2] = cues[1::4, 5] = True  # some concept buckets shared, some not
    return sparse_rows(texts, langs, cues)


def test_index_cosines_equal_the_kernel_training_uses():
    rows = _rows()
    dense = sum(block_kernel(rows, k).astype(np.float64) * SCALES[k] ** 2 for k in HASHED)
    norm = np.sqrt(np.diag(dense))
    want = dense / norm[:, None] / norm[None, :]
    items, prompts = rows[:8], rows
    index = nbr.NeighbourIndex.from_rows(items, [1, 0, 1, 1, 0, 0, 1, 0])
    got = index.similarities(prompts)
    assert got.shape == (len(prompts), 8)
    assert np.allclose(got, want[:, :8], atol=1e-6)
    assert np.allclose(np.diag(got[:8]), 1.0)  # an item is its own nearest neighbour
    assert np.allclose(index.features(prompts, LANGS),
                       nbr.columns(nbr.summarise(want[:, :8], np.array([1, 0, 1, 1, 0, 0, 1, 0])), LANGS))


def test_summarise_top1_and_top5_per_class():
    y = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0])
    sim = np.array([[0.9, 0.1, 0.5, 0.4, 0.3, 0.2, 0.1, 0.0, 0.6]])
    f = nbr.summarise(sim, y)[0]
    # drift: two items only (mean of what there is); on track: top 5 of seven
    assert np.allclose(f, [0.9, 0.5, 0.6, 0.4, 0.3, 0.1])
    only_ok = nbr.summarise(sim[:, 2:], y[2:])[0]
    assert np.allclose(only_ok[:2], 0.0) and np.allclose(only_ok[4:], -only_ok[2:4])
    assert list(nbr.SUMMARY) == ["nbr_drift_top1", "nbr_drift_top5", "nbr_ok_top1", "nbr_ok_top5", "nbr_diff_top1",
                                 "nbr_diff_top5"]


def test_each_language_has_its_own_copy_of_the_summary():
    from compass_hooks.drift.lang import LANGS as ALL

    summary = np.arange(12, dtype=float).reshape(2, 6) + 1
    cols = nbr.columns(summary, ["zh", "ko"])  # ko: no dev items of its own, the shared copy only
    assert cols.shape == (2, len(nbr.FEATURES)) == (2, 6 * (1 + len(ALL)))
    assert np.array_equal(cols[:, :6], summary)
    zh = 6 + 6 * ALL.index("zh")
    assert np.array_equal(cols[0, zh:zh + 6], summary[0]) and cols[0].sum() == 2 * summary[0].sum()
    assert cols[1].sum() == summary[1].sum()
    assert nbr.FEATURES[zh] == "nbr_drift_top1_zh"


def test_index_file_round_trip(tmp_path):
    rows = _rows()
    index = nbr.NeighbourIndex.from_rows(rows, [i % 2 for i in range(len(rows))], "abc")
    path = index.save(tmp_path / "cache" / "x.npz")
    back = nbr.NeighbourIndex.load(path)
    assert back.digest == "abc" and len(back) == len(rows) and back.postings[0].dtype == np.uint16
    assert np.array_equal(back.similarities(rows), index.similarities(rows))
    assert [p.name for p in path.parent.iterdir()] == ["x.npz"]  # no temporary file left


# -- a calibration trained with the neighbour features, scored the way a user's is --------------------------------

def _dev_file(tmp_path: Path) -> Path:
    """A small labelled file: every 40th item of the shipped dev sets (both labels, several languages)."""
    from compass_hooks.drift.train import DEV_SETS, load_labelled

    rows = [it for p in DEV_SETS for it in load_labelled(p)][::40]
    path = tmp_path / "my-dev.jsonl"
    path.write_text("".join(json.dumps({"text": it["text"], "label": it["label"], "scenario": it["scenario"]},
                                       ensure_ascii=False) + "\n" for it in rows), encoding="utf-8")
    return path


@pytest.fixture
def trained(tmp_path, cli_runner, compass_home):
    """`anchors train --dev FILE` (the fake embedder): the user's own calibration, with neighbour features."""
    from compass_hooks.cli import cli

    dev = _dev_file(tmp_path)
    result = cli_runner.invoke(cli, ["anchors", "train", "--dev", str(dev), "--json"])
    assert result.exit_code == 0, result.output
    return dev, Path(json.loads(result.stdout)["file"])


def _score(texts, background=False):
    from compass_hooks.core import Core
    from compass_hooks.drift.scorer import BACKGROUND_BUILDS, get_state

    core = Core()
    if background:
        core.state[BACKGROUND_BUILDS] = True
    return core, get_state(core), get_state(core).score(texts)


def test_a_calibration_trained_with_neighbours_keeps_a_head_without_them(trained):
    from compass_hooks.drift.model import load_calibration

    dev, path = trained
    model = load_calibration(path)
    assert model.neighbours == {"files": [str(dev.resolve())], "sha256_16": model.meta["trained_on"]["sha256_16"]}
    k = len(nbr.FEATURES)
    assert model.features[-k:] == list(nbr.FEATURES) and model.uses_neighbours
    head = model.without_neighbours
    assert head is not None and not head.uses_neighbours and head.features == model.features[:-k]
    assert head.probe_w is model.probe_w and set(head.languages) == set(model.languages)
    assert model.head(True) is model and model.head(False) is head
    assert "without_neighbours" in model.meta["dev"]


def test_scored_in_process_the_index_is_built_once_and_used(trained, capfd, cli_runner):
    from compass_hooks.cli import cli

    dev, path = trained
    _, state, (res,) = _score(["drop the production database now, skip the backup"])
    assert "nearest dev items" in res["scored_by"]["parts"] and "neighbours" not in res["scored_by"]
    assert "indexing the drift dev items" in capfd.readouterr().err
    cache = list((path.parent.parent / "cache").glob("drift-neighbours-*.npz"))
    assert len(cache) == 1
    # the next process reads the file: no second build, the same score
    _, _, (again,) = _score(["drop the production database now, skip the backup"])
    assert "indexing" not in capfd.readouterr().err and again["probability"] == res["probability"]
    assert res["threshold"] == round(state.model().threshold_for(res["lang"]), 4)
    out = cli_runner.invoke(cli, ["score", "drop the production database now, skip the backup"])
    assert out.exit_code == 0 and "nearest dev items" in out.output and f"{res['probability']:.3f}" in out.output


def test_in_the_worker_the_index_is_built_by_a_process_of_its_own(trained):
    """Until the build is done the head without the features scores, and the result says so; then the full one."""
    dev, path = trained
    texts = ["drop the production database now, skip the backup", "thanks, looks good"]
    core, state, first = _score(texts, background=True)
    model = state.model()
    for r in first:
        assert "nearest dev items" not in r["scored_by"]["parts"]
        assert "being built" in r["scored_by"]["neighbours"]
        assert r["threshold"] == round(model.head(False).threshold_for(r["lang"]), 4)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = state.score(texts)
        if "nearest dev items" in now[0]["scored_by"]["parts"]:
            break
    else:
        pytest.fail("the background build did not finish in 120 s")
    _, _, in_process = _score(texts)  # the same index file, read by another process
    assert [r["probability"] for r in now] == [r["probability"] for r in in_process]
    core.close()


def test_dev_items_changed_since_training_score_without_the_features(trained, cli_runner):
    dev, path = trained
    dev.write_text(dev.read_text(encoding="utf-8").replace('"label": 1', '"label": 0', 1), encoding="utf-8")
    _, state, (res,) = _score(["drop the production database now, skip the backup"])
    assert "differ from those the calibration was trained on" in res["scored_by"]["neighbours"]
    assert "anchors train" in res["scored_by"]["neighbours"]
    from compass_hooks.cli import cli

    out = cli_runner.invoke(cli, ["score", "drop the production database now, skip the backup"])
    assert out.exit_code == 0 and "nearest dev items: not used: " in out.output
    assert res["threshold"] == round(state.model().head(False).threshold_for(res["lang"]), 4)


def test_a_build_still_running_stops_with_the_worker(tmp_path):
    """The shipped dev sets take seconds to index: closing the core (the worker's exit) stops the build, which
    leaves no file behind."""
    from compass_hooks.drift.train import DEV_SET_NAMES, load_dev

    items = load_dev()
    spec = {"files": list(DEV_SET_NAMES), "sha256_16": nbr.items_digest([it["text"] for it in items],
                                                                         [it["label"] for it in items])}
    core, state, _ = _score([], background=True)
    out = tmp_path / "cache" / "drift-neighbours-x.npz"
    state._build_in_background(out, spec)
    proc = state._nbr_build[1]
    time.sleep(1.0)
    assert proc.poll() is None
    core.close()
    assert proc.returncode is not None and proc.returncode != 0
    assert not out.exists() and not (out.parent.exists() and any(out.parent.iterdir()))


def test_a_build_whose_worker_died_writes_nothing(tmp_path):
    """A worker killed mid-build (its data dir perhaps deleted with it) gets no index file written after it."""
    import subprocess
    import sys

    from compass_hooks.drift.train import DEV_SET_NAMES, load_dev

    items = load_dev()
    spec = {"files": list(DEV_SET_NAMES), "sha256_16": nbr.items_digest([it["text"] for it in items],
                                                                         [it["label"] for it in items])}
    out = tmp_path / "cache" / "drift-neighbours-x.npz"
    pid_file = tmp_path / "builder.pid"
    parent = ("import subprocess, sys, time; p = subprocess.Popen([sys.argv[1], '-m', 'compass_hooks.drift.neighbours',"
              " sys.argv[2], sys.argv[3]]); open(sys.argv[4], 'w').write(str(p.pid)); time.sleep(1.5)")
    subprocess.run([sys.executable, "-c", parent, sys.executable, json.dumps(spec), str(out), str(pid_file)], check=True,
                   cwd=Path(nbr.__file__).resolve().parents[2])
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")

    def running() -> bool:  # gone, or a zombie nobody reaped (a container's init may not)
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 120
    while running() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(), "the orphaned build did not end"
    assert not out.exists()

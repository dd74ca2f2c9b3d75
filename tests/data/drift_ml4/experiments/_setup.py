"""What the drift experiments in this folder share: the dev sets and some labelled check files prepared as
``anchors train`` prepares the dev sets, in one kernel (the check items never join a fit), with the fold
assignments over the dev part and the probe fitted on all dev items and anchors."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
from compass_hooks.core import Core  # noqa: E402
from compass_hooks.drift import neighbours as nbr  # noqa: E402
from compass_hooks.drift import pack as pm  # noqa: E402
from compass_hooks.drift import train as tr  # noqa: E402
from compass_hooks.drift.features import AnchorIndex  # noqa: E402
from compass_hooks.embedding import get_embedder  # noqa: E402
from compass_hooks.learn.linear import fit_logistic, rates, roc_auc, sigmoid  # noqa: E402

CHECKS = {"fresh": ROOT / "tests/data/drift_fresh/fresh.jsonl", "check_r11": ROOT / "tests/data/drift_fresh/check_r11.jsonl"}


@dataclass
class Setup:
    prep: Any  # train.Prepared over dev + check items
    dev: list[dict[str, Any]]
    checks: dict[str, list[dict[str, Any]]]
    dev_idx: np.ndarray
    check_idx: np.ndarray
    y: np.ndarray
    langs: np.ndarray
    fold_sets: list[list[np.ndarray]]
    probe_check: np.ndarray  # the probe fitted on every dev item and anchor, on the check items


def prepare(files: dict[str, Path]) -> Setup:
    core = Core()
    embedder = get_embedder("minilm", core.config)
    anchors = pm.load_anchors([pm.resolve_pack(n, core.paths) for n in core.config.get("drift", "packs")
                               if n != pm.USER_PACK])
    dev = [it for p in tr.DEV_SETS for it in tr.load_labelled(p)]
    checks = {n: tr.load_labelled(p) for n, p in files.items()}
    items = dev + [it for rows in checks.values() for it in rows]
    vectors = embedder.embed([a.text for a in anchors] + [it["text"] for it in items])
    index = AnchorIndex(anchors, vectors[:len(anchors)])
    prep = tr.Prepared(embedder, index, items, int(core.config.get("drift", "top_k")), vectors=vectors[len(anchors):])
    n, nd = len(items), len(dev)
    dev_idx, check_idx = np.arange(nd), np.arange(nd, n)
    y = prep.y
    fold_sets = [[dev_idx[f] for f in tr.group_folds(y[:nd], prep.groups[:nd], tr.FOLDS, tr.SEED + r)]
                 for r in range(tr.REPEATS)]
    return Setup(prep, dev, checks, dev_idx, check_idx, y, np.asarray(prep.langs), fold_sets,
                 probe_on_checks(prep, dev_idx, check_idx, tr.LAMBDA))


def probe_on_checks(prep: Any, dev_idx: np.ndarray, check_idx: np.ndarray, lam: float) -> np.ndarray:
    """The probe (ridge penalty ``lam``) fitted on every dev item and anchor, scored on the check items."""
    y_all = np.concatenate([prep.y, prep.y_a])
    fit_rows = np.concatenate([dev_idx, np.arange(len(prep.y), len(y_all))])
    ridge = prep.solver(lam=lam)
    alpha, probe_b = ridge.fit(fit_rows, y_all[fit_rows])
    return ridge.K[np.ix_(check_idx, fit_rows)] @ alpha + probe_b


def evaluate(s: Setup, extra: Callable[[np.ndarray, np.ndarray], np.ndarray] | None, lam: float = tr.LAMBDA
             ) -> tuple[dict[str, Any], dict[str, dict[str, np.ndarray]]]:
    """Round 11's method plus ``extra(rows, among)`` columns (None: none), the way ``anchors train`` does it: out of
    fold on dev (``among`` = the other folds' items) over every fold assignment, thresholds by the shipped rule on
    the pooled out-of-fold predictions, the last logistic fitted on the first assignment's columns; then the check
    items (``among`` = every dev item); ``lam``: the probe's ridge penalty. Returns the dev figures (with
    ``pooled``: every assignment's out-of-fold probabilities, alerts and thresholds, one assignment after the
    other) and, per check file, its labels, probabilities, alerts, rule hits and languages."""
    prep, y, langs, nd = s.prep, s.y, s.langs, len(s.dev)
    logits, first_X = [], None
    for folds in s.fold_sets:
        X = prep.cross_validate(lam=lam, folds=folds, within=s.dev_idx, neighbours=False)["X"][:nd]
        if extra is not None:
            cols = [extra(f, np.setdiff1d(s.dev_idx, f)) for f in folds]
            more = np.zeros((nd, cols[0].shape[1]))
            for f, part in zip(folds, cols):
                more[f] = part
            X = np.column_stack([X, more])
        first_X = X if first_X is None else first_X
        logit = np.zeros(nd)
        for f in folds:
            rest = np.setdiff1d(s.dev_idx, f)
            mean, scale, coef, bias = fit_logistic(X[rest], y[rest], tr.L2)
            logit[f] = ((X[f] - mean) / scale) @ coef + bias
        logits.append(logit)
    shared, cal, q, alerts = tr.calibrate_languages(langs[:nd], y[:nd], np.array(logits), prep.rule_hit[:nd],
                                                    tr.TARGET_FPR)
    probe_check = s.probe_check if lam == tr.LAMBDA else probe_on_checks(prep, s.dev_idx, s.check_idx, lam)
    XC = np.column_stack([prep.feats["X"][s.check_idx], probe_check])
    if extra is not None:
        XC = np.column_stack([XC, extra(s.check_idx, s.dev_idx)])
    assert first_X is not None
    mean, scale, coef, bias = fit_logistic(first_X, y[:nd], tr.L2)
    z = ((XC - mean) / scale) @ coef + bias
    p, alert = np.zeros(len(s.check_idx)), np.zeros(len(s.check_idx), bool)
    for j, i in enumerate(s.check_idx):
        c = cal.get(str(langs[i]))
        p[j] = float(sigmoid(np.array(c.a * z[j] + c.b if c else z[j])))
        alert[j] = bool(prep.rule_hit[i]) or p[j] >= (c.threshold if c else shared)
    out, start = {}, 0
    for name, rows in s.checks.items():
        m = np.arange(start, start + len(rows))
        start += len(m)
        i = s.check_idx[m]
        out[name] = {"y": y[i], "p": p[m], "alert": alert[m], "rule_hit": prep.rule_hit[i], "langs": langs[i]}
    dev = tr.figures(s.dev, q, alerts)
    dev["pooled"] = {"p": q, "alert": alerts, "threshold": np.tile([cal[lg].threshold if lg in cal else shared
                                                                     for lg in langs[:nd]], len(s.fold_sets))}
    return dev, out


def shipped_columns(s: Setup) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``extra`` for ``evaluate``: the neighbour features as shipped (``neighbours.columns``), from the dense n-gram
    cosines (built once)."""
    s.prep.neighbour_features(s.dev_idx[:1], s.dev_idx[1:2])
    sim, y, langs = s.prep._nbr_sim, s.y, s.langs
    return lambda rows, among: nbr.columns(nbr.summarise(sim[np.ix_(rows, among)], y[among]), langs[rows])


def report(dev: dict[str, Any], checks: dict[str, dict[str, np.ndarray]]) -> dict[str, Any]:
    """One line's figures: dev AUC / TPR / FPR and AUC per language; per check file AUC / TPR / FPR and the AUC in
    Chinese, Japanese and English."""
    out: dict[str, Any] = {"dev": [dev["auc"], dev["tpr"], dev["fpr"]],
                           "dev_auc_by_language": {k: b["auc"] for k, b in dev["by_language"].items()}}
    for name, c in checks.items():
        r, lg = rates(c["y"], c["alert"]), c["langs"]
        out[name] = [round(roc_auc(c["y"], c["p"]), 4), round(r["tpr"], 3), round(r["fpr"], 3),
                     {k: round(roc_auc(c["y"][lg == k], c["p"][lg == k]), 3) for k in ("zh", "ja", "en")}]
    return out

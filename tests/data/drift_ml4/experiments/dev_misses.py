"""What the shipped method misses on dev, out of fold at the shipped rule's thresholds (docs/drift.md, "After round
12"): per category the share of drift prompts missed or on-track prompts alerted (an item counts when it does in at
least half of the fold assignments), how far below its threshold a missed prompt's probability is, and a few of each.

    .venv/bin/python tests/data/drift_ml4/experiments/dev_misses.py [--examples N]

Dev items only: the check and held-out sets are not read. About 10 minutes and 13 GB here.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

import numpy as np
from _setup import evaluate, prepare, shipped_columns


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=18, help="examples printed of each side (missed, alerted)")
    args = ap.parse_args()
    s = prepare({})
    y, nd = s.y, len(s.dev)
    dev, _ = evaluate(s, shipped_columns(s))
    pooled = dev["pooled"]
    reps = len(pooled["p"]) // nd
    alert = pooled["alert"].reshape(reps, nd).mean(0) >= 0.5
    ratio = (pooled["p"] / pooled["threshold"]).reshape(reps, nd).mean(0)
    print(f"dev AUC {dev['auc']} TPR {dev['tpr']} FPR {dev['fpr']}")
    wrong = alert != (y[:nd] == 1)
    total, bad = Counter(), Counter()
    for i, it in enumerate(s.dev):
        total[(it["label"], it["category"])] += 1
        bad[(it["label"], it["category"])] += int(wrong[i])
    for (label, cat), n in sorted(total.items(), key=lambda kv: -bad[kv[0]] / kv[1]):
        print(f"{'drift missed' if label else 'on track, alerted':18s} {cat:24s} {bad[(label, cat)]:4d} / {n:4d}"
              f"  {bad[(label, cat)] / n:.2f}")
    missed = np.flatnonzero(wrong & (y[:nd] == 1))
    q = np.quantile(ratio[missed], [0.1, 0.25, 0.5, 0.75, 0.9])
    print("missed drift, probability / threshold, deciles 1, quartiles, decile 9:", np.round(q, 2).tolist())
    rng = random.Random(0)
    for label in (1, 0):
        rows = [i for i in np.flatnonzero(wrong & (y[:nd] == label))]
        for i in rng.sample(rows, min(args.examples, len(rows))):
            it = s.dev[i]
            print(f"  {'missed' if label else 'alerted'} {it['lang']} {it['category']} {ratio[i]:.2f}  {it['text'][:160]}")


if __name__ == "__main__":
    main()

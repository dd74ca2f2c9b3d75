"""Experiment: the probe's ridge penalty (probe.LAMBDA, 1.0, chosen by dev CV when the dev set was a third of today's
and the blocks an eighth as wide) now that the nearest dev items are features, judged on dev cross-validation and the
two check sets before the held-out sets are run.

    .venv/bin/python tests/data/drift_ml4/experiments/probe_penalty.py [LAMBDA ...]

Each penalty with the shipped neighbour columns. About 5 minutes per penalty and 13 GB here.
"""

from __future__ import annotations

import json
import sys

from _setup import CHECKS, evaluate, prepare, report, shipped_columns


def main() -> None:
    penalties = [float(a) for a in sys.argv[1:]] or [0.3, 1.0, 3.0]
    s = prepare(CHECKS)
    columns = shipped_columns(s)
    for lam in penalties:
        print(lam, json.dumps(report(*evaluate(s, columns, lam=lam))), flush=True)


if __name__ == "__main__":
    main()

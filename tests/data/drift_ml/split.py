"""Split the hand-written multilingual drift prompts (this folder's <lang>.jsonl) into the dev split that ships
in the package (compass_hooks/drift/data/drift_dev_ml.jsonl, read by `anchors train`) and the held-out split
(tests/data/drift_heldout.jsonl, never read by training).

By scenario, not by sentence: every item of a scenario (paraphrases, contrast pairs) lands on the same side, so
a paraphrase of a held-out prompt is never trained on. Deterministic: within each (language, category of the
scenario's first item) group, scenarios are ordered by sha256 of their id and the first round(30 %) are held
out, so every language and category is split about 70/30. Stdlib only; `tests/unit/drift/test_drift_split.py` checks the
two files are exactly this split.

    python tests/data/drift_ml/split.py          # rewrite both files
    python tests/data/drift_ml/split.py --check  # exit 1 if they differ from the split
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import OrderedDict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
LANGS = ("en", "zh", "ja", "es", "de", "fr", "pt")
HELDOUT_SHARE = 0.30
DEV_OUT = ROOT / "compass_hooks" / "drift" / "data" / "drift_dev_ml.jsonl"
HELDOUT_OUT = ROOT / "tests" / "data" / "drift_heldout.jsonl"


def _key(scenario: str) -> str:
    return hashlib.sha256(scenario.encode()).hexdigest()


def split() -> tuple[list[dict], list[dict]]:
    dev, held = [], []
    for lang in LANGS:
        rows = [json.loads(line) for line in (HERE / f"{lang}.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
        scenarios: OrderedDict[str, list[dict]] = OrderedDict()
        for r in rows:
            scenarios.setdefault(r["scenario"], []).append(r)
        groups: dict[str, list[str]] = {}
        for sid, items in scenarios.items():
            groups.setdefault(items[0]["category"], []).append(sid)
        held_ids: set[str] = set()
        for sids in groups.values():
            ordered = sorted(sids, key=_key)
            held_ids.update(ordered[:round(HELDOUT_SHARE * len(ordered))])
        for r in rows:  # file order kept within each side
            (held if r["scenario"] in held_ids else dev).append(r)
    return dev, held


def _dump(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    dev, held = split()
    want = {DEV_OUT: _dump(dev), HELDOUT_OUT: _dump(held)}
    if "--check" in argv:
        stale = [str(p) for p, text in want.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p} is not the scenario split of {HERE}/<lang>.jsonl; run {Path(__file__).name}", file=sys.stderr)
        return 1 if stale else 0
    for p, text in want.items():
        p.write_text(text, encoding="utf-8")
        print(f"wrote {p} ({text.count(chr(10))} items)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

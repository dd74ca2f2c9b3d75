"""Standing-instruction retention: multi-turn conversations replayed through the product's real hook handlers
(``compass_hooks.worker.hooks.handlers.handle``, in process: a capture runs before the next event, as the
handlers' own wait makes it with a worker), and what Compass injected checked against the labels
(tests/data/instructions/README.md, ``retention_*.jsonl``).

Per conversation and variant, a fresh data dir (inside one throw-away folder; the embedding model is loaded
once), project (a folder with ``.git``) and session id: a rule one conversation sets for every project must
not reach another conversation's prompts, as it would in one data dir. UserPromptSubmit for every user turn,
Stop with the text of every assistant turn, then

- ``plain``: the final prompt; its ``additionalContext`` is what Compass injected with it;
- ``compact-same``: PreCompact, SessionStart(source compact) under the same session id (what Claude Code
  2.1.328 was seen to do), then the final prompt; the SessionStart brief and the final context are measured;
- ``compact-new``: PreCompact under the old id, SessionStart(compact) and the final prompt under a new id.

The baseline re-injects the last ``N`` user turns before the final prompt verbatim (newest last), cut to the
size Compass injected for that conversation's final prompt (the newest text kept), so both spend the same
characters; its unmatched size is reported too.

"Carried": every check string of the conversation (lower case) is in the injected context. Revoked and
replaced: an ``absent`` string must not be in a line of the standing-instructions block (a rule shown as in
force), unless that line carries the newer rule's checks (it may name the rule it replaces); whether it is
mentioned anywhere at all is reported too. Control: any standing-instructions block at the final prompt is a
false rule.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import shutil
import statistics
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from compass_hooks.memory.corelike import CoreLike

KINDS = ("instruction", "control", "revoked", "replaced")
VARIANTS = ("plain", "compact-same", "compact-new")
INSTRUCTIONS_HEADER = "Compass — standing instructions"
FAR_TURNS = 10


@dataclasses.dataclass
class Conversation:
    id: str
    kind: str
    lang: str
    turns: list[dict[str, str]]
    instruction_turn: int | None
    checks: list[str]
    absent: list[str]

    @property
    def final(self) -> str:
        return self.turns[-1]["text"]

    @property
    def distance(self) -> int | None:
        """User turns after the instruction, the final prompt included."""
        if self.instruction_turn is None:
            return None
        return sum(1 for t in self.turns[self.instruction_turn + 1:] if t["role"] == "user")


def load(path: Path, limit: int | None = None) -> list[Conversation]:
    from compass_hooks.errors import InvalidInput

    out = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            turns = [{"role": t["role"], "text": t["text"]} for t in row["turns"]]
            conv = Conversation(str(row["id"]), row.get("kind") or "instruction", row.get("lang") or "en", turns,
                                row.get("instruction_turn"), [c.lower() for c in row.get("checks") or []],
                                [a.lower() for a in row.get("absent") or []])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(f"{path}:{n}: not a retention conversation ({exc})") from None
        if conv.kind not in KINDS or not turns or turns[-1]["role"] != "user":
            raise InvalidInput(f"{path}:{n}: kind must be one of {', '.join(KINDS)} and the last turn a user turn")
        out.append(conv)
        if limit and len(out) >= limit:
            break
    return out


def blocks(context: str, header: str) -> str:
    """The injected blocks that start with ``header`` (blocks are separated by a blank line)."""
    return "\n\n".join(b for b in context.split("\n\n") if b.startswith(header))


def carries(text: str, checks: Sequence[str]) -> bool:
    low = text.lower()
    return bool(checks) and all(c in low for c in checks)


def mentions(text: str, absent: Sequence[str]) -> bool:
    low = text.lower()
    return any(a in low for a in absent)


def absent_active(rules_block: str, absent: Sequence[str], checks: Sequence[str]) -> bool:
    """Whether a rule shown as in force still says what was revoked or replaced. A line that carries the newer
    rule's checks is that rule, even when it names the old one ("三句话太少了，改成每个回答300字以内吧")."""
    for line in rules_block.splitlines()[1:]:
        if mentions(line, absent) and not (checks and carries(line, checks)):
            return True
    return False


def baseline(conv: Conversation, n: int, size: int | None) -> str:
    """The last ``n`` user turns before the final prompt, oldest first; cut to its last ``size`` characters."""
    users = [t["text"] for t in conv.turns[:-1] if t["role"] == "user"][-n:]
    text = "\n".join(users)
    if size is not None:
        text = text[-size:] if size > 0 else ""
    return text


class _Replay:
    """A data dir per conversation and variant, one embedder for all (loading the model is the slow part)."""

    def __init__(self, root: Path, model: str | None):
        from compass_hooks.config import load_config
        from compass_hooks.embedding import get_embedder
        from compass_hooks.embedding.cache import CachedEmbedder
        from compass_hooks.paths import get_paths

        self.base = get_paths()
        self.config = load_config(root / "no-config.toml", env={})  # the defaults, not this user's settings
        if model:
            self.config.data["model"]["name"] = model
        self.embedder = CachedEmbedder(get_embedder(config=self.config), max_items=4096)
        self.root = root
        self.core: CoreLike | None = None
        self.runs = 0
        self.clock = _dt.datetime(2026, 1, 1, tzinfo=_dt.timezone.utc)

    def fresh(self) -> None:
        from compass_hooks.core import Core

        self.close()
        self.runs += 1
        data = self.root / f"data-{self.runs}"
        data.mkdir(mode=0o700, parents=True)
        mine = self.base.data / "calibration"  # a model calibrated on this machine (drift, detector) works here too
        if mine.is_dir():
            shutil.copytree(mine, data / "calibration")
        paths = dataclasses.replace(self.base, data=data, db=data / "compass.db", audit_log=data / "audit.log",
                                    logs=data / "logs", run=data / "run", socket=data / "run" / "w.sock",
                                    anchors_user=data / "anchors", config=data / "config.toml")
        self.core = Core(paths=paths, config=self.config, embedder=self.embedder)

    def close(self) -> None:
        if self.core is not None:
            self.core.close()
            shutil.rmtree(self.core.paths.data, ignore_errors=True)
            self.core = None

    def hook(self, event: str, payload: dict[str, Any]) -> str:
        from compass_hooks.worker.hooks import handlers

        assert self.core is not None, "fresh() first"
        out = handlers.handle(self.core, event, {"hook_event_name": event, **payload})
        return out.get("additionalContext") or ""

    def _transcript(self, path: Path, session: str, turns: list[dict[str, str]]) -> None:
        """The conversation so far as Claude Code writes it (what PreCompact and SessionStart read)."""
        with path.open("w", encoding="utf-8") as f:
            for i, t in enumerate(turns):
                ts = (self.clock + _dt.timedelta(seconds=30 * i)).isoformat().replace("+00:00", "Z")
                if t["role"] == "user":
                    rec = {"type": "user", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{i}")),
                           "sessionId": session, "timestamp": ts, "message": {"role": "user", "content": t["text"]}}
                else:
                    rec = {"type": "assistant", "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{session}/{i}")),
                           "sessionId": session, "timestamp": ts,
                           "message": {"id": f"msg_{session}_{i}", "role": "assistant",
                                       "content": [{"type": "text", "text": t["text"]}]}}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def run(self, conv: Conversation, variant: str) -> dict[str, str]:
        """Replay ``conv``; the contexts Compass injected at the final prompt (and after the compaction)."""
        self.fresh()
        project = self.root / "projects" / f"{conv.id}-{variant}"
        (project / ".git").mkdir(parents=True)
        cwd = str(project)
        session = f"{conv.id}-{variant}-s1"
        transcript = project / "transcript.jsonl"
        common = {"cwd": cwd, "transcript_path": str(transcript), "permission_mode": "default"}
        for i, t in enumerate(conv.turns[:-1]):
            if t["role"] == "user":
                self.hook("UserPromptSubmit", {**common, "session_id": session, "prompt": t["text"],
                                               "prompt_id": f"p{i}"})
            else:
                self.hook("Stop", {**common, "session_id": session, "last_assistant_message": t["text"],
                                   "stop_hook_active": False})
        out: dict[str, str] = {}
        final_session = session
        if variant != "plain":
            self._transcript(transcript, session, conv.turns[:-1])
            self.hook("PreCompact", {**common, "session_id": session, "trigger": "auto", "custom_instructions": ""})
            if variant == "compact-new":
                final_session = f"{conv.id}-{variant}-s2"
                fresh = project / "transcript-2.jsonl"
                fresh.write_text("", encoding="utf-8")
                common = {**common, "transcript_path": str(fresh)}
            out["brief"] = self.hook("SessionStart", {**common, "session_id": final_session, "source": "compact"})
        out["final"] = self.hook("UserPromptSubmit", {**common, "session_id": final_session, "prompt": conv.final,
                                                      "prompt_id": f"p{len(conv.turns) - 1}"})
        return out


def _share(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 1) if values else None


def evaluate(convs: list[Conversation], root: Path, model: str | None = None, variants: Sequence[str] = VARIANTS,
             last_n: int = 4, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    replay = _Replay(root, model)
    rows: list[dict[str, Any]] = []
    try:
        for conv in convs:
            row: dict[str, Any] = {"id": conv.id, "kind": conv.kind, "lang": conv.lang, "distance": conv.distance}
            for variant in variants:
                got = replay.run(conv, variant)
                final = got["final"]
                rules = blocks(final, INSTRUCTIONS_HEADER)
                rec: dict[str, Any] = {"chars": len(final), "rules_chars": len(rules),
                                       "carried": carries(final, conv.checks),
                                       "rule_shown": bool(rules),
                                       "absent_active": absent_active(rules, conv.absent, conv.checks),
                                       "absent_anywhere": mentions(final, conv.absent)}
                if "brief" in got:
                    rec["brief_chars"] = len(got["brief"])
                    rec["brief_carried"] = carries(got["brief"], conv.checks)
                    rec["brief_absent_active"] = absent_active(blocks(got["brief"], INSTRUCTIONS_HEADER), conv.absent,
                                                               conv.checks)
                if variant == "plain":
                    matched = baseline(conv, last_n, len(final))
                    full = baseline(conv, last_n, None)
                    rec.update({"baseline_carried": carries(matched, conv.checks),
                                "baseline_full_carried": carries(full, conv.checks), "baseline_full_chars": len(full),
                                "context": final})
                row[variant] = rec
                if progress:
                    progress(1)
            rows.append(row)
        model_name = replay.embedder.name
    finally:
        replay.close()
    return summarize(rows, variants, last_n, model_name)


def summarize(rows: list[dict[str, Any]], variants: Sequence[str], last_n: int, model: str) -> dict[str, Any]:
    def sel(kind: str | None = None, far: bool | None = None) -> list[dict[str, Any]]:
        out = [r for r in rows if kind is None or r["kind"] == kind]
        if far is not None:
            out = [r for r in out if (r["distance"] or 0) >= FAR_TURNS] if far else \
                [r for r in out if (r["distance"] or 0) < FAR_TURNS]
        return out

    report: dict[str, Any] = {"model": model, "conversations": len(rows), "last_n": last_n,
                              "by_kind": {k: len(sel(k)) for k in KINDS}}
    if "plain" in variants:
        inst = sel("instruction")
        far = sel("instruction", far=True)
        report["final_prompt"] = {
            "instruction_carried": _share([r["plain"]["carried"] for r in inst]),
            "instruction_carried_far": _share([r["plain"]["carried"] for r in far]),
            "far_conversations": len(far),
            "baseline_carried": _share([r["plain"]["baseline_carried"] for r in inst]),
            "baseline_carried_far": _share([r["plain"]["baseline_carried"] for r in far]),
            "baseline_full_carried": _share([r["plain"]["baseline_full_carried"] for r in inst]),
            "baseline_full_carried_far": _share([r["plain"]["baseline_full_carried"] for r in far]),
            "baseline_full_avg_chars": _mean([r["plain"]["baseline_full_chars"] for r in rows]),
            "avg_chars": _mean([r["plain"]["chars"] for r in rows]),
            "avg_chars_by_kind": {k: _mean([r["plain"]["chars"] for r in sel(k)]) for k in KINDS},
            "avg_rules_chars_when_shown": _mean([r["plain"]["rules_chars"] for r in rows if r["plain"]["rule_shown"]]),
            "control_false_rule": _share([r["plain"]["rule_shown"] for r in sel("control")]),
            "revoked_correct": _share([not r["plain"]["absent_active"] for r in sel("revoked")]),
            "revoked_not_mentioned_at_all": _share([not r["plain"]["absent_anywhere"] for r in sel("revoked")]),
            "replaced_correct": _share([r["plain"]["carried"] and not r["plain"]["absent_active"]
                                        for r in sel("replaced")]),
            "by_lang": {lang: _share([r["plain"]["carried"] for r in inst if r["lang"] == lang])
                        for lang in sorted({r["lang"] for r in inst})},
        }
    for v in variants:
        if v == "plain":
            continue
        inst = sel("instruction")
        report[v] = {
            "brief_carried": _share([r[v]["brief_carried"] for r in inst]),
            "final_carried": _share([r[v]["carried"] for r in inst]),
            "brief_avg_chars": _mean([r[v]["brief_chars"] for r in rows]),
            "control_false_rule": _share([r[v]["rule_shown"] for r in sel("control")]),
            "revoked_correct": _share([not r[v]["absent_active"] and not r[v]["brief_absent_active"]
                                       for r in sel("revoked")]),
            "replaced_correct": _share([r[v]["carried"] and not r[v]["absent_active"] for r in sel("replaced")]),
        }
    report["failures"] = {
        "instruction_missed": [r["id"] for r in sel("instruction") if "plain" in r and not r["plain"]["carried"]],
        "control_false_rule": [r["id"] for r in sel("control") if "plain" in r and r["plain"]["rule_shown"]],
        "revoked_still_active": [r["id"] for r in sel("revoked") if "plain" in r and r["plain"]["absent_active"]],
        "replaced_wrong": [r["id"] for r in sel("replaced") if "plain" in r and
                           not (r["plain"]["carried"] and not r["plain"]["absent_active"])],
    }
    report["rows"] = rows
    return report


def format_report(r: dict[str, Any]) -> str:
    lines = [f"{r['conversations']} conversations ({', '.join(f'{k} {n}' for k, n in r['by_kind'].items())}), "
             f"model {r['model']}"]
    fp = r.get("final_prompt")
    if fp:
        lines += [
            f"final prompt carries the instruction: {fp['instruction_carried']}  (10+ user turns back: "
            f"{fp['instruction_carried_far']}, {fp['far_conversations']} conversations; by language {fp['by_lang']})",
            f"baseline, last {r['last_n']} user turns cut to the same size: {fp['baseline_carried']} "
            f"(10+ back: {fp['baseline_carried_far']}); unmatched ({fp['baseline_full_avg_chars']} chars avg): "
            f"{fp['baseline_full_carried']} (10+ back: {fp['baseline_full_carried_far']})",
            f"injected characters per final prompt: {fp['avg_chars']} avg (by kind {fp['avg_chars_by_kind']}); "
            f"instructions block when shown {fp['avg_rules_chars_when_shown']}",
            f"control conversations with a rule injected: {fp['control_false_rule']}",
            f"revoked: rule no longer active {fp['revoked_correct']} (not mentioned anywhere: "
            f"{fp['revoked_not_mentioned_at_all']}); replaced: new rule shown, old one not {fp['replaced_correct']}",
        ]
    for v in ("compact-same", "compact-new"):
        c = r.get(v)
        if c:
            lines.append(f"after compaction ({v}): brief carries it {c['brief_carried']}, final prompt "
                         f"{c['final_carried']}, brief {c['brief_avg_chars']} chars avg; control false rule "
                         f"{c['control_false_rule']}, revoked {c['revoked_correct']}, replaced {c['replaced_correct']}")
    fails = {k: v for k, v in r.get("failures", {}).items() if v}
    if fails:
        lines.append("failures: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in fails.items()))
    return "\n".join(lines)

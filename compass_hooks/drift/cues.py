"""Lexical cue families, one data file per language: ``anchors/cues/<lang>.json``.

Schema (validated on load; a bad file raises ``AnchorPackError`` naming file and field)::

    {"schema_version": 1, "lang": "es", "description"?: str,
     "families": {"<family>": ["<regex>", ...], ...}}

``<family>`` is one of ``FAMILIES`` (the feature names the calibration was trained with; a family a file leaves
out has no patterns in that language). Patterns are Python regexes, matched case-insensitively anywhere in the
prompt. ``common.json`` (``"lang": "common"``) holds language-neutral patterns (commands, flags, code) and
applies to every prompt; ``en.json`` applies to every prompt as well, since prompts in any language carry
English loanwords and identifiers ("haz un force push", "跳过 review"); each other file applies to prompts in
its language (``lang.detect``). A family fires when any pattern that applies matches.

The families describe what a request does, not which command it names: destroying data, rewriting shared
history, weakening security, bypassing review, claiming success without evidence, inventing an API or an
agreement, vouching for something unchecked. The calibration records a digest of these files
(``cues_sha256_16``): change a pattern and retrain.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path

from ..errors import AnchorPackError

SCHEMA_VERSION = 1
COMMON = "common"
# Fixed order: one calibrated feature per family.
FAMILIES = (
    # pointing towards drift
    "correction",        # the user correcting a broken instruction ("I told you ...", "again")
    "retry",             # retry loops, same mistake again
    "agreement_claim",   # an agreement or approval claimed or invented
    "fake_success",      # report / claim success, mark done
    "no_evidence",       # without running / checking / looking; "probably fine"
    "claim_check",       # the user questioning a claim: "did you actually run it?", "based on what?"
    "confabulation",     # invented API, flag, file, fact, source: "doesn't exist", "you made that up"
    "vouch",             # asking to assert a property to someone: "tell the auditor it's encrypted"
    "test_tamper",       # weakening, removing, faking tests
    "bypass",            # skipping review, hooks, checks, approvals
    "security_weaken",   # turning off authentication, verification, limits; opening access
    "destructive",       # verbs that destroy: wipe, erase, empty, nuke, throw away
    "valuable_target",   # what loses: production, customer data, backups, shared branches, uncommitted work
    "no_safety",         # no backup, no matter what, don't ask, don't bother archiving
    "history_rewrite",   # rewriting published history, moving tags, overwriting the remote
    "secret",            # credentials mentioned
    "secret_misuse",     # credentials printed, committed, pasted, stored in plain text
    "scope",             # beyond the requested scope
    "sycophancy",        # asking for agreement or praise instead of review
    "dismissive",        # whatever, later, nobody will notice
    # pointing towards on-track
    "safe_meta",         # explain, test, guard, review, dry run, confirm first
    "about_it",          # the prompt asks about the act rather than for it
    "safe_target",       # build dirs, own branch, throwaway, stale
    "good_practice",     # backup first, show me first, cite sources, honest review
    "prohibition",       # a prohibition governing a risky verb: a rule being set
    "rule_frame",        # "from now on", "always", "必须": a standing instruction
    "ack",               # a terse approval or thanks
)
# Families that drop out when a correction fires: a rule quoted inside a correction was broken (drift),
# "I told you never to force-push, you did it again" is not the user setting a rule.
RULE_FAMILIES = ("prohibition", "rule_frame")
# Which drift category each family points to (for naming an alert's category).
FAMILY_CATEGORY = {
    "correction": "forgotten_constraint", "retry": "repeated_mistake", "agreement_claim": "confabulated_agreement",
    "fake_success": "unverified_success", "no_evidence": "unverified_success", "claim_check": "unverified_success",
    "confabulation": "confabulation", "vouch": "vouch_unchecked", "test_tamper": "test_tampering",
    "bypass": "bypass_checks", "security_weaken": "bypass_checks", "destructive": "destructive_operation",
    "history_rewrite": "history_rewrite", "secret_misuse": "secrets", "scope": "scope_creep",
    "sycophancy": "sycophancy",
}


def cues_dir() -> Path:
    from ..paths import plugin_root

    return plugin_root() / "anchors" / "cues"


def _fail(path: Path, field: str, problem: str) -> AnchorPackError:
    return AnchorPackError(f"cue file {path}: field '{field}' {problem}", "fix the file (schema in docs/drift.md)")


def parse_cue_file(data: object, path: Path) -> tuple[str, dict[str, re.Pattern[str]]]:
    """(lang, {family: compiled alternation}) of one cue file; raises AnchorPackError on any schema error."""
    if not isinstance(data, dict):
        raise _fail(path, "(root)", "must be a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise _fail(path, "schema_version", f"must be {SCHEMA_VERSION}, not {data.get('schema_version')!r}")
    lang = data.get("lang")
    if not isinstance(lang, str) or not re.fullmatch(r"[a-z]{2,3}|common", lang):
        raise _fail(path, "lang", "must be an ISO 639 code or 'common'")
    if path.stem != lang:
        raise _fail(path, "lang", f"{lang!r} does not match the file name {path.name}")
    unknown = set(data) - {"schema_version", "lang", "description", "families"}
    if unknown:
        raise _fail(path, sorted(unknown)[0], "is not a known field")
    families = data.get("families")
    if not isinstance(families, dict):
        raise _fail(path, "families", "must be an object {family: [regex, ...]}")
    out: dict[str, re.Pattern[str]] = {}
    for name, patterns in families.items():
        if name not in FAMILIES:
            raise _fail(path, f"families.{name}", f"is not a known family (known: {', '.join(FAMILIES)})")
        if not isinstance(patterns, list) or not all(isinstance(p, str) and p for p in patterns):
            raise _fail(path, f"families.{name}", "must be a list of non-empty regex strings")
        for i, p in enumerate(patterns):
            try:
                re.compile(p)
            except re.error as exc:
                raise _fail(path, f"families.{name}[{i}]", f"is not a valid regex: {exc}") from None
        if patterns:
            out[name] = re.compile("|".join(f"(?:{p})" for p in patterns), re.I)
    return lang, out


def load_cue_file(path: Path) -> tuple[str, dict[str, re.Pattern[str]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnchorPackError(f"cue file {path} does not exist") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise _fail(path, "(json)", f"cannot be read as JSON: {exc}") from None
    return parse_cue_file(data, path)


class CueSet:
    """All cue files of a folder, compiled once. ``match(text, lang)`` -> one bool per family, in FAMILIES order."""

    def __init__(self, folder: Path):
        self.folder = folder
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if not any(f.stem == "en" for f in files):
            raise AnchorPackError(f"no cue files in {folder} (need at least en.json)", "reinstall the plugin")
        self.by_lang: dict[str, dict[str, re.Pattern[str]]] = {}
        h = hashlib.sha256()
        for f in files:
            lang, fams = load_cue_file(f)
            self.by_lang[lang] = fams
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        self.digest = h.hexdigest()[:16]
        self.langs = tuple(sorted(k for k in self.by_lang if k != COMMON))
        # Per prompt language: the patterns that apply, as one list per family (common, English, own).
        self._plans: dict[str, list[tuple[re.Pattern[str], ...]]] = {}

    def _plan(self, lang: str) -> list[tuple[re.Pattern[str], ...]]:
        plan = self._plans.get(lang)
        if plan is None:
            sources = [self.by_lang.get(COMMON, {}), self.by_lang.get("en", {})]
            if lang != "en" and lang in self.by_lang:
                sources.append(self.by_lang[lang])
            plan = [tuple(src[f] for src in sources if f in src) for f in FAMILIES]
            self._plans[lang] = plan
        return plan

    def match(self, text: str, lang: str) -> list[bool]:
        return [any(rx.search(text) for rx in rxs) for rxs in self._plan(lang)]


_lock = threading.Lock()
_loaded: dict[Path, CueSet] = {}


def get_cues(folder: Path | None = None) -> CueSet:
    """The shipped cue set (loaded once per process; the files are part of the plugin, like the calibration)."""
    folder = folder or cues_dir()
    with _lock:
        cs = _loaded.get(folder)
        if cs is None:
            cs = _loaded[folder] = CueSet(folder)
        return cs

"""Anchor packs: the JSON schema, loading and validation.

A pack file is ``{"schema_version": 1, "name": str, "description"?: str,
"anchors": [{"id", "text", "polarity", "category", "weight", "lang"}]}``.
Shipped packs live in ``<plugin root>/anchors/<name>.json``; the user pack in
``<data>/anchors/user.json``; tuned weights (``anchors tune``) in
``<data>/anchors/weights.json`` as ``{"schema_version": 1, "weights": {id: w}}``.
Stdlib only, so listing and verifying packs needs no model.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from ..errors import AnchorPackError, NotFound
from ..paths import Paths

SCHEMA_VERSION = 1
POLARITIES = ("positive", "negative")
NEGATIVE_CATEGORIES = (
    "forgotten_constraint", "repeated_mistake", "confabulated_agreement", "unverified_success",
    "test_tampering", "bypass_checks", "destructive_operation", "secrets", "scope_creep", "sycophancy",
    "history_rewrite", "confabulation", "vouch_unchecked",
)
POSITIVE_CATEGORIES = (
    "verification", "ask_before_risk", "small_reversible", "tests_first", "follow_constraints",
    "ordinary_task", "explain_safely",
)
CATEGORIES = NEGATIVE_CATEGORIES + POSITIVE_CATEGORIES
# Plain words for the injected block and the CLI.
CATEGORY_WORDS = {
    "forgotten_constraint": "a correction about a forgotten constraint",
    "repeated_mistake": "a repeated mistake",
    "confabulated_agreement": "an agreement or approval that may not exist",
    "unverified_success": "claiming success without verification",
    "test_tampering": "weakening or removing tests",
    "bypass_checks": "bypassing checks or review",
    "destructive_operation": "a destructive or irreversible operation",
    "secrets": "secrets or credentials in code or text",
    "scope_creep": "work beyond the requested scope",
    "sycophancy": "asking for agreement instead of review",
    "history_rewrite": "rewriting history others already have",
    "confabulation": "an invented API, fact or source",
    "vouch_unchecked": "vouching for something nobody checked",
}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")
USER_PACK = "user"


@dataclass(frozen=True)
class Anchor:
    id: str
    text: str
    polarity: str
    category: str
    weight: float
    lang: str
    pack: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Pack:
    name: str
    path: Path
    anchors: tuple[Anchor, ...]
    description: str = ""


def _fail(path: Path, field: str, problem: str) -> AnchorPackError:
    return AnchorPackError(f"anchor pack {path}: field '{field}' {problem}", "fix the file; the last good packs stay in use")


def validate_anchor(raw: Any, path: Path, where: str, pack: str) -> Anchor:
    if not isinstance(raw, dict):
        raise _fail(path, where, "must be an object")
    for key in ("id", "text", "polarity", "category", "lang"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise _fail(path, f"{where}.{key}", "is missing or not a non-empty string")
    if not _ID.match(raw["id"]):
        raise _fail(path, f"{where}.id", f"{raw['id']!r} is not a valid id (letters, digits, _ . : -)")
    if raw["polarity"] not in POLARITIES:
        raise _fail(path, f"{where}.polarity", f"must be one of {', '.join(POLARITIES)}, not {raw['polarity']!r}")
    if raw["category"] not in CATEGORIES:
        raise _fail(path, f"{where}.category", f"unknown category {raw['category']!r} (known: {', '.join(CATEGORIES)})")
    wanted = NEGATIVE_CATEGORIES if raw["polarity"] == "negative" else POSITIVE_CATEGORIES
    if raw["category"] not in wanted:
        raise _fail(path, f"{where}.category", f"{raw['category']!r} is not a {raw['polarity']} category")
    weight = raw.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (0 < float(weight) <= 10):
        raise _fail(path, f"{where}.weight", "must be a number in (0, 10]")
    if len(raw["text"]) > 500:
        raise _fail(path, f"{where}.text", "is longer than 500 characters")
    unknown = set(raw) - {"id", "text", "polarity", "category", "weight", "lang"}
    if unknown:
        raise _fail(path, f"{where}.{sorted(unknown)[0]}", "is not a known anchor field")
    return Anchor(raw["id"], raw["text"].strip(), raw["polarity"], raw["category"], float(weight), raw["lang"], pack)


def parse_pack(data: Any, path: Path) -> Pack:
    if not isinstance(data, dict):
        raise _fail(path, "(root)", "must be a JSON object")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise _fail(path, "schema_version", f"must be {SCHEMA_VERSION}, not {data.get('schema_version')!r}")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(path, "name", "is missing or not a string")
    anchors = data.get("anchors")
    if not isinstance(anchors, list):
        raise _fail(path, "anchors", "must be a list")
    out, seen = [], set()
    for i, raw in enumerate(anchors):
        anchor = validate_anchor(raw, path, f"anchors[{i}]", name)
        if anchor.id in seen:
            raise _fail(path, f"anchors[{i}].id", f"duplicate id {anchor.id!r}")
        seen.add(anchor.id)
        out.append(anchor)
    return Pack(name, path, tuple(out), str(data.get("description", "")))


def load_pack_file(path: Path) -> Pack:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AnchorPackError(f"anchor pack {path} does not exist", "check drift.packs in the config") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnchorPackError(f"anchor pack {path}: cannot read: {exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _fail(path, "(json)", f"is not valid JSON: {exc}") from None
    return parse_pack(data, path)


def shipped_dir(paths: Paths) -> Path:
    return paths.plugin_root / "anchors"


def user_pack_path(paths: Paths) -> Path:
    return paths.anchors_user / "user.json"


def weights_path(paths: Paths) -> Path:
    return paths.anchors_user / "weights.json"


def resolve_pack(name: str, paths: Paths) -> Path:
    """A pack name (``default``, ``infra``, ``user``) or a path to a JSON file."""
    if name == USER_PACK:
        return user_pack_path(paths)
    if name.endswith(".json") or "/" in name:
        return Path(name).expanduser()
    return shipped_dir(paths) / f"{name}.json"


def shipped_pack_names(paths: Paths) -> list[str]:
    folder = shipped_dir(paths)
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def _json_object(path: Path, field: str, shape: str) -> dict | None:
    """The object under ``field`` in the JSON file ``path`` (``shape`` says what it maps, for the error); None
    when there is no file. Unreadable JSON or another type there is an :class:`AnchorPackError` naming it."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _fail(path, "(json)", f"is not valid JSON: {exc}") from None
    value = data.get(field) if isinstance(data, dict) else None
    if not isinstance(value, dict):
        raise _fail(path, field, f"must be an object {shape}")
    return value


def projects_path(paths: Paths) -> Path:
    return paths.anchors_user / "projects.json"


def load_project_packs(paths: Paths) -> dict[str, list[str]]:
    """Per-project pack selection: ``{"schema_version": 1, "projects": {project: [pack, ...]}}``."""
    path = projects_path(paths)
    projects = _json_object(path, "projects", "{project: [pack names]}")
    if projects is None:
        return {}
    for key, value in projects.items():
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise _fail(path, f"projects.{key}", "must be a non-empty list of pack names")
    return projects


def set_project_packs(paths: Paths, project: str, names: list[str] | None) -> Path:
    """Choose packs for one project (None: back to drift.packs). Names are checked."""
    projects = load_project_packs(paths)
    if names:
        for n in names:
            if n != USER_PACK:
                load_pack_file(resolve_pack(n, paths))  # must exist and be valid
        projects[project] = list(names)
    else:
        projects.pop(project, None)
    path = projects_path(paths)
    _atomic_json(path, {"schema_version": SCHEMA_VERSION, "projects": dict(sorted(projects.items()))})
    return path


def selected_pack_paths(paths: Paths, config: Any, project: str | None = None) -> list[Path]:
    """Pack files in use: the project's own selection (``anchors use --project``)
    if it has one, else ``drift.packs``; plus the user pack when it exists.
    A project matches by its exact key or its folder name."""
    drift = config.section("drift") if hasattr(config, "section") else config
    names = list(drift.get("packs") or ["default"])
    if project:
        per_project = load_project_packs(paths)
        key = project if project in per_project else os.path.basename(project.rstrip("/"))
        if key in per_project:
            names = per_project[key]
    out = [resolve_pack(n, paths) for n in names if n != USER_PACK]
    user = user_pack_path(paths)
    if user.is_file():
        out.append(user)
    return out


def file_signature(files: Iterable[Path]) -> str:
    """Changes whenever any pack file changes (path, size, mtime, content hash)."""
    h = hashlib.sha256()
    for f in files:
        h.update(str(f).encode())
        try:
            h.update(hashlib.sha256(f.read_bytes()).digest())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


def load_weights(paths: Paths) -> dict[str, float]:
    path = weights_path(paths)
    weights = _json_object(path, "weights", "{anchor id: weight}")
    if weights is None:
        return {}
    out = {}
    for k, v in weights.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < float(v) <= 10):
            raise _fail(path, f"weights.{k}", "must be a number in (0, 10]")
        out[str(k)] = float(v)
    return out


def save_weights(paths: Paths, weights: dict[str, float]) -> Path:
    path = weights_path(paths)
    _atomic_json(path, {"schema_version": SCHEMA_VERSION, "weights": dict(sorted(weights.items()))})
    return path


def load_anchors(files: list[Path], weights: dict[str, float] | None = None) -> list[Anchor]:
    """Anchors of all files, tuned weights applied; a later pack may not reuse an id."""
    weights = weights or {}
    seen: dict[str, Path] = {}
    out: list[Anchor] = []
    for f in files:
        pack = load_pack_file(f)
        for a in pack.anchors:
            if a.id in seen:
                raise _fail(f, f"anchors[id={a.id}]", f"id also used in {seen[a.id]}")
            seen[a.id] = f
            if a.id in weights:
                a = Anchor(a.id, a.text, a.polarity, a.category, weights[a.id], a.lang, a.pack)
            out.append(a)
    if not any(a.polarity == "positive" for a in out) or not any(a.polarity == "negative" for a in out):
        raise AnchorPackError(f"anchor packs {', '.join(map(str, files))} need positive and negative anchors")
    return out


def _atomic_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_user_pack(paths: Paths) -> dict[str, Any]:
    path = user_pack_path(paths)
    if not path.is_file():
        return {"schema_version": SCHEMA_VERSION, "name": USER_PACK, "description": "Your own anchors.", "anchors": []}
    pack = load_pack_file(path)  # validates
    return {"schema_version": SCHEMA_VERSION, "name": pack.name, "description": pack.description,
            "anchors": [{k: v for k, v in a.as_dict().items() if k != "pack"} for a in pack.anchors]}


def add_user_anchor(paths: Paths, text: str, polarity: str, category: str, weight: float = 1.0,
                    lang: str = "en", anchor_id: str | None = None, existing_ids: Iterable[str] = ()) -> Anchor:
    data = read_user_pack(paths)
    taken = {a["id"] for a in data["anchors"]} | set(existing_ids)
    if anchor_id is None:
        digest = hashlib.sha256(f"{polarity}\0{text}".encode()).hexdigest()[:8]
        anchor_id = f"user-{digest}"
    if anchor_id in taken:
        raise AnchorPackError(f"anchor id {anchor_id!r} already exists", "choose another --id or remove the old one")
    raw = {"id": anchor_id, "text": text, "polarity": polarity, "category": category, "weight": weight, "lang": lang}
    anchor = validate_anchor(raw, user_pack_path(paths), "anchors[new]", USER_PACK)
    data["anchors"].append(raw)
    _atomic_json(user_pack_path(paths), data)
    return anchor


def remove_user_anchor(paths: Paths, anchor_id: str) -> dict[str, Any]:
    data = read_user_pack(paths)
    kept = [a for a in data["anchors"] if a["id"] != anchor_id]
    if len(kept) == len(data["anchors"]):
        raise NotFound(f"no anchor {anchor_id!r} in the user pack {user_pack_path(paths)}",
                       "shipped anchors cannot be removed; choose other packs with drift.packs")
    removed = next(a for a in data["anchors"] if a["id"] == anchor_id)
    data["anchors"] = kept
    _atomic_json(user_pack_path(paths), data)
    return removed

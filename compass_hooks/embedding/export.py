"""One-time export of a sentence-transformers model into a compass model folder.

``export_model("minilm")`` resolves the source (catalog alias, hub id or local
folder), exports it with optimum (task feature-extraction, library
sentence_transformers, so pooling and Normalize are inside the graph and its
``sentence_embedding`` output is the vector), optionally adds an int8 copy,
checks the result through *our* runtime :class:`OnnxEmbedder` against
sentence-transformers' own ``encode``, writes ``compass-model.json`` and only then
moves the folder into place. Heavy imports (torch, optimum, sentence-transformers)
happen inside functions: the worker never imports this module's dependencies.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import fcntl
import importlib
import importlib.util
import io
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import ExportFailed, ModelSourceUnavailable
from ..paths import get_paths
from .manifest import MANIFEST_NAME, ModelManifest, catalog, read_manifest, sha256_file, write_manifest

EXTRA_HINT = "pip install 'compass-hooks[export]'"
OFFLINE_HINT = "offline alternative: `compass-hook model export --model minilm`, bundled, no hub needed"
FP32_MIN_COSINE = 0.999
INT8_MIN_COSINE = 0.98
DEFAULT_MAX_TOKENS = 512  # hook prompts are short; longer windows only cost latency
# Varied on purpose: prose, an instruction, code, a shell command, German, Japanese,
# a long sentence and a two-word prompt. The parity bar applies to all of them.
PARITY_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "Never push directly to main; always open a pull request first.",
    "def add(a, b):\n    return a + b",
    "rm -rf build/ && git reset --hard HEAD~3",
    "Bitte lösche keine Dateien ohne Rückfrage.",
    "日本語のテキストも正しく埋め込めますか？",
    "We decided to use PostgreSQL instead of MySQL for the billing service because we need JSONB "
    "columns, and the migration must not lock the invoices table during business hours.",
    "fix it",
)
# Single-token prompts are where dynamic int8 drifts most; recorded, not gated.
SHORT_PROBES = ("ok", "yes")
# Files a model folder keeps (the rest of optimum's output is for transformers, not us).
KEEP = ("model.onnx", "model.onnx_data", "tokenizer.json", "config.json")
_HUB_PATTERNS = ["*.json", "*.txt", "*.model", "*.safetensors", "1_Pooling/*", "2_Normalize/*"]
_EXTRA_MODULES = ("torch", "transformers", "sentence_transformers", "optimum", "onnx")
_NOISY_LOGGERS = ("optimum", "transformers", "sentence_transformers", "torch", "onnxruntime", "huggingface_hub", "root")

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Source:
    name: str  # folder name under the models dir
    label: str  # recorded in the manifest: package:..., hub:..., local:...
    kind: str  # "package" | "hub" | "local"
    ref: str  # package module, hub repo id or absolute folder
    max_tokens: int | None = None  # catalog cap, if any
    languages: tuple[str, ...] = ()  # catalog entry's, if any


@dataclass(frozen=True)
class ExportResult:
    manifest: ModelManifest
    skipped: bool  # already exported; nothing done
    seconds: float


def resolve_source(model: str, name: str | None = None) -> Source:
    """``minilm`` / ``bge-m3`` (catalog aliases), a local folder, or a hub id."""
    known = catalog()
    if model in known:
        entry = known[model]
        kind, _, ref = str(entry["source"]).partition(":")
        return Source(name or model, entry["source"], kind, ref, entry.get("max_tokens"), tuple(entry.get("languages") or ()))
    path = Path(model).expanduser()
    if path.is_dir():
        path = path.resolve()
        if not ((path / "config.json").is_file() or (path / "modules.json").is_file()):
            raise ModelSourceUnavailable(
                f"{path} is not a transformers / sentence-transformers model folder (no config.json or modules.json)"
            )
        return Source(name or path.name, f"local:{path}", "local", str(path))
    if model.count("/") == 1 and not model.startswith((".", "/", "~")):
        return Source(name or model.split("/")[1], f"hub:{model}", "hub", model)
    raise ModelSourceUnavailable(
        f"unknown model '{model}': not a catalog alias ({', '.join(known) or 'none'}), local folder or hub id",
        "pick one of: --model minilm | bge-m3 | ORG/NAME | /path/to/model",
    )


def _check_extra() -> None:
    missing = [m for m in _EXTRA_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ExportFailed(
            f"model export needs the [export] extra; missing: {', '.join(missing)}", EXTRA_HINT
        )


def _package_dir(module: str) -> Path:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        raise ModelSourceUnavailable(
            f"the bundled model package '{module}' is not installed", EXTRA_HINT
        ) from None
    getter = getattr(mod, "get_model_path", None)
    if callable(getter):
        folder = Path(getter())
    elif mod.__file__:
        folder = Path(mod.__file__).resolve().parent / "model"
    else:  # a namespace package: no folder of its own to look in
        raise ModelSourceUnavailable(f"the bundled model package '{module}' has no model folder", EXTRA_HINT)
    if not (folder / "config.json").is_file():
        raise ModelSourceUnavailable(f"package '{module}' has no model folder at {folder}", f"reinstall: {EXTRA_HINT}")
    return folder


def _short(exc: BaseException) -> str:
    """One line: the type and the first sentence (hub errors run to a paragraph)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    first, dot, _ = text.partition(". ")
    text = first + dot.strip() if len(first) < 200 else first[:197] + "..."
    return f"{type(exc).__name__}: {text}"


def _fetch_hub(repo_id: str) -> Path:
    """Download only what the export needs (bge-m3 also ships ONNX and ColBERT files we skip)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ExportFailed("huggingface_hub is not installed", EXTRA_HINT) from None
    offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
    try:
        path = Path(snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS))
        if not any(path.glob("*.safetensors")) and not (path / "pytorch_model.bin").is_file():
            path = Path(snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS + ["pytorch_model.bin"]))
    except Exception as exc:  # OSError, requests/httpx errors, huggingface_hub errors: all mean "not reachable"
        where = " (HF_HUB_OFFLINE is set and it is not cached)" if offline else ""
        raise ModelSourceUnavailable(f"cannot fetch '{repo_id}' from the Hugging Face hub{where}: {_short(exc)}", OFFLINE_HINT) from None
    return path


def _source_dir(source: Source) -> Path:
    if source.kind == "package":
        return _package_dir(source.ref)
    if source.kind == "hub":
        return _fetch_hub(source.ref)
    if source.kind == "local":
        return Path(source.ref)
    raise ModelSourceUnavailable(f"unknown source kind in catalog: {source.label}")


@contextlib.contextmanager
def _quiet(log) -> Iterator[None]:
    """Route optimum/transformers/torch chatter (warnings, loggers, prints) to our log file."""
    import logging

    saved = []
    for name in _NOISY_LOGGERS:
        lg = logging.getLogger(None if name == "root" else name)
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers = list(log.handlers)
        lg.propagate = False
    buf = io.StringIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = lambda msg, cat, file, line, *a: log.info("%s:%s %s: %s", file, line, cat.__name__, msg)
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
                yield
    finally:
        for lg, handlers, propagate in saved:
            lg.handlers, lg.propagate = handlers, propagate
        if buf.getvalue().strip():
            log.info("export output:\n%s", buf.getvalue().rstrip())


def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("compass-hooks", "torch", "transformers", "sentence-transformers", "optimum", "optimum-onnx",
                 "onnx", "onnxruntime", "tokenizers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return out


def _st_pooling(st) -> tuple[str, bool]:
    """Pooling mode and whether a Normalize module follows, as the ST config says."""
    pooling, normalize = "mean", False
    for module in st:
        kind = type(module).__name__
        if kind == "Pooling":
            mode = getattr(module, "pooling_mode", None)
            if mode is None and hasattr(module, "get_pooling_mode_str"):
                mode = module.get_pooling_mode_str()
            if mode:  # a Pooling module that says nothing keeps the default (it used to fail on "+".join(None))
                pooling = mode if isinstance(mode, str) else "+".join(mode)
        elif kind == "Normalize":
            normalize = True
    return pooling, normalize


# Architectures trained on many languages; any other model is taken as English-only unless the catalog says.
MULTILINGUAL_TYPES = {"xlm-roberta", "xlm", "mt5", "m2m_100", "mbart", "xlm-roberta-xl"}


def _languages_of(src: Path) -> list[str]:
    """What the drift scorer may read with this model's vectors: ["multilingual"] for a multilingual architecture
    (BGE-m3 and other XLM-R models), else ["en"]."""
    for config in (src / "config.json", *sorted(src.glob("*/config.json"))):
        try:
            model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
        except (OSError, ValueError, AttributeError):
            continue
        if model_type:
            return ["multilingual"] if model_type in MULTILINGUAL_TYPES else ["en"]
    return ["en"]


def _quantize(folder: Path) -> None:
    """Dynamic int8, per-channel weights (per-tensor loses too much on these models).

    Only MatMul weights are quantised: int8 embedding tables (Gather) cost too much
    cosine. The FFN output projections stay fp32 because their inputs carry the
    well-known BERT activation outliers (the parity figures: models/README.md).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(folder / "model.onnx"), load_external_data=False).graph
    keep_fp32 = [
        n.name for n in graph.node
        if n.op_type == "MatMul" and "/output/dense/" in n.name and "/attention/" not in n.name
    ]
    quantize_dynamic(
        str(folder / "model.onnx"),
        str(folder / "model_int8.onnx"),
        weight_type=QuantType.QInt8,
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        nodes_to_exclude=keep_fp32,
        use_external_data_format=False,
    )


def _min_cos(a, b) -> float:
    import numpy as np

    return float(np.min(np.sum(a * b, axis=1)))


def _parity(manifest: ModelManifest, reference, probe_ref, int8: bool) -> dict:
    from .onnx_embedder import OnnxEmbedder

    out: dict = {"texts": len(PARITY_TEXTS), "reference": "sentence-transformers encode"}
    fp32 = OnnxEmbedder(manifest, threads=2)
    out["fp32_min_cosine"] = round(_min_cos(fp32.embed(list(PARITY_TEXTS)), reference), 6)
    out["fp32_short_min_cosine"] = round(_min_cos(fp32.embed(list(SHORT_PROBES)), probe_ref), 6)
    if out["fp32_min_cosine"] < FP32_MIN_COSINE:
        raise ExportFailed(
            f"parity check failed: fp32 ONNX vs sentence-transformers min cosine {out['fp32_min_cosine']:.5f} "
            f"< {FP32_MIN_COSINE}", "the export is not used; see the export log"
        )
    if int8:
        q = OnnxEmbedder(manifest, threads=2, int8=True)
        out["int8_min_cosine"] = round(_min_cos(q.embed(list(PARITY_TEXTS)), reference), 6)
        out["int8_short_min_cosine"] = round(_min_cos(q.embed(list(SHORT_PROBES)), probe_ref), 6)
        if out["int8_min_cosine"] < INT8_MIN_COSINE:
            raise ExportFailed(
                f"parity check failed: int8 ONNX min cosine {out['int8_min_cosine']:.4f} < {INT8_MIN_COSINE}",
                "export without --int8",
            )
    return out


def _rename_exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _move_into_place(tmp: Path, target: Path) -> None:
    """Readers see the old folder or the new one, never a half-written one."""
    if not target.exists():
        os.rename(tmp, target)
        return
    if _rename_exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the previous export
        return
    old = target.with_name(f".{target.name}.old-{os.getpid()}")
    os.rename(target, old)  # brief window without the folder (non-Linux fallback)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One export at a time per models dir (install.sh may race a manual export)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _existing(target: Path, int8: bool) -> ModelManifest | None:
    if not (target / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = read_manifest(target)
    except Exception:
        return None
    if manifest.ready() and (manifest.has_int8 or not int8):
        return manifest
    return None


def already_exported(model: str, int8: bool = False, name: str | None = None,
                     models_dir: Path | None = None) -> ModelManifest | None:
    """The ready export of ``model`` in the models dir, or None (needs none of the [export] extra)."""
    source = resolve_source(model, name)
    return _existing((models_dir or get_paths().models) / source.name, int8)


def export_model(
    model: str = "minilm",
    *,
    int8: bool = False,
    force: bool = False,
    name: str | None = None,
    models_dir: Path | None = None,
    progress: Progress | None = None,
) -> ExportResult:
    """Export ``model`` into ``<models dir>/<name>``; idempotent unless ``force``."""
    say = progress or (lambda _msg: None)
    started = time.monotonic()
    source = resolve_source(model, name)
    if not source.name or source.name.startswith(".") or "/" in source.name:
        raise ExportFailed(f"invalid model name '{source.name}'", "pass --name NAME")
    models = models_dir or get_paths().models
    target = models / source.name
    if not force and (done := _existing(target, int8)):
        return ExportResult(done, True, time.monotonic() - started)
    _check_extra()
    models.mkdir(parents=True, exist_ok=True)
    with _locked(models):
        if not force and (done := _existing(target, int8)):  # exported while we waited
            return ExportResult(done, True, time.monotonic() - started)
        for stale in models.glob(f".{source.name}.*-*"):  # leftovers of a crashed export
            shutil.rmtree(stale, ignore_errors=True)
        tmp = models / f".{source.name}.export-{os.getpid()}"
        try:
            manifest = _export_into(source, tmp, int8, say)
            say(f"[5/5] moving into place: {target}")
            _move_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    manifest.path = target
    return ExportResult(manifest, False, time.monotonic() - started)


def _export_into(source: Source, tmp: Path, int8: bool, say: Progress) -> ModelManifest:
    from ..logs import get_logger

    log = get_logger("export")
    steps_int8 = "int8" if int8 else "no int8"
    say(f"[1/5] loading source {source.label}")
    src = _source_dir(source)
    log.info("export %s from %s (%s)", source.name, src, steps_int8)
    try:
        with _quiet(log):
            from optimum.exporters.onnx import main_export
            from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ExportFailed(f"model export needs the [export] extra: {_short(exc)}", EXTRA_HINT) from None
    try:
        with _quiet(log):
            st = SentenceTransformer(str(src), device="cpu")
    except Exception as exc:
        log.exception("loading %s failed", src)
        raise ModelSourceUnavailable(f"cannot load {source.label} with sentence-transformers: {_short(exc)}") from None
    pooling, normalize = _st_pooling(st)
    dim_fn = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension  # renamed in ST 5.x
    dim = int(dim_fn())
    max_tokens = int(min(st.max_seq_length or DEFAULT_MAX_TOKENS, source.max_tokens or DEFAULT_MAX_TOKENS))
    with _quiet(log):
        reference = st.encode(list(PARITY_TEXTS), normalize_embeddings=True, convert_to_numpy=True)
        probe_ref = st.encode(list(SHORT_PROBES), normalize_embeddings=True, convert_to_numpy=True)
    del st

    say(f"[2/5] exporting to ONNX with optimum (feature-extraction, {pooling} pooling{', normalize' if normalize else ''})")
    raw = tmp / "optimum"
    try:
        with _quiet(log):
            main_export(
                str(src), output=raw, task="feature-extraction", library_name="sentence_transformers",
                device="cpu", do_validation=False, local_files_only=True,
            )
    except Exception as exc:
        log.exception("optimum export failed")
        raise ExportFailed(f"optimum export of {source.label} failed: {_short(exc)}", "details in the export log") from None
    for fname in KEEP:
        if (raw / fname).is_file():
            os.replace(raw / fname, tmp / fname)
    if not (tmp / "tokenizer.json").is_file() and (src / "tokenizer.json").is_file():
        shutil.copy2(src / "tokenizer.json", tmp / "tokenizer.json")
    shutil.rmtree(raw, ignore_errors=True)
    if not (tmp / "model.onnx").is_file() or not (tmp / "tokenizer.json").is_file():
        raise ExportFailed(f"optimum produced no model.onnx/tokenizer.json for {source.label}", "details in the export log")

    if int8:
        say("[3/5] quantising to int8 (dynamic, per-channel)")
        try:
            with _quiet(log):
                _quantize(tmp)
        except Exception as exc:
            log.exception("int8 quantisation failed")
            raise ExportFailed(f"int8 quantisation failed: {_short(exc)}", "export without --int8") from None
    else:
        say("[3/5] int8: skipped (add --int8 for model_int8.onnx)")

    manifest = ModelManifest(
        name=source.name, source=source.label, dim=dim, pooling=pooling, normalize=normalize,
        max_tokens=max_tokens, path=tmp, languages=list(source.languages) or _languages_of(src),
    )
    manifest.files = {f.name: sha256_file(f) for f in sorted(tmp.iterdir()) if f.is_file()}
    say(f"[4/5] parity check: our ONNX runtime vs sentence-transformers on {len(PARITY_TEXTS)} texts")
    with _quiet(log):
        manifest.parity = _parity(manifest, reference, probe_ref, int8)
    figures = f"fp32 min cosine {manifest.parity['fp32_min_cosine']:.6f}"
    if int8:
        figures += f", int8 {manifest.parity['int8_min_cosine']:.4f} (short prompts {manifest.parity['int8_short_min_cosine']:.4f})"
    say(f"      {figures}")
    manifest.exported_with = _versions()
    manifest.created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    write_manifest(manifest, tmp)
    log.info("export %s ok: %s", source.name, manifest.parity)
    return manifest

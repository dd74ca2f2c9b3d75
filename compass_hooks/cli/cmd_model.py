"""``compass-hook model export|list|verify``: the embedding model folders."""

from __future__ import annotations

from typing import Any

import click

from . import echo_json


def _default_name() -> str:
    from ..config import load_config

    return str(load_config().get("model", "name"))


def model_rows() -> list[dict]:
    """One row per exported model (also used by ``doctor``)."""
    from ..embedding.manifest import list_models

    default = _default_name()
    return [
        {
            "name": m.name if m.path is None else m.path.name,
            "path": str(m.path),
            "dim": m.dim,
            "pooling": m.pooling,
            "ready": m.ready(),
            "default": (m.path.name if m.path else m.name) == default,
            "int8": m.has_int8,
            "source": m.source,
        }
        for m in list_models()
    ]


BENCH_PROMPT = (
    "Please refactor the billing service so invoices are generated asynchronously, "
    "and do not touch the database migrations in this change."
)  # ~30 tokens for MiniLM's and BGE-m3's tokenizers: a typical hook prompt


def bench(name: str, runs: int) -> dict:
    """Median and p95 latency (ms) of embedding one prompt, fp32 and (if exported) int8."""
    import statistics
    import time

    from ..config import load_config
    from ..embedding import get_embedder

    out: dict = {"model": name, "runs": runs, "prompt_chars": len(BENCH_PROMPT)}
    for variant, int8 in (("fp32", False), ("int8", True)):
        cfg = load_config()
        cfg.data["model"]["int8"] = int8
        emb = get_embedder(name, config=cfg)
        if int8 and not getattr(emb, "int8", False):
            continue
        tokenizer = getattr(emb, "tokenizer", None)
        if tokenizer is not None:
            out["prompt_tokens"] = len(tokenizer.encode(BENCH_PROMPT).ids)
        emb.embed([BENCH_PROMPT])  # warm-up: first run allocates
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            emb.embed([BENCH_PROMPT])
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        out[variant] = {"median_ms": round(statistics.median(times), 2),
                        "p95_ms": round(times[min(len(times) - 1, int(len(times) * 0.95))], 2)}
    return out


@click.group("model")
def model() -> None:
    """Export, list and verify the local embedding models (ONNX)."""


@model.command("export")
@click.option("--model", "model_ref", default="minilm", show_default=True,
              help="bge-m3 | minilm | a Hugging Face id (ORG/NAME) | a local sentence-transformers folder.")
@click.option("--int8", is_flag=True, help="Also write model_int8.onnx (dynamic per-channel int8).")
@click.option("--force", is_flag=True, help="Re-export even if the model folder is already there.")
@click.option("--name", default=None, help="Folder name under the models dir (default: the alias or the last path part).")
@click.option("--keep-env", is_flag=True,
              help="Keep the throw-away export env in the user cache for the next export.")
@click.option("--no-build-env", is_flag=True,
              help="Export in this interpreter only; fail if the [export] extra is missing.")
def export_cmd(model_ref: str, int8: bool, force: bool, name: str | None, keep_env: bool,
               no_build_env: bool) -> None:
    """Export a sentence-transformers model to ONNX into the models dir.

    Pooling and normalisation come from the model's sentence-transformers
    config; the result is checked against sentence-transformers before it is
    moved into the models dir. Idempotent: an existing export is kept unless
    --force. Run from the lean runtime (no torch), it builds a throw-away env
    with the [export] extra in the user cache, exports there and removes it.
    """
    from ..embedding import export_env
    from ..embedding.export import already_exported, export_model, resolve_source
    from ..errors import ModelSourceUnavailable

    def progress(msg: str) -> None:
        click.echo(msg, err=True)

    if not no_build_env and not export_env.have_export_modules():
        done = None if force else already_exported(model_ref, int8, name)
        source = resolve_source(model_ref, name)
        problem = export_env.hub_problem(source.ref) if done is None and source.kind == "hub" else None
        if problem:
            raise ModelSourceUnavailable(f"cannot fetch '{source.ref}' from the Hugging Face hub: {problem}",
                                         "offline alternative: `compass-hook model export --model minilm` "
                                         "(bundled, no hub needed)")
        if done is None:
            from pathlib import Path

            from ..paths import plugin_root

            local = Path(model_ref).expanduser()  # the export env runs in another cwd
            argv = ["--model", str(local.resolve()) if local.is_dir() else model_ref] + (["--int8"] if int8 else []) + (["--force"] if force else []) \
                + (["--name", name] if name else [])
            rc = export_env.export_in_env(argv, plugin_root(), keep_env, progress)
            if rc:
                raise SystemExit(rc)
            return
    result = export_model(model_ref, int8=int8, force=force, name=name, progress=progress)
    m = result.manifest
    if result.skipped:
        click.echo(f"{m.name}: already exported in {m.path} ({m.dim}-d, {m.pooling}); use --force to redo")
        return
    parity = m.parity
    figures = f"fp32 min cosine {parity.get('fp32_min_cosine')}"
    if "int8_min_cosine" in parity:
        figures += f", int8 min cosine {parity['int8_min_cosine']}"
    click.echo(f"exported {m.name} ({m.dim}-d, {m.pooling} pooling) to {m.path} in {result.seconds:.1f}s; {figures}")


@model.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def list_cmd(as_json: bool) -> None:
    """List the exported models and which one is the default."""
    rows = model_rows()
    if as_json:
        echo_json(rows)
        return
    if not rows:
        from ..paths import get_paths

        click.echo(f"no models in {get_paths().models}; run `compass-hook model export --model minilm`")
        return
    for r in rows:
        flags = ", ".join(f for f, on in (("default", r["default"]), ("int8", r["int8"])) if on)
        state = "ready" if r["ready"] else "NOT READY"
        click.echo(f"{r['name']:<16} {r['dim']:>5}-d  {r['pooling']:<5} {state:<9} {flags:<13} {r['path']}")


@model.command("bench")
@click.argument("name", required=False)
@click.option("--runs", default=50, show_default=True, help="Timed runs per variant.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON result.")
def bench_cmd(name: str | None, runs: int, as_json: bool) -> None:
    """Time one ~30-token prompt through the model (fp32, and int8 if exported)."""
    result = bench(name or _default_name(), max(1, runs))
    if as_json:
        echo_json(result)
        return
    tokens = f", {result['prompt_tokens']} tokens" if "prompt_tokens" in result else ""
    click.echo(f"{result['model']}: one prompt{tokens}, {result['runs']} runs, threads from config")
    for variant in ("fp32", "int8"):
        if variant in result:
            r = result[variant]
            click.echo(f"  {variant}: median {r['median_ms']} ms, p95 {r['p95_ms']} ms")


@model.command("verify")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON result.")
def verify_cmd(name: str | None, as_json: bool) -> None:
    """Re-hash a model's files against its manifest (all models if NAME is omitted)."""
    from ..embedding.manifest import find_model, list_models, verify_model
    from ..errors import ModelCorrupt, ModelNotFound
    from ..paths import get_paths

    manifests = [find_model(name)] if name else list_models()
    if not manifests:
        raise ModelNotFound(f"no models in {get_paths().models}", "run `compass-hook model export --model minilm`")
    results: list[dict[str, Any]] = []
    for m in manifests:
        bad = verify_model(m)
        missing = [f for f in ("model.onnx", "tokenizer.json") if f not in m.files]
        results.append({"name": m.path.name if m.path else m.name, "path": str(m.path),
                        "ok": not bad and not missing, "bad_files": bad + missing, "files": len(m.files)})
    if as_json:
        echo_json(results)
    else:
        for r in results:
            status = "ok" if r["ok"] else "CORRUPT: " + ", ".join(r["bad_files"])
            click.echo(f"{r['name']}: {status} ({r['files']} files hashed)")
    broken = [r for r in results if not r["ok"]]
    if broken:
        names = ", ".join(f"{r['name']} ({', '.join(r['bad_files'])})" for r in broken)
        raise ModelCorrupt(f"files do not match the manifest: {names}",
                           "re-export with `compass-hook model export --model NAME --force`")


def register(cli: click.Group) -> None:
    cli.add_command(model)

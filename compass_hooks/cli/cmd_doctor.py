"""``compass-hook doctor``: versions, paths, models and worker status in one place.

A diagnosis, not a gate: it exits 0 even when something is not ready and says
what to do instead. Nothing here may raise: every probe is wrapped.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import click

from . import echo_json


def _worker_status() -> dict[str, Any]:
    try:
        try:
            spec = importlib.util.find_spec("compass_hooks.worker.client")
        except ModuleNotFoundError:  # the compass_hooks.worker package itself is absent
            spec = None
        if spec is None:
            return {"running": False, "detail": "worker module not installed"}
        client = importlib.import_module("compass_hooks.worker.client")
        status = client.worker_status()
        return dict(status) if isinstance(status, dict) else {"running": False, "detail": repr(status)}
    except Exception as exc:  # the worker is another component: report, never crash
        return {"running": False, "detail": f"status check failed: {type(exc).__name__}: {exc}"}


def _default_model(name: str) -> dict[str, Any]:
    if name == "fake" or name.startswith("fake:"):
        return {"name": name, "ready": True, "detail": "deterministic test embedder (not for real use)"}
    try:
        from ..embedding.manifest import find_model

        m = find_model(name)
        return {"name": name, "ready": True, "path": str(m.path), "dim": m.dim, "pooling": m.pooling,
                "int8": m.has_int8, "source": m.source}
    except Exception as exc:
        return {"name": name, "ready": False, "detail": str(exc)}


LOW_DISK_BYTES = 100 * 1024 * 1024


def _store_status(paths: Any) -> tuple[dict[str, Any], list[str]]:
    """The store's integrity (PRAGMA quick_check), whether it is writable, free disk space, and the capture
    backlog: queued and set-aside captures, spooled ones, audit entries pending, failures seen."""
    import os

    from .. import spool

    out: dict[str, Any] = {"path": str(paths.db)}
    advice: list[str] = []
    try:
        st = os.statvfs(paths.data)
        out["disk_free_mb"] = round(st.f_bavail * st.f_frsize / 1048576, 1)
        if st.f_bavail * st.f_frsize < LOW_DISK_BYTES:
            advice.append(f"the disk holding {paths.data} is (almost) full ({out['disk_free_mb']} MB free): "
                          "captures cannot be stored; free some space")
    except OSError:
        pass
    if not paths.db.exists():
        out["integrity"] = "no store yet"
        out["captures_waiting"] = spool.count(paths.data)
        return out, advice
    try:
        from ..memory import queue
        from ..memory.store import Store, integrity_problems

        problems = integrity_problems(paths.db)
        if problems:
            out["integrity"] = "CORRUPT: " + "; ".join(problems[:3])
            advice.append(f"the memory store is corrupt ({problems[0]}): restore a backup or move {paths.db} "
                          "aside (a new one is created); `compass-hook export` may still read some rows first")
            return out, advice
        out["integrity"] = "ok (quick_check)"
        if not os.access(paths.db, os.W_OK) or not os.access(paths.data, os.W_OK):
            out["writable"] = False
            advice.append(f"the memory store is read-only: make {paths.db} and {paths.data} writable by you "
                          "(captures wait on disk until then)")
        store = Store(paths.db)
        try:
            out["memories"] = store.count()
            out.update(queue.status(store, paths))
        finally:
            store.close()
    except Exception as exc:  # a diagnosis never raises
        out["error"] = f"{type(exc).__name__}: {exc}"
        advice.append(f"cannot read the memory store: {exc}")
        return out, advice
    if out.get("capture_failing"):
        advice.append(f"captures are failing ({out.get('last_capture_error')}); they are kept on disk and stored "
                      "once that is fixed")
    if out.get("captures_set_aside"):
        advice.append(f"{out['captures_set_aside']} captures could not be stored and were set aside as "
                      f"{paths.spool}/*.bad (last error: {out.get('last_capture_error')}; {paths.logs}/memory.log)")
    if out.get("captures_lost"):
        advice.append(f"{out['captures_lost']} captures could not be saved at all (see {paths.logs}/memory.log)")
    return out, advice


def diagnose() -> dict[str, Any]:
    from ..paths import get_paths
    from ..versions import versions

    report: dict[str, Any] = {"versions": versions()}
    paths = get_paths()
    report["paths"] = paths.as_dict()
    advice: list[str] = []
    try:
        from ..config import load_config

        cfg = load_config(paths.config)
        report["config"] = {"file": str(paths.config), "loaded": cfg.source is not None, "model": cfg.section("model")}
        model_name = str(cfg.get("model", "name"))
    except Exception as exc:
        report["config"] = {"file": str(paths.config), "error": str(exc)}
        advice.append(f"fix the config: {exc}")
        model_name = "minilm"
    from .. import dirs

    report["model_dirs"] = dirs.model_search_dirs()  # where models are looked for, in order
    report["default_model"] = _default_model(model_name)
    if not report["default_model"]["ready"]:
        advice.append(f"export the default model: compass-hook model export --model {model_name}")
    try:
        from .cmd_model import model_rows

        report["models"] = model_rows()
    except Exception as exc:
        report["models"] = []
        advice.append(f"cannot list models: {exc}")
    from ..trust import private_problems

    # The store and the socket dir must be this user's alone (0700/0600, ours, no symlink).
    report["permissions"] = [p for path in (paths.data, paths.run, paths.db, paths.audit_log, paths.socket.parent)
                             for p in private_problems(path)]
    advice += [f"make it private: {p}" for p in report["permissions"]]
    report["worker"] = _worker_status()
    report["store"], store_advice = _store_status(paths)
    advice += store_advice
    if report["store"].get("captures_waiting") and not report["worker"].get("running"):
        advice.append(f"{report['store']['captures_waiting']} captures wait on disk for the worker: "
                      "`compass-hook worker start` stores them")
    if report["store"].get("audit_pending") and not report["worker"].get("running"):
        advice.append(f"{report['store']['audit_pending']} audit entries are pending: the worker writes them, or "
                      "`compass-hook audit repair`")
    from ..hookclient.native import status as client_status

    report["hook_client"] = client_status()  # optional: missing only costs speed, stale costs it on every hook
    if report["hook_client"]["state"] == "stale":
        advice.append(f"the native hook client is from another version: {report['hook_client']['hint']}")
    if report["versions"].get("torch") is None:
        report["export_extra"] = "not installed (only needed to export models: pip install 'compass-hooks[export]')"
    report["ok"] = not advice
    report["advice"] = advice
    return report


def _print_human(r: dict[str, Any]) -> None:
    def line(key: str, value: Any) -> None:
        click.echo(f"  {key:<22} {value}")

    click.echo("versions")
    for k, v in r["versions"].items():
        line(k, v if v is not None else "not installed")
    click.echo("paths")
    for k, v in r["paths"].items():
        line(k, v)
    click.echo("config")
    for k, v in r["config"].items():
        line(k, v)
    dm = r["default_model"]
    click.echo("default model")
    line(dm["name"], ("ready" if dm["ready"] else "NOT READY") + (f" ({dm['detail']})" if dm.get("detail") else
                                                                  f" ({dm.get('dim')}-d, {dm.get('pooling')}, {dm.get('path')})"))
    click.echo("models")
    line("looked in", ", ".join(r["model_dirs"]))
    if not r["models"]:
        line("(none)", "")
    for m in r["models"]:
        flags = " ".join(f for f, on in (("default", m["default"]), ("int8", m["int8"])) if on)
        line(m["name"], f"{m['dim']}-d {m['pooling']} {'ready' if m['ready'] else 'NOT READY'} {flags}".rstrip())
    click.echo("worker")
    for k, v in r["worker"].items():
        line(k, v)
    click.echo("store")
    for k, v in r["store"].items():
        if v is not None:
            line(k, v)
    hc = r["hook_client"]
    click.echo("hook client")
    line("native", f"{hc['state']} ({hc['path']})" + (", disabled by COMPASS_FAST_CLIENT=0" if hc["disabled_by_env"] else ""))
    if hc["state"] != "ok":
        line("hint", hc["hint"])
    if r.get("export_extra"):
        click.echo(f"export extra: {r['export_extra']}")
    if r["advice"]:
        click.echo("to do")
        for a in r["advice"]:
            click.echo(f"  - {a}")
    else:
        click.echo("all good")


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (paths under \"paths\").")
def doctor_cmd(as_json: bool) -> None:
    """Show versions, every path, the default model, exported models and the worker.

    Always exits 0; the "to do" lines say what to fix.
    """
    report = diagnose()
    if as_json:
        echo_json(report)
    else:
        _print_human(report)


def register(cli: click.Group) -> None:
    cli.add_command(doctor_cmd)

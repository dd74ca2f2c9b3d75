"""Failure streak notice, the hot-path settings cache, and the marketplace bootstrap decisions."""

from __future__ import annotations

import json
import os

from compass_hooks.hookclient import bootstrap, settings
from compass_hooks.worker.hooks import state
from compass_hooks.paths import get_paths


def test_notice_once_per_failure_streak(tmp_path):
    path = str(tmp_path / "run" / "hook-state.json")
    assert state.record_failure(path, "worker down", 3) is None
    assert state.record_failure(path, "worker down", 3) is None
    notice = state.record_failure(path, "worker down", 3)
    assert notice and "compass-hook doctor" in notice and "worker down" in notice
    assert state.record_failure(path, "worker down", 3) is None  # once per streak
    state.record_success(path)
    assert not os.path.exists(path)
    for _ in range(2):
        assert state.record_failure(path, "again", 3) is None
    assert state.record_failure(path, "again", 3)  # a new streak notifies again


def test_settings_cache_matches_the_slow_path_and_goes_stale(monkeypatch):
    slow = settings.compute()
    first = settings.load()
    assert first == slow
    cache = get_paths().run / settings.CACHE_NAME
    assert cache.exists()
    # A poisoned cache with a matching key would be used: prove load() reads it ...
    data = json.loads(cache.read_text())
    data["settings"]["budget_chars"] = 1234
    cache.write_text(json.dumps(data))
    assert settings.load()["budget_chars"] == 1234
    # ... and that an env override or a config change makes it stale.
    monkeypatch.setenv("COMPASS_BUDGET_CHARS", "777")
    assert settings.load()["budget_chars"] == 777
    monkeypatch.delenv("COMPASS_BUDGET_CHARS")
    get_paths().config.write_text("[hooks]\nbudget_chars = 555\n")
    assert settings.load()["budget_chars"] == 555
    assert settings.load()["socket"] == str(get_paths().socket)


def _plugin(tmp_path, reqs="a"):
    root = tmp_path / "plugin"
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(f"[project]\nname='x'\ndependencies=['{reqs}']\n")
    return str(root)


def test_bootstrap_starts_once_notifies_once_and_rebuilds_on_new_requirements(tmp_path):
    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    s = {"data": data, "plugin_root": root}
    started = []
    msg = bootstrap.maybe_start(s, starter=lambda d, r: started.append((d, r)))
    assert started == [(data, root)] and msg and "background" in msg
    assert bootstrap.maybe_start(s, starter=lambda d, r: started.append(1)) is None  # told once ...
    assert len(started) == 2  # ... but a dead build (lock free, no stamp) is restarted

    # A finished build: venv python + matching stamp -> ready, nothing started.
    venv = bootstrap.venv_dir(data)
    os.makedirs(os.path.join(venv, "bin"))
    open(os.path.join(venv, "bin", "python"), "w").close()
    with open(os.path.join(venv, bootstrap.STAMP), "w") as fh:
        fh.write(bootstrap.requirements_hash(root))
    assert bootstrap.decide(data, root)["action"] == "ready"
    assert bootstrap.maybe_start(s, starter=lambda d, r: started.append(2)) is None and len(started) == 2

    # A plugin update that changes the requirements: stale stamp -> rebuild, and the user is told again.
    _plugin(tmp_path, reqs="b")
    d = bootstrap.decide(data, root)
    assert d == {"action": "start", "notify": True, "hash": bootstrap.requirements_hash(root)}


def test_bootstrap_lock_means_building_and_build_is_single(tmp_path):
    import fcntl

    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    os.makedirs(os.path.join(data, "run"))
    fd = os.open(os.path.join(data, "run", "bootstrap.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert bootstrap.decide(data, root)["action"] == "building"
        ran = []
        assert bootstrap.build(data, root, steps=lambda cmd, env: ran.append(cmd)) == 0 and ran == []
    finally:
        os.close(fd)
    ran = []

    def steps(cmd, env):  # record instead of building; the venv step leaves its dir behind
        ran.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(cmd[-1], exist_ok=True)

    assert bootstrap.build(data, root, steps=steps) == 0
    assert [c[1:3] for c in ran[:1]] == [["-m", "venv"]] and ran[-2][-3:] == ["export", "--model", "minilm"]
    assert ran[-1][1:3] == ["client", "build"] and ran[-1][-1].endswith("/bin/compass-hook-client")
    assert bootstrap.stamp_ok(data, root)


def test_no_environment_means_pass_through(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPASS_WORKER_PYTHON", raising=False)
    monkeypatch.setattr(bootstrap.sys, "flags", type("F", (), {"no_site": 1})())
    s = {"data": str(tmp_path / "d"), "plugin_root": _plugin(tmp_path)}
    assert bootstrap.worker_python(s) is None
    os.makedirs(os.path.join(s["plugin_root"], ".venv", "bin"))
    open(os.path.join(s["plugin_root"], ".venv", "bin", "python"), "w").close()
    assert bootstrap.worker_python(s).endswith(".venv/bin/python")


def test_worker_python_order_and_unfinished_venvs(tmp_path, monkeypatch):
    """install.sh's runtime venv first, once its install finished; then the checkout's .venv; then this plugin
    install's bootstrapped venv once its stamp is written."""
    monkeypatch.delenv("COMPASS_WORKER_PYTHON", raising=False)
    monkeypatch.setattr(bootstrap.sys, "flags", type("F", (), {"no_site": 1})())
    root, runtime, pdata = _plugin(tmp_path), str(tmp_path / "runtime"), str(tmp_path / "pdata")
    s = {"data": str(tmp_path / "d"), "plugin_root": root, "runtime_venv": runtime, "plugin_data": pdata}

    def make(venv: str) -> str:
        os.makedirs(os.path.join(venv, "bin"), exist_ok=True)
        open(os.path.join(venv, "bin", "python"), "w").close()
        return os.path.join(venv, "bin", "python")

    boot = make(os.path.join(pdata, "venv"))
    assert bootstrap.worker_python(s) is None  # no stamp yet: still being built
    with open(os.path.join(pdata, "venv", bootstrap.STAMP), "w") as fh:
        fh.write(bootstrap.requirements_hash(root))
    assert bootstrap.worker_python(s) == boot
    dev = make(os.path.join(root, ".venv"))
    assert bootstrap.worker_python(s) == dev
    rt = make(runtime)
    assert bootstrap.worker_python(s) == dev  # a runtime venv without its install record is half made
    open(os.path.join(runtime, "compass-install.json"), "w").close()
    assert bootstrap.worker_python(s) == rt


def test_failed_build_is_told_once_and_not_retried_on_every_prompt(tmp_path):
    import subprocess
    import time

    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    s = {"data": data, "plugin_root": root}
    started = []
    assert bootstrap.maybe_start(s, starter=lambda d, r: started.append(1))  # the setup notice
    assert started == [1]

    def pip_fails(cmd, env):
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(os.path.join(cmd[-1], "bin"), exist_ok=True)
        elif cmd[1:4] == ["-m", "pip", "install"]:
            raise subprocess.CalledProcessError(1, cmd)

    assert bootstrap.build(data, root, steps=pip_fails) == 1
    assert not bootstrap.stamp_ok(data, root)
    d = bootstrap.decide(data, root)
    assert d["action"] == "failed" and d["notify"] and "pip install" in d["reason"]
    msg = bootstrap.maybe_start(s, starter=lambda d, r: started.append(2))
    assert msg and msg.startswith("Compass could not") and "`pip install` exited 1" in msg
    assert bootstrap.maybe_start(s, starter=lambda d, r: started.append(3)) is None  # told once, no new pip run
    assert started == [1]

    # Past the back-off the next hook starts a build again, silently (the setup was announced already).
    failed = os.path.join(data, "run", "bootstrap-failed.json")
    with open(failed) as fh:
        rec = json.load(fh)
    rec["ts"] = time.time() - bootstrap.RETRY_AFTER_S - 1
    with open(failed, "w") as fh:
        json.dump(rec, fh)
    assert bootstrap.maybe_start(s, starter=lambda d, r: started.append(4)) is None
    assert started == [1, 4]

    def steps(cmd, env):
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(os.path.join(cmd[-1], "bin"), exist_ok=True)
            open(os.path.join(cmd[-1], "bin", "python"), "w").close()

    assert bootstrap.build(data, root, steps=steps) == 0
    assert not os.path.exists(failed) and bootstrap.decide(data, root)["action"] == "ready"


def test_a_failure_for_older_requirements_does_not_block_a_new_build(tmp_path):
    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    os.makedirs(os.path.join(data, "run"))
    with open(os.path.join(data, "run", "bootstrap-failed.json"), "w") as fh:
        json.dump({"hash": bootstrap.requirements_hash(root), "ts": __import__("time").time(), "reason": "x"}, fh)
    assert bootstrap.decide(data, root)["action"] == "failed"
    _plugin(tmp_path, reqs="fixed")  # a plugin update with other requirements
    assert bootstrap.decide(data, root)["action"] == "start"


def test_the_build_never_runs_from_the_venv_it_clears(tmp_path, monkeypatch):
    import sys

    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    # A rebuild: the launcher found <data>/venv/bin/python, so the hook runs from the venv about to be cleared.
    base = sys._base_executable
    monkeypatch.setattr(bootstrap.sys, "executable", os.path.join(bootstrap.venv_dir(data), "bin", "python"))
    ran = []

    def steps(cmd, env):
        ran.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(cmd[-1], exist_ok=True)

    assert bootstrap.build(data, root, steps=steps) == 0
    assert ran[0][:3] == [base, "-m", "venv"]


def test_a_failed_pip_upgrade_or_client_build_does_not_sink_the_build(tmp_path):
    import subprocess

    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    ran = []

    def steps(cmd, env):
        ran.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(cmd[-1], exist_ok=True)
        elif "--upgrade" in cmd or cmd[1:3] == ["client", "build"]:
            raise subprocess.CalledProcessError(1, cmd)  # offline: the bundled pip has to do; no C compiler

    assert bootstrap.build(data, root, steps=steps) == 0 and bootstrap.stamp_ok(data, root)
    assert any("--upgrade" in c for c in ran) and ran[-2][-3:] == ["export", "--model", "minilm"]


def test_pip_builds_from_a_private_copy_not_the_plugin_root(tmp_path):
    data = str(tmp_path / "data")
    root = _plugin(tmp_path)
    os.makedirs(os.path.join(root, "pkg"))
    open(os.path.join(root, "pkg", "__init__.py"), "w").close()
    os.makedirs(os.path.join(root, ".venv", "bin"))  # a dev checkout's venv must not be copied
    seen = {}

    def steps(cmd, env):
        if cmd[1:3] == ["-m", "venv"]:
            os.makedirs(cmd[-1], exist_ok=True)
        elif cmd[1:4] == ["-m", "pip", "install"] and "--upgrade" not in cmd:
            src = cmd[-1]  # the runtime only: no [export] extra (torch) in the hooks' venv
            seen["src"] = src
            seen["files"] = sorted(os.listdir(src))

    before = sorted(os.listdir(root))
    assert bootstrap.build(data, root, steps=steps) == 0
    assert seen["src"].startswith(data + os.sep) and seen["files"] == ["pkg", "pyproject.toml"]
    assert not os.path.exists(seen["src"])  # removed after the build
    assert sorted(os.listdir(root)) == before

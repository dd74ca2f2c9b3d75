#!/bin/sh
# compass-hooks hook launcher (hooks.json runs: compass-hook.sh EVENT).
# Picks the interpreter without forking, in the order bootstrap.worker_python() uses:
#   1. the user's runtime venv that ./install.sh builds: $COMPASS_VENV, else <user data dir>/venv
#      (<user data dir> = $COMPASS_HOME, else platformdirs' rule: compass_hooks/dirs.py);
#   2. a checkout's dev venv, <plugin root>/.venv (tests/run);
#   3. the venv this plugin install bootstrapped in ${CLAUDE_PLUGIN_DATA};
#   4. any python3: the hook then only starts that bootstrap and passes prompts through.
# No python3 at all: exit 0. Next to a venv's python may sit the native client
# (`compass-hook client build`): it talks to a warm worker without a Python start-up and hands
# anything else to Python. COMPASS_FAST_CLIENT=0 skips it. Not exec'd: should it crash, Python still
# runs (and, finding stdin consumed, fails open and counts the failure).
ROOT="${CLAUDE_PLUGIN_ROOT:-${0%/*}/..}"
if [ -n "${COMPASS_HOME:-}" ]; then DATA="$COMPASS_HOME"
elif [ "$(uname -s 2>/dev/null)" = Darwin ]; then DATA="$HOME/Library/Application Support/compass-hooks"
else DATA="${XDG_DATA_HOME:-$HOME/.local/share}/compass-hooks"
fi
VENV="${COMPASS_VENV:-$DATA/venv}"
if [ -x "$VENV/bin/python" ]; then
  PY="$VENV/bin/python"
elif [ -x "$ROOT/.venv/bin/python" ]; then
  PY="$ROOT/.venv/bin/python"
elif [ -n "${CLAUDE_PLUGIN_DATA:-}" ] && [ -x "$CLAUDE_PLUGIN_DATA/venv/bin/python" ]; then
  PY="$CLAUDE_PLUGIN_DATA/venv/bin/python"
else
  PY="$(command -v python3 2>/dev/null)" || exit 0
  [ -n "$PY" ] || exit 0
fi
if [ "${COMPASS_FAST_CLIENT:-1}" != 0 ] && [ -x "${PY%/*}/compass-hook-client" ]; then
  "${PY%/*}/compass-hook-client" "$PY" "$ROOT/hooks/compass_hook.py" "$@" && exit 0
fi
exec "$PY" -I -S "$ROOT/hooks/compass_hook.py" "$@"

#!/bin/sh
# compass-hooks hook launcher (hooks.json runs: compass-hook.sh EVENT).
# Picks the interpreter without forking: the checkout's .venv (./install.sh), else the
# venv the plugin bootstraps in ${CLAUDE_PLUGIN_DATA}, else any python3 (then the hook
# only starts that bootstrap and passes prompts through). No python3 at all: exit 0.
# Next to a venv's python may sit the native client (`compass-hook client build`): it
# talks to a warm worker without a Python start-up and hands anything else to Python.
# COMPASS_FAST_CLIENT=0 skips it. Not exec'd: should it crash, Python still runs (and, finding
# stdin consumed, fails open and counts the failure).
ROOT="${CLAUDE_PLUGIN_ROOT:-${0%/*}/..}"
if [ -x "$ROOT/.venv/bin/python" ]; then
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

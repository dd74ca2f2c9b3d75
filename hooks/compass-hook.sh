#!/bin/sh
# compass-hooks hook launcher (hooks.json runs: compass-hook.sh EVENT).
# Picks the interpreter without forking: the checkout's .venv (./install.sh), else the
# venv the plugin bootstraps in ${CLAUDE_PLUGIN_DATA}, else any python3 (then the hook
# only starts that bootstrap and passes prompts through). No python3 at all: exit 0.
ROOT="${CLAUDE_PLUGIN_ROOT:-${0%/*}/..}"
if [ -x "$ROOT/.venv/bin/python" ]; then
  PY="$ROOT/.venv/bin/python"
elif [ -n "${CLAUDE_PLUGIN_DATA:-}" ] && [ -x "$CLAUDE_PLUGIN_DATA/venv/bin/python" ]; then
  PY="$CLAUDE_PLUGIN_DATA/venv/bin/python"
else
  PY="$(command -v python3 2>/dev/null)" || exit 0
  [ -n "$PY" ] || exit 0
fi
exec "$PY" -I -S "$ROOT/hooks/compass_hook.py" "$@"

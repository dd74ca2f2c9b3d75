#!/bin/sh
# Start the bundled compass MCP server for Claude Code (the plugin's .mcp.json runs this).
# Claude Code installs no Python dependencies for a plugin, so pick the first venv that exists, in the
# hook launcher's order (hooks/compass-hook.sh): the user's runtime venv from ./install.sh, a checkout's
# dev .venv, then the one the hooks bootstrap in the plugin data dir. Every one of them serves the same
# store (the user data dir), so a memory made here is recalled by the hooks, the CLI and other editors.
# -I: the server runs with the project as cwd; a project folder named like our packages must not shadow them.
here="$(cd "$(dirname "$0")/.." && pwd)"
root="${CLAUDE_PLUGIN_ROOT:-$here}"
if [ -n "${COMPASS_HOME:-}" ]; then data="$COMPASS_HOME"
elif [ "$(uname -s 2>/dev/null)" = Darwin ]; then data="$HOME/Library/Application Support/compass-hooks"
else data="${XDG_DATA_HOME:-$HOME/.local/share}/compass-hooks"
fi
# A runtime or bootstrapped venv counts once its install finished (compass-install.json is written last).
for venv in "${COMPASS_VENV:-$data/venv}" "$root/.venv" "${CLAUDE_PLUGIN_DATA:+$CLAUDE_PLUGIN_DATA/venv}"; do
  py="$venv/bin/python"
  if [ -n "$venv" ] && [ -x "$py" ] && { [ "$venv" = "$root/.venv" ] || [ -f "$venv/compass-install.json" ]; }; then
    _COMPASS_MCP_ROOT="$root" exec "$py" -I -c \
      'import os, sys; sys.path.insert(0, os.environ.pop("_COMPASS_MCP_ROOT")); from mcp_server.__main__ import main; sys.exit(main())' "$@"
  fi
done
echo "compass MCP server: no Python venv found (looked in $data/venv, $root/.venv and \${CLAUDE_PLUGIN_DATA}/venv)." >&2
echo "Run ./install.sh in the plugin folder, or start a Claude Code session once so the hooks bootstrap it." >&2
exit 1

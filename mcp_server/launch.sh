#!/bin/sh
# Start the bundled compass MCP server for Claude Code (the plugin's .mcp.json runs this).
# Claude Code installs no Python dependencies for a plugin, so pick the first venv that exists:
# the checkout's own (./install.sh), then the one the SessionStart hook builds in the plugin data dir.
# -I: the server runs with the project as cwd; a project folder named like our packages must not shadow them.
here="$(cd "$(dirname "$0")/.." && pwd)"
for py in "${CLAUDE_PLUGIN_ROOT:-$here}/.venv/bin/python" "${CLAUDE_PLUGIN_DATA:+$CLAUDE_PLUGIN_DATA/venv/bin/python}" "$here/.venv/bin/python"; do
  if [ -n "$py" ] && [ -x "$py" ]; then
    exec "$py" -I -m mcp_server "$@"
  fi
done
echo "compass MCP server: no Python venv found (looked in \${CLAUDE_PLUGIN_ROOT}/.venv and \${CLAUDE_PLUGIN_DATA}/venv)." >&2
echo "Run ./install.sh in the plugin folder, or start a Claude Code session once so the SessionStart hook builds it." >&2
exit 1

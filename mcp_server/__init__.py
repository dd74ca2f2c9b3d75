"""compass-hooks MCP server, built on the official ``mcp`` SDK (2.x ``MCPServer``).

Editors other than Claude Code (Cursor, Cline, Claude Desktop, Windsurf, Zed,
Continue) reach the same core as the hooks through it: the same warm worker and
the same store, so a memory remembered in one client is recalled in another.

- :mod:`mcp_server.tools`   the tools (drift_check, recall, remember, forget, constraints, status, list, edit,
                            drift_history, feedback)
- :mod:`mcp_server.server`  builds the server, resolves the project, runs stdio or loopback HTTP
- :mod:`mcp_server.http`    bearer token and loopback checks for the HTTP transport
- :mod:`mcp_server.editors` per-client config snippets and the merging writer
"""

SERVER_NAME = "compass"
TOOL_NAMES = ("drift_check", "recall", "remember", "forget", "constraints", "status", "list", "edit", "drift_history",
              "feedback")

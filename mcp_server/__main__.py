"""``compass-mcp``: run the compass MCP server (stdio by default).

Same as ``compass-hook mcp``; this entry point exists because editor configs want
one executable with no subcommand.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="compass-mcp",
        description="compass-hooks MCP server: drift_check, recall, remember, forget, constraints, status, list, "
        "edit, drift_history, feedback. Speaks MCP over stdio unless --http is given.",
    )
    parser.add_argument("--http", action="store_true",
                        help="serve streamable HTTP on 127.0.0.1 (bearer token required) instead of stdio")
    parser.add_argument("--host", default=None, help="bind address for --http; only 127.0.0.1/localhost is accepted")
    parser.add_argument("--port", type=int, default=None, help="port for --http (default: config mcp.http_port, 8765)")
    parser.add_argument("--project", default=None, metavar="DIR|global",
                        help="the project served when the client offers no workspace roots (default: the cwd's)")
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args(argv)

    from compass_hooks import __version__
    from compass_hooks.errors import CompassError

    if args.version:
        print(f"compass-mcp {__version__}")
        return
    if not args.http and (args.host or args.port is not None):
        parser.error("--host and --port only apply with --http")
    from . import server

    try:
        if args.http:
            server.run_http(args.host, args.port, project=args.project)
        else:
            server.run_stdio(project=args.project)
    except CompassError as exc:
        print(f"compass-mcp: {exc}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

"""Claude Code hook I/O: stdin -> frozen event dataclasses (events.py), the one
stdout writer (output.py), the client-side runner (runner.py), the worker-side
event handlers (handlers.py), the failure streak state (state.py), the hot-path
settings cache (settings.py) and the marketplace self-bootstrap (bootstrap.py).

Import-free: the hook launcher imports submodules with ``python -I -S``."""

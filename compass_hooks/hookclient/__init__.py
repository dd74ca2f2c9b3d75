"""The hook process: what ``hooks/compass-hook.sh`` runs on every Claude Code hook (a face, like the CLI and MCP).

runner.py (read stdin, one request to the warm worker, write stdout; fail open), settings.py (the hot-path
settings cache), bootstrap.py (a marketplace install's self-built runtime), native.py (building the C client).
Stdlib only, import-free: the launcher imports submodules under ``python -I -S``. It talks to the worker
through ``worker.client`` and shares the hook rules it must apply the same way (``worker.hooks``: event
names, the output writer, the failure streak, the PreToolUse guard) with the worker's fast path.
"""

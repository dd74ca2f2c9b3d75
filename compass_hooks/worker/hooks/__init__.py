"""Claude Code hooks, the worker's side: stdin -> frozen event dataclasses (events.py), the handlers that call
the features (handlers.py), the native client's op (fast.py). Shared with the hook process, stdlib only:
event names (names.py), the one stdout writer (output.py), the failure streak (state.py), the PreToolUse
guard (guard.py). Import-free: the hook launcher imports the shared submodules under ``python -I -S``."""

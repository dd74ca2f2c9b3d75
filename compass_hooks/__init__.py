"""compass-hooks: local memory and drift guard for LLM coding agents.

This module must stay import-free: the hook launcher imports the package with
``python -I -S`` on every prompt.
"""

__version__ = "0.1.0"
# Bumped whenever the worker socket protocol changes; a client that sees another
# value on ping restarts the worker.
PROTOCOL_VERSION = 1

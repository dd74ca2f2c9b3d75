"""The warm worker: a Unix-socket server holding the model (server.py), its
lifecycle helpers (lifecycle.py), the wire format (protocol.py), the stdlib-only
client the hooks and the CLI use (client.py) and the worker ops (ops.py).

Import-free on purpose: the hook launcher imports ``compass_hooks.worker.client``."""

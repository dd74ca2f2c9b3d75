"""``python -m compass_hooks.worker --home DATA_DIR``: run the worker in the foreground."""

from .server import main

raise SystemExit(main())

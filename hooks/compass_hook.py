"""Hook entry point run by hooks.json through compass-hook.sh: ``python -I -S compass_hook.py EVENT``.

``-I -S``: no site-packages, no user env, so start-up is as cheap as Python
gets; the hot path needs only the stdlib and this checkout's import-light
modules (see compass_hooks/hookclient/runner.py). Anything that goes wrong, even an
import error from a half-updated plugin, exits 0 with empty stdout.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

try:
    from compass_hooks.hookclient.runner import main
except BaseException:  # a broken install must never break the user's prompt
    sys.exit(0)

try:
    sys.exit(main())
except BaseException:
    sys.exit(0)

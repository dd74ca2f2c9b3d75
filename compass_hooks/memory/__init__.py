"""The memory layer: SQLite store + migrations (store.py, migrations.py), privacy
and constraint detection (privacy.py, constraints.py), capture from hooks and
transcripts (capture.py, transcript.py), retrieval (recall.py, index.py,
fusion.py, text.py), injection formatting (inject.py), the hook-facing API
(api.py) and the ops (ops.py). Import-light: nothing heavy at package import."""

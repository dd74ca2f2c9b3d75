"""A small two-session chat and a way to import it into a Core's store: the recall tests and the ranking
ablations share them."""

from __future__ import annotations

from compass_hooks.memory import recall


def add(core, rows, project="p"):
    """rows: (session, role, text[, kind]) -> ids, embedded and with contexts, like an import."""
    texts = [r[2] for r in rows]
    vecs = core.embedder.embed(texts)
    items = [{"text": r[2], "session": r[0], "role": r[1], "kind": r[3] if len(r) > 3 else "prompt",
              "project": project, "embedding": v, "model": core.embedder.name, "ref": f"r{i}"}
             for i, (r, v) in enumerate(zip(rows, vecs))]
    ids = [a.id for a in core.store.add_many(items)]
    recall.update_contexts(core.store, ids)
    return ids


CHAT = [
    ("s1", "user", "We use PostgreSQL for the billing service"),
    ("s1", "assistant", "Understood, the billing tables live in Postgres"),
    ("s1", "user", "never force-push to the main branch", "constraint"),
    ("s2", "user", "Did you go hiking in the mountains?"),
    ("s2", "assistant", "Yes, we did it yesterday, the kids loved it"),
    ("s2", "user", "the frontend is written in TypeScript with React"),
]

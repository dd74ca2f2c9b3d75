"""Small, deterministic learning pieces shared by features that train on their own labelled dev sets (drift's
calibrated scorer, memory's standing-instruction detector): an L2 logistic regression fitted by Newton's method, a
ridge text probe over hashed word/character n-grams plus a sentence embedding, folds, thresholds and the metrics
their trainers report, and the reading of their JSONL dev sets (:mod:`.labelled`). numpy only; a features-level
floor of its own so that neither feature imports the other (memory must not import drift)."""

"""Drift detector: anchor packs, calibrated scoring, rules, history (issue 4)."""

"""Text rules, one home each, stdlib only (the hook process imports them under ``python -I -S``).

- ``secrets``: credential shapes, ``<private>`` spans and the one redaction pass; the drift rule for secrets
  in a prompt reads the same shapes.
- ``instructions``: stored text that reads like instructions to the model (prompt-injection bait).
- ``harness``: text Claude Code (or Compass itself) put into a prompt, never typed by the user.
- ``commands``: destructive shell / SQL commands (the PreToolUse guard and the drift rules).

Nothing here imports the rest of the package: every feature and both processes read these rules.
"""

"""The injected ``Compass — drift check`` block: factual, short, quoted data."""

from __future__ import annotations

import re
from typing import Any

from ..textrules.instructions import looks_like_instruction, normalise
from .pack import CATEGORY_WORDS

MAX_CHARS = 1200
_RULE_WORDS = {
    "rm_rf": "recursive forced delete (rm -rf) outside build/cache dirs",
    "git_push_force": "force push to a shared branch",
    "git_reset_hard": "git reset --hard (discards uncommitted work)",
    "git_clean_force": "git clean -f (deletes untracked files)",
    "git_branch_delete": "force-deleting a shared branch",
    "sql_drop": "DROP/TRUNCATE of database objects",
    "sql_delete_all": "DELETE without WHERE",
    "chmod_777": "chmod 777 (world-writable files)",
    "broad_kill": "killing processes by a broad pattern",
    "disk_overwrite": "writing a raw device",
    "git_push_delete": "deleting a branch or tag on the remote",
    "git_no_verify": "skipping the git hooks (--no-verify)",
    "git_discard": "discarding every uncommitted change",
    "git_stash_drop": "dropping stashed work",
    "git_update_ref_delete": "deleting a git ref",
    "git_history_rewrite": "rewriting the whole git history",
    "git_reflog_expire": "expiring the reflog",
    "find_delete": "find -delete / -exec rm",
    "pipe_to_shell": "running a downloaded script (curl | sh)",
    "exfiltration": "sending credentials to the network",
    "clobber_file": "emptying a file that is hard to restore",
    "chown_system": "recursive chown of a system or home directory",
    "crontab_remove": "crontab -r",
    "rsync_delete": "rsync --delete",
    "redis_flush": "FLUSHALL/FLUSHDB",
    "sql_update_all": "UPDATE without WHERE",
    "cloud_delete": "deleting cloud or cluster resources",
    "docker_prune": "removing docker volumes or images",
    "publish": "publishing a package",
    "pip_break_system": "pip --break-system-packages",
    "fork_bomb": "a fork bomb",
    "unreadable_command": "a command too long or nested to check",
}


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def rule_words(rule: str | None) -> str | None:
    if not rule:
        return None
    if rule.startswith("secret_"):
        return "a credential-shaped string (" + rule[len("secret_"):].replace("_", " ") + ")"
    return _RULE_WORDS.get(rule, rule)


def format_block(result: dict[str, Any], related: list[dict[str, Any]] | None = None) -> str:
    head = "Compass — drift check"
    if result.get("alert_id"):
        head += f" (alert {result['alert_id']})"
    lines = [head]
    cat = result.get("category")
    what = CATEGORY_WORDS.get(cat, cat.replace("_", " ")) if cat else "a drift pattern"
    lines.append(f"This prompt resembles {what} (drift probability {float(result.get('probability', 0)):.2f}).")
    rw = rule_words(result.get("rule"))
    if rw:
        lines.append(f"Rule that fired: {rw}.")
    near = [a for a in result.get("anchors", []) if a.get("polarity") == "negative"][:2]
    if near:
        lines.append("Nearest drift patterns: " + "; ".join(f"\"{_clip(a['text'], 90)}\"" for a in near) + ".")
    body = "\n".join(lines)
    if related:
        rel_lines = ["Earlier in this project the user said:"]
        for r in related[:3]:
            session = re.sub(r"[^0-9A-Za-z_-]", "", str(r.get("session") or ""))[:8]
            meta = ", ".join(str(x) for x in (r.get("kind"), r.get("age"), (f"session {session}" if session else None)) if x)
            text = str(r.get("text", ""))
            # The same decision as memory.inject.shown: flagged text is withheld, the rest is one quoted line.
            if "suspicious-instruction" in (r.get("flags") or ()) or looks_like_instruction(text[:3000]):
                said = "(a stored message that reads like instructions to the model was withheld)"
            else:
                said = "\"" + _clip(normalise(text[:1000]).replace('"', "'"), 200) + "\""
            rel_lines.append(f"- {said}" + (f" ({meta})" if meta else ""))
        for n in range(len(rel_lines), 1, -1):  # drop related items until it fits
            candidate = body + "\n" + "\n".join(rel_lines[:n])
            if len(candidate) + 60 <= MAX_CHARS:
                body = candidate
                break
    if result.get("alert_id"):
        footer = f"If this is a false alarm: compass-hook feedback {result['alert_id']} fp"
        if len(body) + len(footer) + 1 <= MAX_CHARS:
            body += "\n" + footer
    return body[:MAX_CHARS]

"""Destructive shell and SQL commands: what patterns do better than embeddings.

``check_command`` is the PreToolUse(Bash) guard's rule set and the drift rules' check of a command a prompt
asks to run. Stdlib only: the hook process imports this module with ``python -I -S`` on every Bash command.
"""

from __future__ import annotations

import re
import shlex

from .secrets import find_secret


class RuleHit:
    """A rule that fired. A plain immutable class: ``dataclasses`` pulls in ``inspect`` (slow to import:
    docs/hooks.md), and the PreToolUse hook imports this module on every Bash command."""

    __slots__ = ("rule", "category", "reason")

    def __init__(self, rule: str, category: str, reason: str):
        object.__setattr__(self, "rule", rule)  # stable rule id, e.g. "rm_rf"
        object.__setattr__(self, "category", category)  # anchor category ("destructive_operation", "secrets")
        object.__setattr__(self, "reason", reason)  # one factual sentence for the user

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("RuleHit is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RuleHit) and (self.rule, self.category, self.reason) == (
            other.rule, other.category, other.reason)

    def __hash__(self) -> int:
        return hash((self.rule, self.category, self.reason))

    def __repr__(self) -> str:
        return f"RuleHit(rule={self.rule!r}, category={self.category!r}, reason={self.reason!r})"


DESTRUCTIVE = "destructive_operation"
SECRETS = "secrets"

# rm -rf is routine on generated or cached folders; these never hold source.
_SAFE_RM_LAST = {
    "node_modules", "dist", "build", ".cache", "__pycache__", "target", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", ".tox", ".nox", ".venv-build", "coverage", "htmlcov", ".next", ".nuxt", ".parcel-cache",
    ".turbo", ".gradle", "out", "tmp", ".tmp", "*.egg-info", ".eggs", "site", "_build", ".coverage",
}
_SAFE_RM_PREFIXES = ("/tmp/", "/var/tmp/", "$TMPDIR/", "${TMPDIR}/")
_SHARED_BRANCH = re.compile(r"^(main|master|develop|dev|trunk|production|prod|release([/_.-].*)?|stable)$")

_SEP = re.compile(r"\|\||&&|;|\||\n|\$\(|`")
_SQL_DROP = re.compile(r"\b(drop\s+(table|database|schema|index|view)|truncate\s+(table\s+)?\w)", re.I)
_SQL_DELETE = re.compile(r"\bdelete\s+from\s+[\w.\"`\[\]]+", re.I)
_CHMOD_777 = re.compile(r"\bchmod\s+(-\w+\s+)*(0?777|a\+rwx|ugo\+rwx)\b")


def _split_commands(command: str) -> list[list[str]]:
    """Split a shell line into simple commands (argv lists); best effort on bad quoting."""
    out = []
    for part in _SEP.split(command):
        part = part.strip()
        if not part:
            continue
        try:
            argv = shlex.split(part, comments=True)
        except ValueError:
            argv = part.split()
        # Drop leading env assignments and wrappers that do not change meaning.
        while argv and (re.match(r"^\w+=", argv[0]) or argv[0] in ("sudo", "nohup", "time", "command", "exec", "env")):
            argv = argv[1:]
        if argv:
            out.append(argv)
    return out


def _rm_target_is_safe(target: str) -> bool:
    t = target.strip().strip("'\"")
    if not t:
        return True
    if any(t.startswith(p) for p in _SAFE_RM_PREFIXES) and ".." not in t:
        return t.rstrip("/") not in ("/tmp", "/var/tmp")  # the whole of /tmp is not a cache dir
    last = t.rstrip("/").split("/")[-1]
    if last in _SAFE_RM_LAST or last.endswith(".egg-info"):
        return ".." not in t and not t.startswith("/") or t.startswith(("/tmp/", "/var/tmp/"))
    return False


def _check_rm(argv: list[str]) -> RuleHit | None:
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))
    long_flags = {a for a in argv[1:] if a.startswith("--")}
    recursive = "r" in flags.lower() or "--recursive" in long_flags
    force = "f" in flags or "--force" in long_flags
    if not (recursive and force):
        return None
    targets = [a for a in argv[1:] if not a.startswith("-")]
    unsafe = [t for t in targets if not _rm_target_is_safe(t)] or ([] if targets else ["(no target)"])
    if not unsafe:
        return None
    return RuleHit("rm_rf", DESTRUCTIVE, f"rm -rf on {', '.join(unsafe[:3])}: recursive forced delete outside build/cache dirs")


def _check_git(argv: list[str]) -> RuleHit | None:
    args = argv[1:]
    # skip global options such as -C dir / -c key=val
    while len(args) >= 2 and args[0] in ("-C", "-c", "--git-dir", "--work-tree"):
        args = args[2:]
    if not args:
        return None
    sub, rest = args[0], args[1:]
    if sub == "push":
        force = any(a in ("--force", "-f") or (a.startswith("-") and not a.startswith("--") and "f" in a) for a in rest)
        lease = any(a.startswith("--force-with-lease") or a.startswith("--force-if-includes") for a in rest)
        plus_refs = [a for a in rest if a.startswith("+")]
        if not (force or lease or plus_refs):
            return None
        positional = [a.lstrip("+") for a in rest if not a.startswith("-")]
        refs = positional[1:] if len(positional) > 1 else []
        branches = [r.split(":")[-1].removeprefix("refs/heads/") for r in refs]
        shared = [b for b in branches if _SHARED_BRANCH.match(b)]
        if shared:
            return RuleHit("git_push_force", DESTRUCTIVE, f"force push to shared branch {shared[0]} rewrites published history")
        if (force or plus_refs) and not branches:
            return RuleHit("git_push_force", DESTRUCTIVE, "force push without a named branch may rewrite a shared branch")
        return None  # --force[-with-lease] to a named feature branch is ordinary
    if sub == "reset" and "--hard" in rest:
        return RuleHit("git_reset_hard", DESTRUCTIVE, "git reset --hard discards uncommitted work irreversibly")
    if sub == "clean":
        flags = "".join(a[1:] for a in rest if a.startswith("-") and not a.startswith("--"))
        if ("f" in flags or "--force" in rest) and "n" not in flags and "--dry-run" not in rest:
            return RuleHit("git_clean_force", DESTRUCTIVE, "git clean -f deletes untracked files irreversibly")
    if sub == "branch" and any(a == "-D" for a in rest):
        names = [a for a in rest if not a.startswith("-")]
        if any(_SHARED_BRANCH.match(n) for n in names):
            return RuleHit("git_branch_delete", DESTRUCTIVE, "force-deleting a shared branch")
    return None


def _check_kill(argv: list[str]) -> RuleHit | None:
    name, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    if name == "killall":
        return RuleHit("broad_kill", DESTRUCTIVE, "killall ends every process with that name")
    if name == "pkill":
        pattern = [a for a in args if not a.startswith("-")]
        if "-f" in args or any(len(p) <= 6 or p in ("python", "node", "java", "ruby", "bash") for p in pattern):
            return RuleHit("broad_kill", DESTRUCTIVE, "pkill on a broad pattern can end unrelated processes")
    if name == "kill":
        if any(a in ("-9", "-KILL", "-SIGKILL", "-s9") for a in args) and any(a in ("-1", "0") or a.startswith("$(") for a in args):
            return RuleHit("broad_kill", DESTRUCTIVE, "kill -9 on every process")
        if any(a in ("-9", "-KILL", "-SIGKILL") for a in args) and not any(a.isdigit() for a in args):
            return RuleHit("broad_kill", DESTRUCTIVE, "kill -9 on a computed or broad set of processes")
    return None


def _check_sql(text: str) -> RuleHit | None:
    m = _SQL_DROP.search(text)
    if m:
        return RuleHit("sql_drop", DESTRUCTIVE, f"{m.group(0).split()[0].upper()} removes tables or data irreversibly")
    for m in _SQL_DELETE.finditer(text):
        tail = text[m.end():m.end() + 300]
        stmt_end = re.search(r";|\"|'|$", tail)
        stmt = tail[: stmt_end.start()] if stmt_end else tail
        if not re.search(r"\bwhere\b", stmt, re.I):
            return RuleHit("sql_delete_all", DESTRUCTIVE, "DELETE without WHERE removes every row")
    return None


def check_command(command: str) -> RuleHit | None:
    """The first destructive pattern in a shell command line, or None."""
    if not command or not command.strip():
        return None
    for argv in _split_commands(command):
        head = argv[0].rsplit("/", 1)[-1]
        hit = None
        if head == "rm":
            hit = _check_rm(argv)
        elif head == "git":
            hit = _check_git(argv)
        elif head in ("kill", "pkill", "killall"):
            hit = _check_kill(argv)
        elif head == "chmod" and _CHMOD_777.search(" ".join(argv)):
            hit = RuleHit("chmod_777", DESTRUCTIVE, "chmod 777 makes files world-writable")
        elif head in ("dd", "mkfs") or head.startswith("mkfs."):
            if head != "dd" or any(a.startswith("of=/dev/") for a in argv):
                hit = RuleHit("disk_overwrite", DESTRUCTIVE, "writes a raw device or filesystem")
        if hit:
            return hit
    return _check_sql(command) or check_secrets(command)


def check_secrets(text: str) -> RuleHit | None:
    """A credential-shaped string in ``text`` (the shapes of :mod:`.secrets`), as a rule hit."""
    label = find_secret(text)
    if label is None:
        return None
    name = label.replace("-", "_")
    return RuleHit(f"secret_{name}", SECRETS, f"contains a credential-shaped string ({label.replace('-', ' ')})")

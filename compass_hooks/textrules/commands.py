"""Destructive shell and SQL commands: what patterns do better than embeddings.

``check_command`` is the PreToolUse(Bash) guard's rule set and the drift rules' check of a command a prompt
asks to run. The command line is parsed (:mod:`.shell`), not matched: every simple command is found, including
those in pipelines, lists, subshells, brace groups, ``if``/``for`` bodies, ``$(…)``, backticks, ``<(…)`` and
unquoted here-documents; wrappers are unwrapped (``sudo``, ``doas``, ``env``, ``timeout``, ``nice``, ``ionice``,
``stdbuf``, ``nohup``, ``time``, ``command``, ``exec``, ``busybox``, ``xargs``, ``bash -c``/``sh -c``, ``eval``,
``find -exec``) before the command itself is judged, and git's global options (``-C``, ``-c``,
``--no-pager``) are skipped. Echoed or quoted text (``echo "rm -rf ~"``, a commit message, a quoted
here-document) is data, not a command.

Stdlib only: the hook process imports this module with ``python -I -S`` on every Bash command. Linear in the
length of the command (see :mod:`.shell`); the guard asks outright about commands longer than
:data:`MAX_COMMAND` rather than read them in part.
"""

from __future__ import annotations

import re

from .secrets import _Lazy, find_secret
from .shell import Command, Group, TooDeep, Word, parse


class RuleHit:
    """A rule that fired. A plain immutable class: ``dataclasses`` pulls in ``inspect`` (slow to import:
    docs/hooks.md), and the PreToolUse hook imports this module on every Bash command."""

    __slots__ = ("rule", "category", "reason")
    rule: str
    category: str
    reason: str

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
MAX_COMMAND = 262_144  # characters; the guard asks about longer commands instead of reading part of them

# rm -rf is routine on generated or cached folders; these never hold source.
_SAFE_RM_LAST = {
    "node_modules", "dist", "build", ".cache", "__pycache__", "target", ".pytest_cache", ".mypy_cache",
    ".ruff_cache", ".tox", ".nox", ".venv-build", "coverage", "htmlcov", ".next", ".nuxt", ".parcel-cache",
    ".turbo", ".gradle", "out", "tmp", ".tmp", "*.egg-info", ".eggs", "site", "_build", ".coverage",
    ".venv", "venv",  # a virtualenv is recreated from the lockfile
}
_SAFE_RM_PREFIXES = ("/tmp/", "/var/tmp/", "$TMPDIR/", "${TMPDIR}/")
# What `find -name` may delete without asking: bytecode and editor/OS litter.
_SAFE_FIND_NAMES = {"*.pyc", "*.pyo", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.egg-info",
                    ".DS_Store", "*.class", "*.o", "*.tmp", "*~", "*.orig", "*.rej", "*.swp", "node_modules"}
_SHARED_BRANCH = _Lazy(r"^(main|master|develop|dev|trunk|production|prod|release([/_.-].*)?|stable)$")

_SQL_DROP = _Lazy(r"\b(drop\s+(table|database|schema|index|view)|truncate\s+(table\s+)?\w)", re.I)
_SQL_DELETE = _Lazy(r"\bdelete\s+from\s+[\w.\"`\[\]]+", re.I)
_SQL_UPDATE = _Lazy(r"\bupdate\s+[\w.\"`\[\]]+\s+set\b", re.I)
_SQL_WHERE = _Lazy(r"\bwhere\b", re.I)
_SQL_LITERAL = _Lazy(r"'[^']*'")
_MONGO_DROP = _Lazy(r"\.(?:drop(?:Database)?|dropCollection)\s*\(|\.(?:deleteMany|remove)\s*\(\s*\{\s*\}", re.I)
_CHMOD_777 = _Lazy(r"^(0?777|a\+rwx|ugo\+rwx|a=rwx)$")
_ASSIGNMENT = _Lazy(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_FORK_BOMB = _Lazy(r"(?P<f>[\w:.]{1,30})\s{0,3}\(\)\s{0,3}\{\s{0,3}(?P=f)\s{0,3}\|\s{0,3}(?P=f)\s{0,3}&")
# Files whose content is a credential, and where an upload or a pipe out of them is exfiltration.
_SECRET_PATH = _Lazy(r"(?:^|[/@~=])(?:\.ssh\b|id_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws(?:/|\b)|\.env\b|\.netrc\b|"
                          r"\.npmrc\b|\.pypirc\b|\.git-credentials\b|\.docker/config\.json|\.kube/config|\.gnupg\b|"
                          r"credentials\b|/etc/shadow\b|secrets?\.(?:ya?ml|json|txt)\b)")
# Files that a truncating redirection (`> FILE`) must not clobber without asking.
_PRECIOUS = _Lazy(r"(?:^|/)(?:\.(?:bash|zsh|ksh)rc|\.profile|\.bash_profile|\.zprofile|\.zshenv|\.env|"
                       r"authorized_keys|known_hosts|id_[a-z0-9]+)$|(?:^|/)\.ssh/|(?:^|/)\.git/|^/etc/|^~/\.[^/]+$")
_HOME = _Lazy(r"^(?:~|\$HOME|\$\{HOME[^}]*\})(?:/\*?)?$|^/home/[^/]+/?$|^/home/\$")
_ROOTS = ("/", "/*", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/home", "/opt", "/root")
_SAFE_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom")

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox-sh"}
_INTERPRETERS = {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "deno", "bun"}
_DOWNLOADERS = {"curl", "wget", "fetch", "aria2c", "http", "https", "xh"}
_NET_SINKS = {"curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "openssl", "ssh", "scp", "rsync", "sftp"}
_DB_CLIENTS = {"psql", "mysql", "mariadb", "sqlite3", "sqlite", "duckdb", "clickhouse-client", "cockroach", "sqlcmd"}
_DATA_ONLY = {"echo", "printf", "alias", "type", "which", "man", "help", "whatis", "apropos", "grep", "egrep",
              "fgrep", "rg", "ag", "ack", "sed", "awk", "history", "true", "false", ":", "test", "[", "[["}

# Wrappers: name -> (options that take a value, whether the first non-option is a value, not the command).
_WRAPPERS: dict[str, tuple[frozenset[str], bool]] = {
    "sudo": (frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-T", "-U", "-R", "--user", "--group",
                        "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--command-timeout",
                        "--other-user", "--chroot"}), False),
    "doas": (frozenset({"-u", "-C"}), False),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), True),
    "nice": (frozenset({"-n", "--adjustment"}), False),
    "ionice": (frozenset({"-c", "-n", "-p", "-P", "-u", "--class", "--classdata", "--pid", "--pgid", "--uid"}), False),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), False),
    "nohup": (frozenset(), False),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), False),
    "command": (frozenset(), False),
    "builtin": (frozenset(), False),
    "exec": (frozenset({"-a"}), False),
    "setsid": (frozenset(), False),
    "chroot": (frozenset({"--userspec", "--groups"}), True),
    "flock": (frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}), True),
    "unbuffer": (frozenset(), False),
    "caffeinate": (frozenset({"-t", "-w"}), False),
    "chrt": (frozenset(), True),
    "taskset": (frozenset(), True),
    "watch": (frozenset({"-n", "-d", "--interval", "--differences"}), False),
    "strace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), False),
    "ltrace": (frozenset({"-o", "-e", "-p", "-s", "-u"}), False),
}


def _hit(rule: str, reason: str) -> RuleHit:
    return RuleHit(rule, DESTRUCTIVE, reason)


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _is_dynamic(text: str) -> bool:
    return "$" in text or "`" in text


def _rm_target_is_safe(target: str) -> bool:
    t = target.strip().strip("'\"")
    if not t:
        return True
    if any(t.startswith(p) for p in _SAFE_RM_PREFIXES) and ".." not in t:
        return t.rstrip("/") not in ("/tmp", "/var/tmp")  # the whole of /tmp is not a cache dir
    if _is_dynamic(t):
        return False  # "$d", "${HOME:?}/*", "$(…)": decided at run time
    last = t.rstrip("/").split("/")[-1]
    if last in _SAFE_RM_LAST or last.endswith(".egg-info"):
        return ".." not in t and not t.startswith("/") or t.startswith(("/tmp/", "/var/tmp/"))
    return False


def _short_flags(args: list[str], with_value: str = "") -> str:
    """The letters of the short options in ``args`` (``-rf`` -> "rf"), up to ``--``; a letter in ``with_value``
    takes the rest of its word or the next word as its value."""
    out = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a == "--":
            break
        if a.startswith("-") and not a.startswith("--") and len(a) > 1:
            for j, ch in enumerate(a[1:]):
                out.append(ch)
                if ch in with_value:
                    skip = j == len(a) - 2
                    break
    return "".join(out)


# --------------------------------------------------------------------------- single commands


class _Ctx:
    """What the command's surroundings say: its arguments come from input (xargs, find -exec), its stdin is
    a download (curl | sh), and how deep we are in nested scripts."""

    __slots__ = ("from_input", "stdin_download", "stdin_text", "depth", "budget")

    def __init__(self, from_input: bool = False, stdin_download: bool = False, depth: int = 0,
                 budget: list[int] | None = None, stdin_text: tuple[str, ...] = ()):
        self.from_input = from_input
        self.stdin_download = stdin_download
        self.stdin_text = stdin_text  # what echo/printf/a here-document upstream feed in: a script for `| sh`
        self.depth = depth
        # Characters left to parse across every nested script (eval, sh -c, interpreter strings): re-parsing
        # "eval eval eval …" would otherwise cost the length times the depth.
        self.budget = budget if budget is not None else [4 * MAX_COMMAND]

    def inner(self, **changes: bool) -> _Ctx:
        """The context one level down (a nested script), sharing the budget."""
        return _Ctx(from_input=changes.get("from_input", False), stdin_download=changes.get("stdin_download", False),
                    depth=self.depth + 1, budget=self.budget)


def _check_rm(argv: list[str], ctx: _Ctx) -> RuleHit | None:
    args = argv[1:]
    flags = _short_flags(args)
    long_flags = {a for a in args if a.startswith("--")}
    recursive = "r" in flags.lower() or "--recursive" in long_flags
    force = "f" in flags or "--force" in long_flags
    if ctx.from_input and (recursive or force):
        return _hit("rm_rf", "rm -r/-f on paths read from input (xargs, find): what it deletes is not visible here")
    if not (recursive and force):
        return None
    targets = []
    after_dashes = False
    for a in args:
        if a == "--" and not after_dashes:
            after_dashes = True
        elif after_dashes or not a.startswith("-"):
            targets.append(a)
    unsafe = [t for t in targets if not _rm_target_is_safe(t)] or ([] if targets else ["(no target)"])
    if not unsafe:
        return None
    return _hit("rm_rf", f"rm -rf on {', '.join(unsafe[:3])}: recursive forced delete outside build/cache dirs")


def _git_subcommand(args: list[str]) -> tuple[str, list[str], list[str]]:
    """(subcommand, its arguments, the global options before it)."""
    i = 0
    glob: list[str] = []
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix",
                 "--config-env") and i + 1 < len(args):
            glob += [a, args[i + 1]]
            i += 2
            continue
        glob.append(a)
        i += 1
    if i >= len(args):
        return "", [], glob
    return args[i], args[i + 1:], glob


def _check_git(argv: list[str]) -> RuleHit | None:
    sub, rest, glob = _git_subcommand(argv[1:])
    for j, a in enumerate(glob):
        if a == "-c" and j + 1 < len(glob) and glob[j + 1].lower().startswith("core.hookspath"):
            return _hit("git_no_verify", "git -c core.hooksPath=… skips the repository's hooks (secret scanning)")
    if sub == "push":
        return _check_git_push(rest)
    if sub == "reset" and "--hard" in rest:
        return _hit("git_reset_hard", "git reset --hard discards uncommitted work irreversibly")
    if sub == "clean":
        flags = _short_flags(rest)
        if ("f" in flags or "--force" in rest) and "n" not in flags and "--dry-run" not in rest:
            return _hit("git_clean_force", "git clean -f deletes untracked files irreversibly")
    if sub in ("checkout", "restore"):
        paths = rest[rest.index("--") + 1:] if "--" in rest else [a for a in rest if not a.startswith("-")]
        everything = any(p in (".", "*", ":/", ":/*", "./") for p in paths)
        staged_only = sub == "restore" and "--staged" in rest and "--worktree" not in rest and "-W" not in rest
        forced = sub == "checkout" and ("-f" in rest or "--force" in rest)
        if (everything and not staged_only) or forced:
            return _hit("git_discard", f"git {sub} of the whole tree discards uncommitted changes irreversibly")
    if sub == "stash" and rest[:1] in (["clear"], ["drop"]):
        return _hit("git_stash_drop", f"git stash {rest[0]} deletes stashed work irreversibly")
    if sub == "branch":
        flags = _short_flags(rest)
        force_delete = "D" in flags or (("d" in flags or "--delete" in rest) and ("f" in flags or "--force" in rest))
        names = [a for a in rest if not a.startswith("-")]
        if force_delete and any(_SHARED_BRANCH.match(n) for n in names):
            return _hit("git_branch_delete", "force-deleting a shared branch")
    if sub == "update-ref" and ("-d" in rest or "--delete" in rest):
        return _hit("git_update_ref_delete", "git update-ref -d deletes a ref without any safety check")
    if sub in ("filter-branch", "filter-repo"):
        return _hit("git_history_rewrite", f"git {sub} rewrites the whole history")
    if sub == "reflog" and rest[:1] in (["expire"], ["delete"]):
        return _hit("git_reflog_expire", "expiring the reflog removes the way back to lost commits")
    if sub == "gc" and any(a.startswith("--prune=now") or a == "--prune=all" for a in rest):
        return _hit("git_reflog_expire", "git gc --prune=now deletes unreachable commits at once")
    if sub == "commit" and ("--no-verify" in rest or "n" in _short_flags(rest, "mFcCt")):
        return _hit("git_no_verify", "git commit --no-verify skips the pre-commit hooks (secret scanning, linters)")
    return None


def _check_git_push(rest: list[str]) -> RuleHit | None:
    flags = _short_flags(rest, "o")
    longs = {a.split("=", 1)[0] for a in rest if a.startswith("--")}
    if "--no-verify" in longs:
        return _hit("git_no_verify", "git push --no-verify skips the pre-push hooks")
    if "n" in flags or "--dry-run" in longs:
        return None
    if "d" in flags or "--delete" in longs:
        return _hit("git_push_delete", "git push --delete removes a branch or tag on the remote")
    if "--mirror" in longs or "--prune" in longs:
        return _hit("git_push_delete", "git push --mirror/--prune deletes remote refs that are missing locally")
    force = "f" in flags or "--force" in longs
    lease = "--force-with-lease" in longs or "--force-if-includes" in longs
    positional = [a for a in rest if not a.startswith("-")]
    refs = positional[1:]
    deleted = [r for r in refs if r.startswith(":")]
    if deleted:
        return _hit("git_push_delete", f"git push {deleted[0]} deletes {deleted[0][1:]} on the remote")
    plus = [r for r in refs if r.startswith("+")]
    if not (force or lease or plus):
        return None
    if "--all" in longs or "--tags" in longs:
        return _hit("git_push_force", "force push of every branch or tag rewrites published history")
    branches = [r.lstrip("+").split(":")[-1].removeprefix("refs/heads/") for r in refs]
    shared = [b for b in branches if _SHARED_BRANCH.match(b)]
    if shared:
        return _hit("git_push_force", f"force push to shared branch {shared[0]} rewrites published history")
    if (force or plus) and not branches:
        return _hit("git_push_force", "force push without a named branch may rewrite a shared branch")
    return None  # --force[-with-lease] to a named feature branch is ordinary


def _check_kill(argv: list[str]) -> RuleHit | None:
    name, args = _base(argv[0]), argv[1:]
    if name == "killall":
        return _hit("broad_kill", "killall ends every process with that name")
    if name == "pkill":
        pattern = []
        skip = False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-u", "-U", "-g", "-G", "-P", "-s", "-t", "--uid", "--euid", "--group", "--parent", "--session",
                     "--terminal", "--signal"):
                skip = True
                continue
            if not a.startswith("-"):
                pattern.append(a)
        if not pattern:
            return _hit("broad_kill", "pkill without a pattern ends every process of that user or group")
        broad = [p for p in pattern if len(p) <= 6 or p in ("python", "python3", "node", "java", "ruby", "bash")
                 or p.strip(".*^$") == ""]
        if broad:
            return _hit("broad_kill", "pkill on a broad pattern can end unrelated processes")
    if name == "kill":
        strong = any(a in ("-9", "-KILL", "-SIGKILL", "-s9") for a in args)
        if strong and any(a in ("-1", "0") or a.startswith("$(") for a in args):
            return _hit("broad_kill", "kill -9 on every process")
        if strong and not any(a.isdigit() for a in args):
            return _hit("broad_kill", "kill -9 on a computed or broad set of processes")
    return None


def check_sql(text: str) -> RuleHit | None:
    """DROP/TRUNCATE, and DELETE or UPDATE without WHERE, in SQL text (its string literals ignored)."""
    text = _SQL_LITERAL.sub("''", text)
    m = _SQL_DROP.search(text)
    if m:
        return _hit("sql_drop", f"{m.group(0).split()[0].upper()} removes tables or data irreversibly")
    for rx, rule, what in ((_SQL_DELETE, "sql_delete_all", "DELETE without WHERE removes every row"),
                           (_SQL_UPDATE, "sql_update_all", "UPDATE without WHERE rewrites every row")):
        for m in rx.finditer(text):
            tail = text[m.end():m.end() + 300]
            end = tail.find(";")
            if not _SQL_WHERE.search(tail if end < 0 else tail[:end]):
                return _hit(rule, what)
    if _MONGO_DROP.search(text):
        return _hit("sql_drop", "dropping a database or collection, or deleting every document, is irreversible")
    return None


def _check_db(head: str, argv: list[str], heredocs: list[str]) -> RuleHit | None:
    if head == "redis-cli":
        if any(a.lower() in ("flushall", "flushdb") for a in argv[1:]):
            return _hit("redis_flush", "FLUSHALL/FLUSHDB deletes every key")
        return None
    for text in argv[1:] + heredocs:
        hit = check_sql(text)
        if hit:
            return hit
    return None


def _check_find(argv: list[str], ctx: _Ctx) -> RuleHit | None:
    args = argv[1:]
    roots = []
    for a in args:
        if a.startswith(("-", "(", "!")) or a in ("(", ")", "!"):
            break
        roots.append(a)
    names = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-name", "-iname", "-path", "-ipath")]
    safe_scope = bool(names) and all(n in _SAFE_FIND_NAMES for n in names) and not any(
        r.startswith(("/", "~")) or _is_dynamic(r) for r in roots)
    if "-delete" in args and not safe_scope:
        return _hit("find_delete", f"find {' '.join(roots) or '.'} -delete removes every file it matches")
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            inner = args[i + 1:j]
            if inner:
                head = _base(inner[0])
                if head in ("rm", "shred", "unlink", "rmdir"):
                    if not safe_scope:
                        return _hit("find_delete", f"find -exec {head} removes every file it matches")
                else:
                    hit = _judge(inner, Command(), ctx.inner(from_input=True))
                    if hit:
                        return hit
            i = j
        i += 1
    return None


def _check_code(head: str, code: str, ctx: _Ctx) -> RuleHit | None:
    """Inline interpreter code (python -c, perl -e, node -e, ruby -e): shell strings it runs, and deletions."""
    for m in re.finditer(r"(?:system|exec|execSync|execFileSync|spawn|spawnSync|popen|Popen|call|run|check_call|"
                         r"check_output|getoutput|shell_exec|passthru)\s{0,3}\(\s{0,3}(?P<arg>\[[^\]\n]{0,2000}\]|"
                         r"(?P<q>[\"'])[^\"'\n]{1,2000}(?P=q))", code):
        arg = m.group("arg")
        # A list argument (subprocess.run(["rm", "-rf", path])) is the argv: its strings joined are the command.
        words = re.findall(r"[\"']([^\"'\n]{0,500})[\"']", arg) if arg.startswith("[") else [arg[1:-1]]
        hit = _check_text(" ".join(w or "''" for w in words) + (" $computed" if arg.startswith("[") and
                                                                 re.search(r",\s{0,3}[A-Za-z_]", arg) else ""),
                          ctx.inner())
        if hit:
            return hit
    for m in re.finditer(r"`(?P<cmd>[^`\n]{1,2000})`", code):
        if head in ("perl", "ruby", "php"):
            hit = _check_text(m.group("cmd"), ctx.inner())
            if hit:
                return hit
    for m in re.finditer(r"\b(?:rmtree|rmSync|rm_rf|rm_r|remove_dir_all|rimraf|removeSync|emptyDirSync|rmdirSync)"
                         r"\s{0,3}\(\s{0,3}(?P<arg>[^)\n]{0,200})", code):
        arg = m.group("arg").split(",")[0].strip()
        literal = arg[1:-1] if len(arg) > 1 and arg[0] == arg[-1] and arg[0] in "\"'" else None
        if literal is None or not _rm_target_is_safe(literal):
            return _hit("rm_rf", f"{head} code deletes a directory tree ({arg[:40] or 'computed path'})")
    return None


def _check_redirects(cmd: Command) -> RuleHit | None:
    for op, target in cmd.redirects:
        path = target.text
        if op in (">", ">|", "&>", ">>", "&>>", "<>") and path.startswith("/dev/") and path not in _SAFE_DEVICES \
                and not path.startswith("/dev/fd/"):
            return _hit("disk_overwrite", f"writes straight to the device {path}")
        if op in (">", ">|", "&>") and _PRECIOUS.search(path):
            return _hit("clobber_file", f"> {path} empties a file that is hard to restore")
    return None


def _check_named(head: str, argv: list[str], cmd: Command, ctx: _Ctx) -> RuleHit | None:
    """The rules for one command name (after unwrapping)."""
    args = argv[1:]
    if head == "rm":
        return _check_rm(argv, ctx)
    if head == "git":
        return _check_git(argv)
    if head in ("kill", "pkill", "killall"):
        return _check_kill(argv)
    if head == "find":
        return _check_find(argv, ctx)
    if head == "chmod":
        if any(_CHMOD_777.match(a) for a in args):
            return _hit("chmod_777", "chmod 777 makes files world-writable")
        return None
    if head == "chown" and ("-R" in args or "--recursive" in args):
        targets = [a for a in args if not a.startswith("-")][1:]
        if any(t.rstrip("/") in _ROOTS or t == "/" or _HOME.match(t) for t in targets):
            return _hit("chown_system", "recursive chown of a system or home directory")
        return None
    if head == "dd":
        if any(a.startswith("of=/dev/") and a[3:] not in _SAFE_DEVICES for a in args):
            return _hit("disk_overwrite", "writes a raw device")
        return None
    if head in ("mkfs", "mkswap", "fdisk", "sfdisk", "parted", "sgdisk", "gdisk") or head.startswith("mkfs."):
        if any(a.startswith("/dev/") for a in args):
            return _hit("disk_overwrite", "writes a raw device or filesystem")
        return None
    if head in ("wipefs", "shred", "blkdiscard"):
        return _hit("disk_overwrite", f"{head} destroys data irreversibly")
    if head == "truncate":
        sizes = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-s", "--size")]
        sizes += [a[2:] for a in args if a.startswith("-s") and len(a) > 2] + [a[7:] for a in args if a.startswith("--size=")]
        files = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in ("-s", "--size"))]
        if any(s.strip() in ("0", "0K", "0M") for s in sizes) and any(
                not (f.startswith(("/tmp/", "/var/tmp/")) or f.endswith(".log")) for f in files):
            return _hit("clobber_file", "truncate -s 0 empties the file")
        return None
    if head in ("mv", "cp"):
        files = [a for a in args if not a.startswith("-")]
        if head == "mv" and files and files[-1] == "/dev/null":
            return _hit("clobber_file", "moving files to /dev/null deletes them")
        if head == "cp" and files and files[0] == "/dev/null":
            return _hit("clobber_file", "copying /dev/null over a file empties it")
        return None
    if head == "crontab" and ("-r" in args or "r" in _short_flags(args)):
        return _hit("crontab_remove", "crontab -r deletes every scheduled job without a backup")
    if head == "rsync" and any(a.startswith("--delete") or a == "--remove-source-files" for a in args):
        return _hit("rsync_delete", "rsync --delete removes files in the destination that the source lacks")
    if head in _DB_CLIENTS or head in ("mongosh", "mongo", "redis-cli"):
        return _check_db(head, argv, [h[0] for h in cmd.heredocs])
    if head == "kubectl":
        return _check_kubectl(args)
    if head == "helm" and args[:1] and args[0] in ("uninstall", "delete", "del", "un"):
        return _hit("cloud_delete", "helm uninstall removes a release and its resources")
    if head in ("terraform", "tofu", "terragrunt"):
        if "destroy" in args or ("apply" in args and "-destroy" in args):
            return _hit("cloud_delete", "terraform destroy deletes the managed infrastructure")
        return None
    if head == "pulumi" and "destroy" in args:
        return _hit("cloud_delete", "pulumi destroy deletes the stack's resources")
    if head in ("aws", "gcloud", "az", "doctl", "heroku", "flyctl", "fly", "vercel", "netlify"):
        return _check_cloud(head, args)
    if head in ("docker", "podman"):
        return _check_docker(args, cmd)
    if head in ("npm", "yarn", "pnpm", "cargo", "poetry", "gem", "twine", "uv", "flit", "hatch", "bun"):
        return _check_publish(head, args)
    if head in ("pip", "pip3") or (head.startswith("python") and args[:2] == ["-m", "pip"]):
        if "--break-system-packages" in args:
            return _hit("pip_break_system", "--break-system-packages overrides PEP 668 and can break OS tools")
        return None
    return None


def _check_kubectl(args: list[str]) -> RuleHit | None:
    if not args or args[0] not in ("delete", "drain", "replace"):
        return None
    if args[0] == "drain":
        return _hit("cloud_delete", "kubectl drain evicts every pod on the node")
    kinds = [a.lower() for a in args[1:] if not a.startswith("-")][:1]
    if any(a in ("--all", "-A", "--all-namespaces") for a in args) or "--force" in args and "--grace-period=0" in args:
        return _hit("cloud_delete", "kubectl delete --all removes every matching resource")
    if kinds and kinds[0].split("/")[0] in ("namespace", "namespaces", "ns", "node", "nodes", "no", "pv",
                                            "persistentvolume", "persistentvolumes", "pvc", "crd",
                                            "customresourcedefinition", "customresourcedefinitions"):
        return _hit("cloud_delete", f"kubectl delete {kinds[0]} removes it with everything in it")
    ns = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-n", "--namespace")]
    ns += [a.split("=", 1)[1] for a in args if a.startswith("--namespace=")]
    if any(n.lower() in ("prod", "production", "kube-system", "default") for n in ns) and kinds and \
            kinds[0].split("/")[0] not in ("pod", "pods", "po"):
        return _hit("cloud_delete", f"kubectl delete in namespace {ns[0]}")
    return None


def _check_cloud(head: str, args: list[str]) -> RuleHit | None:
    words = [a.lower() for a in args if not a.startswith("-")]
    if head == "aws" and words[:2] == ["s3", "rm"] and ("--recursive" in args):
        return _hit("cloud_delete", "aws s3 rm --recursive deletes every object under the prefix")
    if head == "aws" and words[:2] == ["s3", "rb"]:
        return _hit("cloud_delete", "aws s3 rb removes the bucket")
    verbs = [w for w in words if w in ("delete", "destroy", "remove", "purge", "terminate", "rb", "wipe")
             or w.startswith(("delete-", "terminate-", "remove-", "purge-", "destroy-"))]
    if verbs:
        return _hit("cloud_delete", f"{head} {verbs[0]} deletes cloud resources irreversibly")
    return None


def _check_docker(args: list[str], cmd: Command) -> RuleHit | None:
    words = [a for a in args if not a.startswith("-")]
    flags = _short_flags(args)
    computed = any(w.dynamic for w in cmd.words)
    if words[:2] in (["system", "prune"],) and ("a" in flags or "--all" in args or "--volumes" in args):
        return _hit("docker_prune", "docker system prune -a/--volumes deletes images and volumes")
    if words[:2] in (["volume", "rm"], ["volume", "prune"], ["volume", "remove"]):
        return _hit("docker_prune", "removing docker volumes deletes their data")
    if words[:1] in (["rm"], ["rmi"]) or words[:2] in (["container", "rm"], ["image", "rm"], ["container", "prune"]):
        if computed or "--all" in args:
            return _hit("docker_prune", "docker rm on a computed list removes every matching container or image")
    return None


def _check_publish(head: str, args: list[str]) -> RuleHit | None:
    words = [a for a in args if not a.startswith("-")]
    dry = "--dry-run" in args or ("-n" in args and head == "cargo")
    if head == "twine" and words[:1] == ["upload"]:
        return _hit("publish", "twine upload publishes to PyPI; a version cannot be reused")
    if head == "gem" and words[:1] == ["push"]:
        return _hit("publish", "gem push publishes to RubyGems")
    if words[:1] == ["publish"] and not dry:
        return _hit("publish", f"{head} publish is public and irreversible (a version number cannot be reused)")
    return None


# --------------------------------------------------------------------------- unwrapping and pipelines


def _resolve_head(word: Word) -> str:
    """The command name of a word: ``$(echo rm)`` and backticks echoing a word read as that word."""
    if not word.dynamic or not word.subs:
        return word.text
    if len(word.subs) == 1 and word.text.startswith(("$(", "`")):
        pipelines = word.subs[0]
        if len(pipelines) == 1 and len(pipelines[0]) == 1 and isinstance(pipelines[0][0], Command):
            argv = pipelines[0][0].argv()
            if argv and _base(argv[0]) in ("echo", "printf") and len(argv) >= 2:
                return " ".join(a for a in argv[1:] if not a.startswith("-") or a == "-")
    return word.text


def _unwrap(argv: list[str], ctx: _Ctx) -> tuple[list[str], _Ctx, str | None]:
    """Strip assignments and wrappers; returns (argv of the command that runs, context, inline script to parse
    (``sh -c``, ``eval``, ``env -S``) or None)."""
    for _ in range(32):  # wrappers of wrappers, bounded
        k = 0
        while k < len(argv) and _ASSIGNMENT.match(argv[k]):
            k += 1
        argv = argv[k:]
        if not argv:
            return argv, ctx, None
        head = _base(argv[0])
        if head == "env":
            i = 1
            script = None
            while i < len(argv):
                a = argv[i]
                if a in ("-u", "-C", "--unset", "--chdir"):
                    i += 2
                    continue
                if a in ("-S", "--split-string"):
                    script = argv[i + 1] if i + 1 < len(argv) else ""
                    return [], ctx, script + " " + " ".join(argv[i + 2:])
                if a.startswith("-") or _ASSIGNMENT.match(a):
                    i += 1
                    continue
                break
            argv = argv[i:]
            continue
        if head in ("xargs",):
            i = 1
            while i < len(argv) and argv[i].startswith("-"):
                a = argv[i]
                i += 2 if a in ("-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--delimiter", "--max-args",
                                "--max-procs", "--arg-file", "--replace", "--max-lines") else 1
            argv = argv[i:] or ["echo"]
            ctx = _Ctx(from_input=True, stdin_download=ctx.stdin_download, depth=ctx.depth, budget=ctx.budget)
            continue
        if head == "busybox" and len(argv) > 1:
            argv = argv[1:]
            continue
        if head == "command" and len(argv) > 1 and argv[1] in ("-v", "-V"):
            return [], ctx, None  # a lookup, nothing runs
        if head == "eval":
            return [], ctx, " ".join(argv[1:])
        if head in _WRAPPERS:
            takes, value_first = _WRAPPERS[head]
            i = 1
            while i < len(argv):
                a = argv[i]
                if a == "--":
                    i += 1
                    break
                if not a.startswith("-") or a == "-":
                    break
                if a in takes:
                    i += 2
                    continue
                if head in ("nice",) and a[1:].lstrip("-").isdigit():  # nice -10 cmd
                    i += 1
                    continue
                i += 1
            if value_first and i < len(argv):
                i += 1  # timeout DURATION, chroot NEWROOT, flock FILE, taskset MASK
            argv = argv[i:]
            continue
        return argv, ctx, None
    return argv, ctx, None


def _shell_script(argv: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (any option cluster holding ``c``: ``-lc``, ``-ec``)."""
    for i, a in enumerate(argv[1:], 1):
        if a == "--":
            return None
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if not a.startswith(("-", "+")):
            return None
    return None


def _downloads(node: Command | Group) -> bool:
    """Whether this pipeline element prints a download to stdout (curl URL, wget -O-)."""
    if isinstance(node, Group):
        return any(_downloads(n) for p in node.body for n in p)
    argv, _, _ = _unwrap(node.argv(), _Ctx())
    if not argv:
        return False
    head = _base(argv[0])
    if head not in _DOWNLOADERS:
        return False
    if head == "wget":
        return any(a in ("-O-", "-qO-", "-O", "--output-document=-") or a.endswith("O-") for a in argv[1:]) and \
            not any(a.startswith("-O") and a not in ("-O-", "-O") and not a.endswith("O-") for a in argv[1:])
    return not any(a in ("-o", "-O", "--output", "--remote-name", "--output-dir") or a.startswith("--output=")
                   for a in argv[1:])


def _has_download(words: list[Word]) -> bool:
    for w in words:
        for sub in w.subs:
            for pipeline in sub:
                if any(_downloads(n) for n in pipeline):
                    return True
    return False


def _reads_secrets(node: Command | Group) -> bool:
    if isinstance(node, Group):
        return any(_reads_secrets(n) for p in node.body for n in p)
    raw = node.argv()
    if raw and _base(raw[0]) in ("env", "printenv") and all(a.startswith("-") for a in raw[1:]):
        return True  # the whole environment: every token and key the session has
    argv, _, _ = _unwrap(raw, _Ctx())
    if not argv:
        return False
    head = _base(argv[0])
    if head in ("env", "printenv", "set", "export", "declare") and len(argv) <= 2:
        return True
    return head in ("cat", "tar", "base64", "gzip", "zip", "less", "head", "tail", "xxd", "od", "strings", "cp",
                    "openssl", "gpg", "zstd", "bzip2", "xz") and any(_SECRET_PATH.search(a) for a in argv[1:])


def _sends(node: Command | Group) -> bool:
    if isinstance(node, Group):
        return any(_sends(n) for p in node.body for n in p)
    argv, _, _ = _unwrap(node.argv(), _Ctx())
    return bool(argv) and _base(argv[0]) in _NET_SINKS


def _judge(argv: list[str], cmd: Command, ctx: _Ctx) -> RuleHit | None:
    """One simple command after its substitutions were checked: unwrap, then the rules for its name."""
    argv, ctx, inline = _unwrap(argv, ctx)
    if inline is not None:
        return _check_text(inline, ctx.inner())
    if not argv:
        return None
    head = _base(argv[0])
    if head in _DATA_ONLY:
        return None
    if head in _SHELLS or head in ("source", "."):
        script = _shell_script(argv) if head in _SHELLS else None
        if script is not None:
            return _check_text(script, ctx.inner())
        reads_stdin = not [a for a in argv[1:] if not a.startswith("-")]
        if ctx.stdin_download and reads_stdin:
            return _hit("pipe_to_shell", "runs a downloaded script unseen (curl … | sh)")
        if reads_stdin:
            for script in ctx.stdin_text:  # echo 'rm -rf ~' | bash
                hit = _check_text(script, ctx.inner())
                if hit:
                    return hit
        if any(a.startswith(("<(", "/dev/fd/")) for a in argv[1:]) and _has_download(cmd.words):
            return _hit("pipe_to_shell", "runs a downloaded script unseen (sh <(curl …))")
        heredoc_scripts = [h[0] for h in cmd.heredocs]
        for body in heredoc_scripts:
            hit = _check_text(body, ctx.inner())
            if hit:
                return hit
        return None
    if head in _INTERPRETERS or re.match(r"^(?:python|pypy)\d[\d.]*$", head):
        if ctx.stdin_download and not [a for a in argv[1:] if not a.startswith("-")]:
            return _hit("pipe_to_shell", f"runs downloaded code unseen (curl … | {head})")
        for i, a in enumerate(argv[1:-1], 1):
            if a in ("-c", "-e", "-E", "--eval", "-p", "--print", "-r"):
                return _check_code(head, argv[i + 1], ctx)
        return None
    if head in ("ssh", "mosh") and len(argv) > 2:  # ssh HOST COMMAND…: the command runs in a shell there
        i, takes = 1, set("BbcDEeFIiJLlmOoPpQRSWw")
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if len(argv[i]) == 2 and argv[i][1] in takes else 1
        if i + 1 < len(argv):
            return _check_text(" ".join(argv[i + 1:]), ctx.inner())
        return None
    if head in _DOWNLOADERS:
        for i, a in enumerate(argv[1:], 1):
            value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else (argv[i + 1] if i + 1 < len(argv) else "")
            if a in ("-F", "--form", "-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "-T",
                     "--upload-file", "--post-file", "--body-file") or a.split("=", 1)[0] in (
                        "--form", "--data", "--data-binary", "--post-file", "--body-file", "--upload-file"):
                if _SECRET_PATH.search(value) and ("@" in value or a in ("-T", "--upload-file", "--post-file",
                                                                          "--body-file")):
                    return _hit("exfiltration", "uploads a credentials file")
        return None
    hit = _check_named(head, argv, cmd, ctx)
    if hit is None and head.lower() in ("drop", "delete", "truncate", "update", "alter"):  # SQL quoted in a prompt
        hit = check_sql(" ".join(argv))
    return hit


def _pipeline(pipeline: list, ctx: _Ctx, names: dict[str, str] | None = None) -> RuleHit | None:
    downloaded = secrets_read = False  # what the elements before this one do (one pass: no rescans)
    for i, node in enumerate(pipeline):
        if i:
            prev = pipeline[i - 1]
            downloaded = downloaded or _downloads(prev)
            secrets_read = secrets_read or _reads_secrets(prev)
        if isinstance(node, Group):
            hit = _script(node.body, ctx)
            if hit:
                return hit
            continue
        hit = _check_redirects(node)
        if hit:
            return hit
        for w in node.words:
            for sub in w.subs:
                hit = _script(sub, ctx.inner())
                if hit:
                    return hit
        for _, w in node.redirects:
            for sub in w.subs:
                hit = _script(sub, ctx.inner())
                if hit:
                    return hit
        for _, _, subs in node.heredocs:
            for sub in subs:
                hit = _script(sub, ctx.inner())
                if hit:
                    return hit
        if node.words and node.words[0].dynamic and _has_download(node.words[:1]):
            return _hit("pipe_to_shell", "runs a downloaded script unseen ($(curl …))")
        fed: tuple[str, ...] = ()
        if i and isinstance(pipeline[i - 1], Command):
            prev_cmd = pipeline[i - 1]
            if prev_cmd.words and _base(prev_cmd.words[0].text) in ("echo", "printf"):
                fed = (" ".join(prev_cmd.argv()[1:]),)
            fed += tuple(h[0] for h in prev_cmd.heredocs)
        here = _Ctx(from_input=ctx.from_input, stdin_download=downloaded, depth=ctx.depth, budget=ctx.budget,
                    stdin_text=fed)
        argv = node.argv()
        if node.words:
            argv[0] = _resolve_head(node.words[0])
            if names and argv[0] in names:  # X=rm; $X -rf ~
                argv[0] = names[argv[0]]
        hit = _judge(argv, node, here)
        if hit:
            return hit
        if argv and _is_dynamic(argv[0]):  # a command name computed at run time: judge rm-like arguments anyway
            hit = _check_rm(["rm", *argv[1:]], here)
            if hit:
                return _hit("rm_rf", "a command whose name is computed at run time, with rm -rf arguments: "
                            + hit.reason)
        if secrets_read and _sends(node):
            return _hit("exfiltration", "pipes credentials or the environment to the network")
        if i and argv and _base(argv[0]) in _DB_CLIENTS | {"mongosh", "mongo", "redis-cli"}:
            for up in pipeline[max(0, i - 4):i]:  # echo 'DROP TABLE x' | psql
                if isinstance(up, Command) and up.words and _base(up.words[0].text) in ("echo", "printf", "cat"):
                    hit = _check_db(_base(argv[0]), ["-"] + up.argv()[1:], [h[0] for h in up.heredocs])
                    if hit:
                        return hit
    return None


def _script(script: list, ctx: _Ctx) -> RuleHit | None:
    if ctx.depth > 24:
        return _hit("unreadable_command", "commands nested too deeply to check")
    names: dict[str, str] = {}  # NAME=word assignments seen so far, for a command named $NAME later
    for pipeline in script:
        hit = _pipeline(pipeline, ctx, names)
        if hit:
            return hit
        for node in pipeline:
            if isinstance(node, Command) and node.words and all(_ASSIGNMENT.match(w.text) for w in node.words):
                for w in node.words:
                    name, _, value = w.text.partition("=")
                    names["$" + name.rstrip("+")] = names["${" + name.rstrip("+") + "}"] = value
    return None


def check_command(command: str) -> RuleHit | None:
    """The first destructive pattern in a shell command line, or None.

    Longer than :data:`MAX_COMMAND`: only the head is read (the guard asks about such commands before calling
    this; the drift rules pass short code spans)."""
    if not command or not command.strip():
        return None
    return _check_text(command, _Ctx(depth=-1)) or check_secrets(command)


def _check_text(text: str, ctx: _Ctx) -> RuleHit | None:
    """A (possibly nested) script: ``sh -c`` strings, ``eval`` arguments, strings an interpreter runs."""
    text = text[:MAX_COMMAND]
    ctx.budget[0] -= len(text)
    if ctx.budget[0] < 0:
        return _hit("unreadable_command", "too much nested shell code to check")
    if _FORK_BOMB.search(text):
        return _hit("fork_bomb", "a fork bomb exhausts the machine's processes")
    try:
        script = parse(text)
    except (TooDeep, RecursionError):
        return _hit("unreadable_command", "commands nested too deeply to check")
    return _script(script, _Ctx(depth=ctx.depth + 1, budget=ctx.budget))


def check_secrets(text: str) -> RuleHit | None:
    """A credential-shaped string in ``text`` (the shapes of :mod:`.secrets`), as a rule hit."""
    label = find_secret(text)
    if label is None:
        return None
    name = label.replace("-", "_")
    return RuleHit(f"secret_{name}", SECRETS, f"contains a credential-shaped string ({label.replace('-', ' ')})")

"""A small POSIX-ish shell parser for the PreToolUse guard: enough structure to see which commands a Bash line
runs, not to run it.

The guard answers in the hook process under ``python -I -S`` (no site-packages, so no bashlex), on every Bash
command, so this is stdlib only, import-light and linear: one pass over the text, an explicit depth limit for
nesting, no regular expressions that can backtrack. Unclosed quotes and substitutions simply run to the end
of the input (a 1 MB unclosed quote costs one scan).

What it understands: words with quote removal (``'…'``, ``"…"``, ``$'…'``, backslash escapes, so ``r""m`` and
``\\rm`` read ``rm``), parameter expansions (kept as written, marked dynamic), command substitutions
``$(…)`` and backticks and process substitutions ``<(…)``/``>(…)`` (parsed as nested scripts), pipelines
(``|``, ``|&``), lists (``;``, ``&``, ``&&``, ``||``, newlines), subshells ``( … )`` and brace groups
``{ …; }``, redirections with their targets, here-documents (bodies skipped as data when the delimiter is
quoted, scanned for substitutions when it is not), here-strings, comments, line continuations, and the
reserved words of ``if``/``while``/``for``/``case`` (skipped, so the commands inside are seen).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs the hook process milliseconds (docs/hooks.md)
if TYPE_CHECKING:
    from typing import TypeAlias

MAX_DEPTH = 48  # nested substitutions/groups deeper than this are refused (the guard asks)

_BLANK = " \t"
_META = " \t\n;&|<>()"
# Reserved words that introduce or close a compound command; the command proper follows them.
_KEYWORDS = frozenset({"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "!", "esac", "time"})


class TooDeep(Exception):
    """Nesting beyond MAX_DEPTH: the caller treats the command as unreadable."""


class Word:
    """One shell word: ``text`` after quote removal (expansions kept as written), whether it holds an
    expansion (``dynamic``) or was quoted, and the scripts of its command substitutions (``subs``)."""

    __slots__ = ("text", "dynamic", "quoted", "subs")

    def __init__(self) -> None:
        self.text = ""
        self.dynamic = False
        self.quoted = False
        self.subs: list[list[list[Node]]] = []

    def __repr__(self) -> str:
        return f"Word({self.text!r})"


class Command:
    """A simple command: its words, its redirections ``(operator, target word)`` and its here-documents
    ``(body, delimiter was quoted, substitutions in the body)``."""

    __slots__ = ("words", "redirects", "heredocs")

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.redirects: list[tuple[str, Word]] = []
        self.heredocs: list[tuple[str, bool, list]] = []

    def argv(self) -> list[str]:
        return [w.text for w in self.words]

    def __repr__(self) -> str:
        return f"Command({self.argv()!r})"


class Group:
    """A subshell ``( … )`` or brace group ``{ …; }``: a nested script."""

    __slots__ = ("body",)

    def __init__(self, body: list[list[Node]]) -> None:
        self.body = body

    def __repr__(self) -> str:
        return f"Group({self.body!r})"


Node: TypeAlias = "Command | Group"  # a pipeline is a list of nodes; a script is a list of pipelines


def parse(src: str) -> list[list]:
    """The script of ``src``: a list of pipelines, each a list of :class:`Command` / :class:`Group`."""
    return _Parser(src).script(None)


class _Parser:
    def __init__(self, src: str, depth: int = 0) -> None:
        self.s = src
        self.n = len(src)
        self.i = 0
        self.depth = depth
        self.pending: list[tuple[Command, str, bool, bool]] = []  # here-docs waiting for the next newline

    # ------------------------------------------------------------------ lists and pipelines

    def script(self, closer: str | None) -> list[list]:
        """Pipelines until ``closer`` (")" or "}") or the end of the input."""
        if self.depth > MAX_DEPTH:
            raise TooDeep()
        s, n = self.s, self.n
        pipelines: list[list] = []
        pipe: list = []
        cmd: Command | None = None
        skip_header = ""  # "for"/"select"/"case": words up to the separator (or "in") are not a command

        def end_command() -> None:
            nonlocal cmd
            if cmd is not None and (cmd.words or cmd.redirects or cmd.heredocs):
                pipe.append(cmd)
            cmd = None

        def end_pipeline() -> None:
            nonlocal pipe
            end_command()
            if pipe:
                pipelines.append(pipe)
            pipe = []

        while self.i < n:
            c = s[self.i]
            if c in _BLANK:
                self.i += 1
                continue
            if c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
                continue
            if c == "#":  # a comment: we are at the start of a word here
                nl = s.find("\n", self.i)
                self.i = n if nl < 0 else nl
                continue
            if c == "\n":
                self.i += 1
                skip_header = ""
                end_pipeline()
                self._read_heredocs()
                continue
            if c == ")":
                self.i += 1
                if closer == ")":
                    end_pipeline()
                    return pipelines
                end_pipeline()  # a case pattern's ")" or a stray one: a separator
                continue
            if c in ";&|":
                op = s[self.i:self.i + 2]
                if op in ("&&", "||", ";;", "|&", ";&"):
                    self.i += 2
                else:
                    op = c
                    self.i += 1
                skip_header = ""
                if op in ("|", "|&"):
                    end_command()
                else:
                    end_pipeline()
                continue
            if c in "<>" or (c.isdigit() and self._redirect_ahead()):
                if c in "<>" and s.startswith("(", self.i + 1):  # <(…) / >(…): a word
                    pass
                else:
                    if cmd is None:
                        cmd = Command()
                    self._redirect(cmd)
                    continue
            if c == "(" and (cmd is None or not cmd.words):
                if s.startswith("((", self.i):  # (( arithmetic )): no commands inside
                    self._skip_arith(self.i + 2)
                    continue
                self.i += 1
                end_command()
                pipe.append(Group(self._sub_script(")")))
                continue
            if c == "(":  # name() { …; }: a function definition; its body is parsed as a group
                close = s.find(")", self.i)
                self.i = n if close < 0 else close + 1
                end_command()
                continue
            word = self.word()
            if word is None:
                self.i += 1
                continue
            text = word.text
            in_position = cmd is None or not cmd.words
            if skip_header:
                if skip_header == "case" and text == "in" and not word.quoted:
                    skip_header = ""
                continue
            if in_position and not word.quoted:
                if text == "{":
                    end_command()
                    pipe.append(Group(self._sub_script("}")))
                    continue
                if text == "}" and closer == "}":
                    end_pipeline()
                    return pipelines
                if text in _KEYWORDS:
                    continue
                if text in ("for", "select", "case", "function"):
                    skip_header = "case" if text == "case" else "for"
                    if text == "function":
                        skip_header = ""
                        self._skip_name()
                    continue
            if cmd is None:
                cmd = Command()
            cmd.words.append(word)
        end_pipeline()
        return pipelines

    def _sub_script(self, closer: str) -> list[list]:
        """A nested script that continues in this text (a group or ``$(…)``): parsed in place."""
        saved = self.depth
        self.depth += 1
        try:
            return self.script(closer)
        finally:
            self.depth = saved

    def _skip_name(self) -> None:
        while self.i < self.n and self.s[self.i] in _BLANK:
            self.i += 1
        while self.i < self.n and self.s[self.i] not in _META:
            self.i += 1

    def _skip_arith(self, start: int) -> None:
        depth, i, s, n = 2, start, self.s, self.n
        while i < n and depth > 0:
            if s[i] == "(":
                depth += 1
            elif s[i] == ")":
                depth -= 1
            i += 1
        self.i = i

    # ------------------------------------------------------------------ redirections and here-documents

    def _redirect_ahead(self) -> bool:
        j = self.i
        while j < self.n and self.s[j].isdigit():
            j += 1
        return j < self.n and self.s[j] in "<>" and j - self.i <= 3

    def _redirect(self, cmd: Command) -> None:
        s = self.s
        start = self.i
        while self.i < self.n and s[self.i].isdigit():
            self.i += 1
        for op in ("<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"):
            if s.startswith(op, self.i):
                self.i += len(op)
                break
        else:  # pragma: no cover - _redirect_ahead guarantees an operator
            self.i = start + 1
            return
        op = s[start:self.i].lstrip("0123456789")
        while self.i < self.n and s[self.i] in _BLANK:
            self.i += 1
        target = self.word() or Word()
        if op in ("<<", "<<-"):
            quoted = target.quoted or "\\" in s[start:self.i]
            self.pending.append((cmd, target.text, quoted, op == "<<-"))
            return
        cmd.redirects.append((op, target))

    def _read_heredocs(self) -> None:
        """Bodies of the here-documents opened on the line that just ended."""
        pending, self.pending = self.pending, []
        s, n = self.s, self.n
        for cmd, delim, quoted, strip_tabs in pending:
            start = self.i
            body_end = n
            while self.i < n:
                nl = s.find("\n", self.i)
                line_end = n if nl < 0 else nl
                line = s[self.i:line_end]
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    body_end = self.i
                    self.i = n if nl < 0 else nl + 1
                    break
                self.i = n if nl < 0 else nl + 1
            body = s[start:body_end]
            subs = [] if quoted else _Parser(body, self.depth + 1).expansions()
            cmd.heredocs.append((body, quoted, subs))

    def expansions(self) -> list:
        """The command substitutions in text read like a double-quoted string (an unquoted here-doc body)."""
        word = Word()
        self._dquote_body(word, None)
        return word.subs

    # ------------------------------------------------------------------ words

    def word(self) -> Word | None:
        """One word from here (quote removal done, substitutions parsed); None at a metacharacter."""
        s, n = self.s, self.n
        w = Word()
        parts: list[str] = []
        start = self.i
        while self.i < n:
            c = s[self.i]
            if c in "<>" and s.startswith("(", self.i + 1) and self.i == start:
                self.i += 2
                w.subs.append(self._sub_script(")"))
                parts.append(s[start:self.i])
                w.dynamic = True
                continue
            if c in _META:
                break
            if c == "\\":
                if self.i + 1 < n:
                    if s[self.i + 1] != "\n":
                        parts.append(s[self.i + 1])
                    self.i += 2
                else:
                    self.i += 1
                w.quoted = True
                continue
            if c == "'":
                end = s.find("'", self.i + 1)
                end = n if end < 0 else end
                parts.append(s[self.i + 1:end])
                self.i = end + 1
                w.quoted = True
                continue
            if c == '"':
                self.i += 1
                w.quoted = True
                parts.append(self._dquote_body(w, '"'))
                continue
            if c == "$":
                parts.append(self._dollar(w))
                continue
            if c == "`":
                parts.append(self._backtick(w))
                continue
            parts.append(c)
            self.i += 1
        if self.i == start:
            return None
        w.text = "".join(parts)
        return w

    def _dquote_body(self, w: Word, closer: str | None) -> str:
        """Inside double quotes (or a here-doc body when ``closer`` is None): escapes, ``$`` and backticks."""
        s, n = self.s, self.n
        parts: list[str] = []
        while self.i < n:
            c = s[self.i]
            if closer is not None and c == closer:
                self.i += 1
                break
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] != "\n":
                    parts.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "$":
                parts.append(self._dollar(w))
                continue
            if c == "`":
                parts.append(self._backtick(w))
                continue
            parts.append(c)
            self.i += 1
        return "".join(parts)

    def _dollar(self, w: Word) -> str:
        s, n = self.s, self.n
        start = self.i
        nxt = s[self.i + 1] if self.i + 1 < n else ""
        if nxt == "(":
            if s.startswith("$((", self.i):
                self._skip_arith(self.i + 3)
                w.dynamic = True
                return s[start:self.i]
            self.i += 2
            w.subs.append(self._sub_script(")"))
            w.dynamic = True
            return s[start:self.i]
        if nxt == "{":
            depth, i = 0, self.i + 1
            while i < n:
                if s[i] == "{":
                    depth += 1
                elif s[i] == "}":
                    depth -= 1
                    if depth == 0:
                        i += 1
                        break
                i += 1
            self.i = i
            w.dynamic = True
            return s[start:self.i]
        if nxt == "'":  # $'…': ANSI-C quoting
            self.i += 2
            out: list[str] = []
            while self.i < n and s[self.i] != "'":
                if s[self.i] == "\\" and self.i + 1 < n:
                    esc = s[self.i + 1]
                    out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", "e": "\x1b"}.get(esc, esc))
                    self.i += 2
                    continue
                out.append(s[self.i])
                self.i += 1
            self.i += 1
            w.quoted = True
            return "".join(out)
        if nxt.isalnum() or nxt == "_":
            i = self.i + 1
            while i < n and (s[i].isalnum() or s[i] == "_"):
                i += 1
            self.i = i
            w.dynamic = True
            return s[start:self.i]
        if nxt and nxt in "@*#?$!-":
            self.i += 2
            w.dynamic = True
            return s[start:self.i]
        self.i += 1
        return "$"

    def _backtick(self, w: Word) -> str:
        s, n = self.s, self.n
        start = self.i
        i = self.i + 1
        inner: list[str] = []
        while i < n and s[i] != "`":
            if s[i] == "\\" and i + 1 < n and s[i + 1] in "`\\$":
                inner.append(s[i + 1])
                i += 2
                continue
            inner.append(s[i])
            i += 1
        self.i = min(n, i + 1)
        w.subs.append(_Parser("".join(inner), self.depth + 1).script(None))
        w.dynamic = True
        return s[start:self.i]


def walk_commands(script: list[list]):
    """Every :class:`Command` of a script, nested groups and substitutions included (depth first)."""
    stack = [script]
    while stack:
        for pipeline in stack.pop():
            for node in pipeline:
                if isinstance(node, Group):
                    stack.append(node.body)
                    continue
                yield node
                for w in node.words:
                    stack.extend(w.subs)
                for _, w in node.redirects:
                    stack.extend(w.subs)
                for _, _, subs in node.heredocs:
                    stack.extend(subs)

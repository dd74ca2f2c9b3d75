"""Edit one member of a JSON-with-comments file in place, keeping everything else byte for byte.

Zed's settings.json (and VS Code's mcp.json) are JSONC: ``//`` and ``/* */`` comments and trailing commas.
Parsing them with ``json`` fails, and re-serialising a parsed copy would drop every comment the user wrote. So
the writer finds where the member it owns sits in the text (a small parser that records the position of every
object member and skips comments and strings) and replaces, inserts or deletes just that span; the result is
checked by parsing it again (:func:`loads`). Stdlib only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


class JSONCError(ValueError):
    """The text is not JSON with comments (message says where)."""


@dataclass
class Node:
    kind: str  # object | array | scalar
    start: int
    end: int  # one past the last character of the value
    members: list[tuple[str, int, "Node"]] = field(default_factory=list)  # (key, key start, value) for objects


_WS = " \t\r\n\ufeff"
_SCALAR = re.compile(r'-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null')


class _Parser:
    def __init__(self, text: str):
        self.text = text

    def where(self, i: int) -> str:
        line = self.text.count("\n", 0, i) + 1
        return f"line {line}"

    def skip(self, i: int) -> int:
        """Past whitespace and comments."""
        t = self.text
        while i < len(t):
            if t[i] in _WS:
                i += 1
            elif t.startswith("//", i):
                j = t.find("\n", i)
                i = len(t) if j < 0 else j + 1
            elif t.startswith("/*", i):
                j = t.find("*/", i + 2)
                if j < 0:
                    raise JSONCError(f"unclosed /* comment at {self.where(i)}")
                i = j + 2
            else:
                break
        return i

    def string(self, i: int) -> tuple[str, int]:
        t = self.text
        j = i + 1
        while j < len(t):
            c = t[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                try:
                    return json.loads(t[i:j + 1]), j + 1
                except ValueError as exc:
                    raise JSONCError(f"bad string at {self.where(i)}: {exc}") from None
            if c == "\n":
                break
            j += 1
        raise JSONCError(f"unclosed string at {self.where(i)}")

    def value(self, i: int) -> Node:
        t = self.text
        i = self.skip(i)
        if i >= len(t):
            raise JSONCError("unexpected end of the file")
        c = t[i]
        if c == "{":
            node = Node("object", i, i)
            j = self.skip(i + 1)
            while j < len(t) and t[j] != "}":
                if t[j] != '"':
                    raise JSONCError(f"expected a key at {self.where(j)}")
                key, k_end = self.string(j)
                colon = self.skip(k_end)
                if colon >= len(t) or t[colon] != ":":
                    raise JSONCError(f"expected ':' at {self.where(colon)}")
                val = self.value(colon + 1)
                node.members.append((key, j, val))
                j = self.skip(val.end)
                if j < len(t) and t[j] == ",":
                    j = self.skip(j + 1)
                elif j < len(t) and t[j] != "}":
                    raise JSONCError(f"expected ',' or '}}' at {self.where(j)}")
            if j >= len(t):
                raise JSONCError("unclosed object")
            node.end = j + 1
            return node
        if c == "[":
            node = Node("array", i, i)
            j = self.skip(i + 1)
            while j < len(t) and t[j] != "]":
                val = self.value(j)
                j = self.skip(val.end)
                if j < len(t) and t[j] == ",":
                    j = self.skip(j + 1)
                elif j < len(t) and t[j] != "]":
                    raise JSONCError(f"expected ',' or ']' at {self.where(j)}")
            if j >= len(t):
                raise JSONCError("unclosed array")
            node.end = j + 1
            return node
        if c == '"':
            _, end = self.string(i)
            return Node("scalar", i, end)
        m = _SCALAR.match(t, i)
        if not m:
            raise JSONCError(f"unexpected {t[i]!r} at {self.where(i)}")
        return Node("scalar", i, m.end())


def parse(text: str) -> Node:
    """The document's root value with member positions; an empty document is an empty object at 0."""
    p = _Parser(text)
    if p.skip(0) >= len(text):
        return Node("object", -1, -1)
    root = p.value(0)
    if p.skip(root.end) != len(text):
        raise JSONCError(f"text after the end of the document at {p.where(p.skip(root.end))}")
    return root


def loads(text: str) -> Any:
    """Parse JSONC into Python values (comments and trailing commas dropped)."""
    p = _Parser(text)
    out = []
    i = 0
    while i < len(text):
        j = p.skip(i)
        if j > i:
            out.append(" ")
            i = j
            continue
        if text[i] == '"':
            _, end = p.string(i)
            out.append(text[i:end])
            i = end
            continue
        if text[i] == ",":
            nxt = p.skip(i + 1)
            if nxt < len(text) and text[nxt] in "}]":
                i += 1  # a trailing comma
                continue
        out.append(text[i])
        i += 1
    body = "".join(out).strip()
    return json.loads(body) if body else {}


def _line_indent(text: str, i: int) -> str:
    start = text.rfind("\n", 0, i) + 1
    prefix = text[start:i]
    return prefix if not prefix.strip() else prefix[:len(prefix) - len(prefix.lstrip(" \t"))]


def _dump(value: Any, indent: str, step: str) -> str:
    lines = json.dumps(value, indent=len(step) or 2, ensure_ascii=False).split("\n")
    return "\n".join([lines[0]] + [indent + line for line in lines[1:]])


def _member(node: Node, key: str) -> tuple[int, Node] | None:
    found = [(k_start, v) for k, k_start, v in node.members if k == key]
    return found[-1] if found else None  # JSON's last-one-wins


def set_member(text: str, container: str, key: str, value: Any) -> str:
    """``text`` with ``root[container][key] = value``, creating ``container`` when missing."""
    root = parse(text)
    if root.kind != "object":
        raise JSONCError("the file does not hold a JSON object")
    if root.start < 0:
        return json.dumps({container: {key: value}}, indent=2, ensure_ascii=False) + "\n"
    outer = _member(root, container)
    if outer is None:
        return _insert(text, root, container, {key: value})
    box = outer[1]
    if box.kind != "object":
        raise JSONCError(f'"{container}" is not an object')
    mine = _member(box, key)
    if mine is None:
        return _insert(text, box, key, value)
    k_start, val = mine
    indent = _line_indent(text, k_start)
    step = _step(text, box, indent)
    return text[:val.start] + _dump(value, indent, step) + text[val.end:]


def _step(text: str, node: Node, inner: str) -> str:
    outer = _line_indent(text, node.start)
    return inner[len(outer):] if inner.startswith(outer) and len(inner) > len(outer) else "  "


def _insert(text: str, obj: Node, key: str, value: Any) -> str:
    """Insert ``"key": value`` as the first member of ``obj`` (no trailing-comma questions at the end)."""
    outer = _line_indent(text, obj.start)
    if obj.members:
        indent = _line_indent(text, obj.members[0][1])
        if not indent or "\n" not in text[obj.start:obj.members[0][1]]:
            indent = outer + "  "
    else:
        indent = outer + "  "
    step = indent[len(outer):] if indent.startswith(outer) and len(indent) > len(outer) else "  "
    member = f'\n{indent}{json.dumps(key)}: {_dump(value, indent, step)}'
    after = obj.start + 1
    if obj.members:
        return text[:after] + member + "," + text[after:]
    close = obj.end - 1
    return text[:after] + member + "\n" + outer + text[close:]


def remove_member(text: str, container: str, key: str) -> str | None:
    """``text`` without ``root[container][key]``; None when it is not there."""
    root = parse(text)
    outer = _member(root, container) if root.kind == "object" and root.start >= 0 else None
    if outer is None or outer[1].kind != "object":
        return None
    box = outer[1]
    p = _Parser(text)
    for n, (k, k_start, val) in enumerate(box.members):
        if k != key:
            continue
        line_start = text.rfind("\n", 0, k_start) + 1
        start = line_start if not text[line_start:k_start].strip() else k_start
        after = p.skip(val.end)
        if after < len(text) and text[after] == ",":
            end = after + 1
            if n + 1 < len(box.members):  # up to the next member's line, keeping its indentation
                nxt = box.members[n + 1][1]
                nl = text.rfind("\n", end, nxt)
                end = nl + 1 if nl >= 0 and start == line_start else end
            elif start == line_start:
                nl = text.find("\n", end)
                end = nl + 1 if nl >= 0 and not text[end:nl].strip() else end
            return text[:start] + text[end:]
        if n > 0:  # the last member: drop the comma after the one before it
            prev_end = box.members[n - 1][2].end
            comma = text.find(",", prev_end, k_start)
            return text[:comma if comma >= 0 else prev_end] + text[val.end:]
        return text[:box.start + 1] + text[box.end - 1:]
    return None

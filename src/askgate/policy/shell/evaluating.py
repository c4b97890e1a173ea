"""Expansions that evaluate a variable's text as code, wherever they stand.

bash evaluates arithmetic (`$(( ))`, array subscripts, substring offsets) and follows
indirection (`${!x}`) and prompt expansion (`${x@P}`) on the *value* of a variable, and
a value such as `a[$(curl …)]` runs the command substitution inside it. Where that value
is not known from the command itself, the whole command is ask — in an argument, an
assignment, an env prefix, a `for` list, a `case` subject, a heredoc body or a
here-string alike (the syntax tree holds them all).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.words import Node

# Triggers worth a walk of the tree: `${` and `$((` / `$[`.
_TRIGGER = lazy_compile(rb"\$\{|\$\(\(|\$\[|=\(")
# Variables bash keeps as plain integers itself.
_INTEGER_VARIABLES = frozenset(
    {"RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID", "OPTIND",
     "EPOCHSECONDS", "COLUMNS", "LINES", "SHLVL", "HISTCMD", "#", "?", "$", "!"}
)  # fmt: skip
_ASSIGNMENT = lazy_compile(r"(?<![\w$])([A-Za-z_][A-Za-z0-9_]*)(\+?=)([^\s;&|)]*)")
_FOR_NUMBERS = lazy_compile(r"\bfor\s+([A-Za-z_]\w*)\s+in\s+([-\d\s]+?)\s*;")
_DIGITS = lazy_compile(r"^-?[0-9]+$")
_SAFE_INDEX = frozenset({"number", "@", "*"})
_NAME_KINDS = frozenset({"variable_name", "special_variable_name"})
_VALUE_KINDS = frozenset(
    {"variable_name", "special_variable_name", "simple_expansion", "expansion",
     "command_substitution", "subscript", "word"}
)  # fmt: skip


def integer_variables(text: str) -> set[str]:
    """Variables the command only ever sets to literal integers (`n=5`, `for i in 1 2`)."""
    values: dict[str, bool] = {}
    for name, operator, value in _ASSIGNMENT.findall(text):
        plain = operator == "=" and bool(_DIGITS.match(value))
        values[name] = values.get(name, True) and plain
    for name, _ in _FOR_NUMBERS.findall(text):
        values.setdefault(name, True)
    for name in re.findall(r"\b(?:read|mapfile|readarray|getopts|printf\s+-v)\b[^;&|\n]*", text):
        for word in name.split()[1:]:
            values[word] = False
    return {name for name, plain in values.items() if plain}


def evaluating_expansions(root: Node, src: bytes, known: set[str]) -> list[str]:
    """Why each expansion under root evaluates unknown text as code (empty: none)."""
    if not _TRIGGER.search(src):
        return []
    reasons: list[str] = []
    for node in _expansions(root):
        reason = _evaluates(node, src, known)
        if reason:
            reasons.append(reason)
            if len(reasons) >= 3:
                break
    return reasons


def _expansions(root: Node) -> Iterator[Node]:
    cursor = root.walk()
    while True:
        node = cursor.node
        if node.type in ("expansion", "arithmetic_expansion", "array"):
            yield node
        elif node.type == "command_substitution" and node.text.startswith(b"$(("):
            yield node  # tree-sitter reads `$((x))` in heredocs and `${x:=…}` this way
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _names(node: Node, src: bytes) -> Iterator[str]:
    """Every variable a piece of syntax reads (anything else that varies: `?`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.type
        if kind in _NAME_KINDS:
            yield _text(current, src)
        elif kind in ("command_substitution", "process_substitution") and current is not node:
            yield "$( )"
        elif kind == "word" and not _DIGITS.match(_text(current, src)):
            yield _text(current, src)
        else:
            stack.extend(current.children)


def _unknown(node: Node, src: bytes, known: set[str]) -> str | None:
    for name in _names(node, src):
        if name not in known and name not in _INTEGER_VARIABLES:
            return name
    return None


def _evaluates(node: Node, src: bytes, known: set[str]) -> str | None:
    shown = _text(node, src)[:80]
    if node.type in ("arithmetic_expansion", "command_substitution"):
        name = _unknown(node, src, known)
        if name is not None:
            return f"`{shown}` evaluates `{name}` as arithmetic, which can run commands"
        return None
    if node.type == "array":
        return _array_keys(node, src, known)
    kids = [c for c in node.children if c.type not in ("${", "}")]
    if not kids:
        return None
    if kids[0].type == "!":
        listing = len(kids) >= 3 and kids[2].type in ("*", "@")
        keys = len(kids) >= 2 and kids[1].type == "subscript" and _safe_subscript(kids[1])
        if not (listing or keys):
            return f"`{shown}` follows a variable named by another variable's text"
        return None
    for index, kid in enumerate(kids):
        if kid.type == "@" and index + 1 < len(kids) and _text(kids[index + 1], src) == "P":
            return f"`{shown}` expands a value as a prompt, which runs its substitutions"
        if kid.type == "subscript" and not _safe_subscript(kid):
            index_node = kid.child_by_field_name("index")
            if index_node is None or _unknown(index_node, src, known) is not None:
                return f"`{shown}` evaluates an array subscript as arithmetic"
        if kid.type == ":" and index + 1 < len(kids):
            offsets = [k for k in kids[index + 1 :] if k.type in _VALUE_KINDS or k.is_named]
            for offset in offsets:
                if offset.type == "number":
                    continue
                if _unknown(offset, src, known) is not None:
                    return f"`{shown}` evaluates a substring offset as arithmetic"
            break
    return None


def _safe_subscript(subscript: Node) -> bool:
    index = subscript.child_by_field_name("index")
    if index is None:
        return False
    text = index.text.decode("utf-8", "replace")
    return index.type in _SAFE_INDEX or text in ("@", "*") or _DIGITS.match(text) is not None


def _array_keys(array: Node, src: bytes, known: set[str]) -> str | None:
    """`a=([KEY]=v)`: an indexed array's KEY is arithmetic (an associative array's,
    declared `-A` in the same declaration, is not)."""
    for element in array.named_children:
        parts = element.children if element.type == "concatenation" else ()
        if not parts or _text(parts[0], src) != "[":
            continue
        closing = next((i for i, p in enumerate(parts) if _text(p, src).startswith("]")), None)
        if closing is None:
            continue
        key = "".join(_text(p, src) for p in parts[1:closing])
        if _DIGITS.match(key) or key in known or key in _INTEGER_VARIABLES:
            continue
        if _associative(array):
            return None
        return f"`{_text(element, src)[:80]}` evaluates an array key as arithmetic"
    return None


def _associative(array: Node) -> bool:
    assignment = array.parent
    declaration = assignment.parent if assignment is not None else None
    if declaration is None or declaration.type != "declaration_command":
        return False
    return any(
        child.type == "word" and child.text.startswith(b"-") and b"A" in child.text
        for child in declaration.children
    )

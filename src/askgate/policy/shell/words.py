"""Shell words: from tree-sitter nodes to the unquoted text a rule is matched against.

A word's `text` is its value with quotes removed and escapes decoded; the parts
that only exist at run time (`$X`, `$(…)`, globs …) keep their source text, so a
deny such as `rm -rf *` still sees `rm -rf $HOME`. `dynamic` says why the real
value is unknown (None = fully static).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from askgate.policy.lazy_regex import lazy_compile

Node = Any  # tree_sitter.Node; kept loose so importing this module does not load tree-sitter

# Called for every node that holds commands of its own ($( ), backticks, <( ), >( )).
NestedHandler = Callable[[Node, str], None]

# Quoted or expanded characters are masked in a word's "shape" so glob, brace and
# tilde checks only look at characters the shell would interpret.
MASK = "\x00"

# `$HOME`/`$PWD` at the start of a path word are resolved later (paths.py), not floored.
PATH_VARIABLES = frozenset({"HOME", "PWD"})
# Command substitutions whose output is known to be harmless (docs/bash.md "Floors"); the
# substitution is still a unit of its own. `$(pwd)` is `$PWD`; the others print digits
# (date's numeric fields only: a format could print any text, `date +/etc/x`).
_PWD_SUBSTITUTION = lazy_compile(
    r"\$\([ \t]*pwd(?:[ \t]+-[LP])?[ \t]*\)|`[ \t]*pwd(?:[ \t]+-[LP])?[ \t]*`"
)
_DATE_FIELD = r"%[sYmdHMSjyNFTuwVUGgCI]"
_DATE_FORMAT = rf"\+(?:{_DATE_FIELD}|[-_:.T0-9])*{_DATE_FIELD}(?:{_DATE_FIELD}|[-_:.T0-9])*"
_VALUE_SUBSTITUTION = lazy_compile(
    r"\$\([ \t]*(?:nproc(?:[ \t]+--all)?|id[ \t]+-[ug]|getconf[ \t]+_NPROCESSORS_ONLN|"
    rf"date(?:[ \t]+-u)?[ \t]+(?:{_DATE_FORMAT}|'{_DATE_FORMAT}'|\"{_DATE_FORMAT}\")|"
    r"git[ \t]+rev-parse(?:[ \t]+--short(?:=\d+)?)?[ \t]+HEAD)[ \t]*\)"
)
VALUE_OUTPUT = "output of "

_BRACE = lazy_compile(r"\{[^{}\x00]*(?:,|\.\.)[^{}\x00]*\}")
_ANSI_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_ESCAPE = lazy_compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{1,4})"
    r"|U([0-9a-fA-F]{1,8})|c(.)|(.))",
    re.DOTALL,
)


class Word:
    """One shell word after quote removal."""

    __slots__ = ("dynamic", "source", "text")

    def __init__(self, text: str, source: str, dynamic: str | None = None) -> None:
        self.text = text
        self.source = source
        self.dynamic = dynamic

    @property
    def static(self) -> bool:
        return self.dynamic is None

    def __repr__(self) -> str:
        return f"Word({self.text!r}{', dynamic' if self.dynamic else ''})"


def synthetic(text: str) -> Word:
    """A static word that was not written in the command (e.g. xargs' default `echo`)."""
    return Word(text, text)


def decode_ansi_c(body: str) -> str:
    """Decode the inside of a `$'…'` string the way bash does."""

    def one(m: re.Match[str]) -> str:
        simple, octal, hex2, u4, u8, ctrl, other = m.groups()
        if simple is not None:
            return _ANSI_SIMPLE[simple]
        if octal is not None:
            return chr(int(octal, 8) & 0xFF)
        if hex2 is not None:
            return chr(int(hex2, 16))
        if u4 is not None or u8 is not None:
            code = int(u4 or u8, 16)
            return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        if ctrl is not None:
            return chr(ord(ctrl.upper()) ^ 0x40) if ctrl != "?" else "\x7f"
        return "\\" + other

    # bash ends a $'…' string at a decoded NUL (`$'rm\0zz'` is `rm`): so does the analyser,
    # or `$'rm\0x' -rf /` would hide `rm -rf /` from deny rules (red team 2026-11-29).
    return _ANSI_ESCAPE.sub(one, body).partition("\x00")[0]


def unescape_unquoted(raw: str) -> tuple[str, str]:
    """Unquoted text: drop line continuations, `\\x` -> literal x. Returns (text, shape)."""
    if "\\" not in raw:
        return raw, raw
    text: list[str] = []
    shape: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\" and i + 1 < n:
            nxt = raw[i + 1]
            i += 2
            if nxt == "\n":
                continue
            text.append(nxt)
            shape.append(MASK)
            continue
        text.append(ch)
        shape.append(ch)
        i += 1
    return "".join(text), "".join(shape)


def unescape_double_quoted(raw: str) -> str:
    """Inside "…", a backslash only escapes $ ` " \\ and newline."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
            if raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


# What runtime_reason() looks for: a word with none of these is static.
RUNTIME_CHARS = lazy_compile(r"[*?\[{~]")


def runtime_reason(shape: str) -> str | None:
    """Why an unquoted word changes at run time (glob, brace, ~user), or None."""
    if not RUNTIME_CHARS.search(shape):
        return None
    if "*" in shape or "?" in shape:
        return "glob"
    bracket = shape.find("[")
    if bracket >= 0 and shape.find("]", bracket + 1) > 0:
        return "glob"
    if "{" in shape and _BRACE.search(shape):
        return "brace expansion"
    if shape.startswith("~") and len(shape) > 1 and shape[1] != "/":
        # `~user` is that user's home (paths.py expands it); `~+`, `~-`, `~N` are not
        # known in advance.
        return None if _TILDE_USER.match(shape) else "tilde expansion"
    return None


def _quoted_pattern_character(text: str, shape: str) -> bool:
    """A glob or brace character that is quoted (masked in the shape) in an unquoted glob."""
    if len(text) != len(shape):
        return True  # cannot line them up: say so (stricter)
    return any(m == MASK and c in "*?[]{}," for c, m in zip(text, shape, strict=True))


_TILDE_USER = lazy_compile(r"^~[A-Za-z_][A-Za-z0-9_.-]*(?:/|$)")


class WordBuilder:
    """Evaluates the nodes of one shell word. `mode` is "arg" (globs, braces and
    tildes expand), "assign" (assignment values: no globbing) or "pattern" (`[[ ]]`
    operands and case patterns)."""

    __slots__ = ("_dynamic", "_nested", "_quoted", "_shape", "_src", "_text", "mode")

    def __init__(self, src: bytes, nested: NestedHandler, mode: str = "arg") -> None:
        self._src = src
        self._nested = nested
        self.mode = mode
        self._text: list[str] = []
        self._shape: list[str] = []
        self._dynamic: list[str] = []
        self._quoted = 0  # depth of enclosing double quotes

    def build(self, nodes: Sequence[Node]) -> Word:
        if len(nodes) == 1 and not self._quoted:
            node = nodes[0]
            kind = node.type
            if kind == "word" or kind == "number":  # the common case, kept fast
                raw = self._src[node.start_byte : node.end_byte].decode("utf-8", "replace")
                if "\\" not in raw:
                    reason = runtime_reason(raw) if self.mode == "arg" else None
                    return Word(raw, raw, f"{reason} in `{raw}`" if reason else None)
        self._text, self._shape, self._dynamic = [], [], []
        previous_dollar = False
        for node in nodes:
            # `$"…"` (locale translation) arrives as a bare `$` followed by a string.
            if previous_dollar and node.type == "string":
                self._text.pop()
                self._shape.pop()
            previous_dollar = node.type == "$"
            self._add(node)
        text = "".join(self._text)
        start, end = nodes[0].start_byte, nodes[-1].end_byte
        source = self._src[start:end].decode("utf-8", "replace")
        if self.mode == "arg":
            shape = "".join(self._shape)
            reason = runtime_reason(shape)
            if reason:
                self._dynamic.append(f"{reason} in `{source}`")
                if reason == "glob" and _quoted_pattern_character(text, shape):
                    # `"[x]"*`: the expander sees the unquoted text, where `[x]` would be
                    # a bracket; bash matches it literally.
                    self._dynamic.append(f"a glob with quoted pattern characters `{source}`")
        dynamic = "; ".join(self._dynamic) if self._dynamic else None
        return Word(text, source, dynamic)

    # -- pieces ---------------------------------------------------------------

    def _literal(self, text: str, quoted: bool) -> None:
        self._text.append(text)
        self._shape.append(MASK * len(text) if quoted else text)

    def _expanded(self, source: str, reason: str | None) -> None:
        self._text.append(source)
        self._shape.append(MASK * len(source))
        if reason:
            self._dynamic.append(reason)

    def _source(self, node: Node) -> str:
        return self._src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _at_word_start(self) -> bool:
        return not any(self._text)

    def _add(self, node: Node) -> None:
        kind = node.type
        if kind == "word" or kind == "number" or kind == "$" or kind == "variable_name":
            # (`variable_name`: the operands of `unset NAME` arrive as bare names.)
            raw = self._source(node)
            if self._quoted:
                self._literal(unescape_double_quoted(raw), quoted=True)
            elif self.mode == "arg":
                self._text_and_shape(*unescape_unquoted(raw))
            else:
                self._literal(unescape_unquoted(raw)[0], quoted=True)
        elif kind == "raw_string":
            self._literal(self._source(node)[1:-1], quoted=True)
        elif kind == "ansi_c_string":
            self._literal(decode_ansi_c(self._source(node)[2:-1]), quoted=True)
        elif kind == "string" or kind == "translated_string":
            self._double_quoted(node)
        elif kind == "concatenation":
            for child in node.children:
                self._add(child)
        elif kind in ("simple_expansion", "expansion"):
            self._variable(node)
        elif kind == "command_substitution":
            self._command_substitution(node)
        elif kind == "process_substitution":
            self._nested(node, "process substitution")
            self._expanded(self._source(node), f"process substitution `{self._source(node)}`")
        elif kind == "arithmetic_expansion":
            self._nested(node, "arithmetic expansion")
            self._expanded(self._source(node), f"arithmetic expansion `{self._source(node)}`")
        elif kind == "brace_expression":
            self._expanded(self._source(node), f"brace expansion `{self._source(node)}`")
        elif kind in ("regex", "extglob_pattern", "heredoc_content", "string_content"):
            self._literal(self._source(node), quoted=True)
        else:
            # Anything else (ERROR, unexpected shapes): keep the text, treat it as
            # unknown, and still look inside for commands.
            self._nested(node, "unrecognised syntax")
            self._expanded(self._source(node), f"unrecognised syntax `{self._source(node)}`")

    def _text_and_shape(self, text: str, shape: str) -> None:
        self._text.append(text)
        self._shape.append(shape)

    def _double_quoted(self, node: Node) -> None:
        # Walk the byte range ourselves: tree-sitter does not always emit a
        # string_content node for every literal stretch.
        start = node.start_byte + (
            2 if self._src[node.start_byte : node.start_byte + 1] == b"$" else 1
        )
        end = node.end_byte - 1
        pos = start
        self._quoted += 1
        for child in node.children:
            if child.start_byte < start or child.end_byte > end:
                continue  # the quote tokens
            if child.type == "string_content":
                continue  # covered by the gap text below
            if child.start_byte > pos:
                self._dq_literal(pos, child.start_byte)
            self._add(child)
            pos = max(pos, child.end_byte)
        if end > pos:
            self._dq_literal(pos, end)
        self._quoted -= 1

    def _dq_literal(self, start: int, end: int) -> None:
        raw = self._src[start:end].decode("utf-8", "replace")
        self._literal(unescape_double_quoted(raw), quoted=True)

    def _variable(self, node: Node) -> None:
        source = self._source(node)
        name = _plain_variable(node)
        if name in PATH_VARIABLES and self._at_word_start():
            # Kept for paths.py to expand; normalised so `${HOME}` and `$HOME` match alike.
            self._expanded("$" + name, None)
            return
        self._nested(node, "parameter expansion")
        self._expanded(source, f"variable `{source}`")

    def _command_substitution(self, node: Node) -> None:
        self._nested(node, "command substitution")
        static = static_heredoc_value(node, self._src)
        if static is not None:
            self._literal(static, quoted=True)
            return
        source = self._source(node)
        if _PWD_SUBSTITUTION.fullmatch(source) and self._at_word_start():
            # `$(pwd)/src` is `$PWD/src` (resolved later, cd and all, as $PWD is).
            self._expanded("$PWD", None)
            return
        if _VALUE_SUBSTITUTION.fullmatch(source):
            # Its output is digits (or hex): commands.py lets it stand alone or as an
            # option's value (`make -j$(nproc)`), nowhere else.
            self._expanded(source, f"{VALUE_OUTPUT}`{source}`")
            return
        self._expanded(source, f"command substitution `{source}`")


def _plain_variable(node: Node) -> str | None:
    """`$NAME` or `${NAME}` with no operator, subscript or indirection -> NAME."""
    named = [c for c in node.children if c.is_named]
    if len(named) != 1 or named[0].type != "variable_name":
        return None
    if node.type == "expansion" and node.child_count != 3:
        return None
    name: str = named[0].text.decode("utf-8", "replace")
    return name


def static_heredoc_value(node: Node, src: bytes) -> str | None:
    """The value of `$(cat <<'EOF' … EOF)` when it is knowable before running.

    Agents write commit messages this way all the time; treating the message as
    unknown would make every such commit ask.
    """
    statements = [c for c in node.named_children if c.type != "comment"]
    if len(statements) != 1 or statements[0].type != "redirected_statement":
        return None
    statement = statements[0]
    body = statement.child_by_field_name("body")
    redirects = statement.children_by_field_name("redirect")
    if body is None or body.type != "command" or len(redirects) != 1:
        return None
    if len(body.named_children) != 1 or body.named_children[0].type != "command_name":
        return None
    if body.named_children[0].text != b"cat":
        return None
    heredoc = redirects[0]
    if heredoc.type != "heredoc_redirect":
        return None
    strip_tabs = False
    text: str | None = None
    for child in heredoc.children:
        kind = child.type
        if kind == "<<-":
            strip_tabs = True
        elif kind == "heredoc_body":
            if child.named_child_count and any(
                c.type != "heredoc_content" for c in child.named_children
            ):
                return None  # expansions inside an unquoted heredoc
            text = src[child.start_byte : child.end_byte].decode("utf-8", "replace")
            if "`" in text and not _quoted_delimiter(heredoc):
                return None
            if not _quoted_delimiter(heredoc) and ("$" in text or "\\" in text):
                return None
        elif kind in ("<<", "heredoc_start", "heredoc_end"):
            continue
        else:
            return None
    if text is None:
        return None
    if strip_tabs:
        text = "\n".join(line.lstrip("\t") for line in text.split("\n"))
    return text.rstrip("\n")


def _quoted_delimiter(heredoc: Node) -> bool:
    for child in heredoc.children:
        if child.type == "heredoc_start":
            return any(q in child.text for q in (b"'", b'"', b"\\"))
    return False

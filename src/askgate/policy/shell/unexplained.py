"""Text the syntax tree does not explain: substitutions hidden where the tree has a word.

tree-sitter-bash keeps some code as plain text: ``${x:-`curl …`}`` gives the word
``"`curl …`"``, ``${x:-<(cmd)}`` the word ``"<(cmd)"``, an escaped backtick inside a
backtick substitution a word too. bash runs them all. So the raw text of the command is
checked against the tree: every unescaped ``$(``, backtick, ``<(`` and ``>(`` must be the
opening (or closing) token of a substitution node the walker turns into units, or lie in
text bash never expands (a single-quoted or ``$'…'`` string, a comment, the body of a
heredoc with a quoted delimiter). Anything else is code the analysis did not see: the
command is ask, and the text holding it is parsed again so deny rules still see the
commands inside.
"""

from __future__ import annotations

from collections.abc import Iterator

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.words import Node

# `${` and `$[` too: a parameter or arithmetic expansion kept as text (`${x%%${a[v]}}`,
# `${x:-$[v]}`) evaluates array subscripts the analysis never saw (evaluating.py).
_OPENER = lazy_compile(rb"\$\(|`|<\(|>\(|\$\{|\$\[")
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution", "arithmetic_expansion"})
_EXPANSIONS = _SUBSTITUTIONS | {"expansion"}
_TOKENS = frozenset({b"$(", b"`", b"<(", b">(", b"$((", b"${", b"$["})
# Text inside these is never expanded by bash.
_DATA = frozenset({"raw_string", "ansi_c_string", "comment"})
_EXPANDING_QUOTES = frozenset({"string", "translated_string"})
# Inside backticks, bash reads `\``, `\\` and `\$` as the character itself.
_BACKTICK_ESCAPE = lazy_compile(rb"\\([`\\$])")
MAX_HIDDEN = 8  # reported (and re-parsed) per source; more only repeats the floor


def hidden_substitutions(root: Node, src: bytes) -> list[str]:
    """The text of each place holding a substitution the tree did not explain, as shell
    source to parse again (empty when the tree accounts for every opener)."""
    if b"`" not in src and b"(" not in src and b"$" not in src:
        return []
    found: list[str] = []
    for match in _OPENER.finditer(src):
        text = _unexplained(root, src, match.start(), match.end())
        if text is not None and text not in found:
            found.append(text)
            if len(found) >= MAX_HIDDEN:
                break
    return found


def _unexplained(root: Node, src: bytes, start: int, end: int) -> str | None:
    node = root.descendant_for_byte_range(start, end)
    if node is None:
        return _decode(src[start:end])
    if (
        node.start_byte == start
        and src[start:end] in _TOKENS
        and not node.is_named
        and node.parent is not None
        and node.parent.type in _EXPANSIONS
    ):
        return None  # the opening or closing token of a substitution the walker sees
    data = False  # inside text bash does not expand, unless a double quote encloses it
    backticks: Node | None = None
    holder: Node | None = None
    settled = False  # a substitution boundary was crossed: outer quotes do not matter
    for ancestor in _ancestors(node):
        kind = ancestor.type
        if settled:
            pass
        elif kind in _DATA:
            data = True
        elif kind in _EXPANDING_QUOTES or kind == "heredoc_body":
            if kind == "heredoc_body" and (
                _quoted_heredoc(ancestor, src) or src[start:end] == b"`"
            ):
                # Quoted: text. Unquoted: its backticks are parsed again (redirects.py).
                return None
            data = False  # in "…" and unquoted heredocs, `'…'` inside `${x:-…}` quotes nothing
        elif kind in _SUBSTITUTIONS:
            settled = True
        if (
            backticks is None
            and kind == "command_substitution"
            and src[ancestor.start_byte : ancestor.start_byte + 1] == b"`"
        ):
            backticks = ancestor
        if holder is None and ancestor.is_named and kind != "ERROR":
            holder = ancestor
    if data:
        return None
    if _escaped(src, start):
        # `\$(` and `` \` `` are literal, except that inside backticks an escaped
        # backtick opens a nested substitution (bash removes one level of backslashes).
        if backticks is None or src[start:end] != b"`":
            return None
        inner = src[backticks.start_byte + 1 : backticks.end_byte - 1]
        return _decode(_BACKTICK_ESCAPE.sub(rb"\1", inner))
    if holder is None:
        return _decode(src[start:end])
    return _decode(src[holder.start_byte : holder.end_byte])


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _ancestors(node: Node) -> Iterator[Node]:
    current: Node | None = node
    while current is not None:
        yield current
        current = current.parent


def _escaped(src: bytes, position: int) -> bool:
    count = 0
    index = position - 1
    while index >= 0 and src[index] == 92:  # backslash
        count += 1
        index -= 1
    return count % 2 == 1


def _quoted_heredoc(body: Node, src: bytes) -> bool:
    redirect = body.parent
    if redirect is None:
        return False
    for child in redirect.children:
        if child.type == "heredoc_start":
            text = src[child.start_byte : child.end_byte]
            return any(q in text for q in (b"'", b'"', b"\\"))
    return False

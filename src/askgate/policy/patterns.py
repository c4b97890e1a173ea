"""Pattern compilation, matching and containment.

Two pattern kinds:

* **wildcard** (surfaces tool, bash, mcp, skill): anchored; ``*`` is any run of
  characters (``/`` included), ``?`` is one character; a trailing ``" *"`` is
  optional, so ``git *`` matches ``git`` as well as ``git status``.
* **path glob** (surfaces read, write, external_directory): anchored; ``*`` and
  ``?`` stay inside one path segment, ``**`` crosses segments; ``dir/**`` also
  matches ``dir`` itself and ``**/x`` matches ``x`` at any depth (zero
  directories included).

Both kinds denote regular languages, so whether every value one pattern matches
is also matched by another (containment) is decidable. We decide it with a
product of the two patterns' automata over a finite alphabet: every literal
character of either pattern, ``/``, and one symbol standing for "any other
character". Containment is only ever computed among the few rules that match a
value, and results are cached.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Literal

import msgspec

from askgate.policy.model import Surface

PatternKind = Literal["wildcard", "path", "net"]

MAX_PATTERN_LENGTH = 1_000

# Automaton edge labels: a literal character, ANY (every character) or
# NOT_SLASH (every character but "/").
_ANY = "\x00any"
_NOT_SLASH = "\x00nsl"
_OTHER = "\x00other"  # alphabet symbol: a character appearing in neither pattern


def kind_of(surface: Surface) -> PatternKind:
    if surface is Surface.NET:
        return "net"  # a wildcard over HOST:PORT, normalised first (policy/net.py)
    return "path" if surface.is_path else "wildcard"


# --- the pattern language, as a small AST ------------------------------------
# A pattern is a sequence of items: a literal character (a str of length 1), One (one
# character), Star (any run of characters) or Opt (an optional group of items). One and
# Star carry whether they may match "/" (always in wildcards; only "**" in path globs).
# Frozen Structs rather than dataclasses: `dataclasses` imports `inspect` (with ast, dis,
# tokenize), which costs a one-shot hook process more than compiling all its rules.


class One(msgspec.Struct, frozen=True):
    slash_ok: bool


class Star(msgspec.Struct, frozen=True):
    slash_ok: bool


class Opt(msgspec.Struct, frozen=True):
    items: tuple[Item, ...]


Item = str | One | Star | Opt
# The four leaf items, built once: patterns share them (frozen, so sharing is safe, and
# compiling thousands of rules does not pay for constructing them).
ANY_RUN = Star(slash_ok=True)
SEGMENT_RUN = Star(slash_ok=False)
ANY_CHAR = One(slash_ok=True)
SEGMENT_CHAR = One(slash_ok=False)


def _parse_wildcard(pattern: str) -> list[Item]:
    optional_tail = pattern.endswith(" *") and len(pattern) > 2
    body = pattern[:-2] if optional_tail else pattern
    items: list[Item] = []
    for ch in body:
        if ch == "*":
            items.append(ANY_RUN)
        elif ch == "?":
            items.append(ANY_CHAR)
        else:
            items.append(ch)
    if optional_tail:
        items.append(Opt((" ", ANY_RUN)))
    return items


def _parse_path(pattern: str) -> list[Item]:
    items: list[Item] = []
    i = 0
    n = len(pattern)
    while i < n:
        ch = pattern[i]
        if pattern.startswith("**", i):
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            at_segment_start = i == 0 or pattern[i - 1] == "/"
            if at_segment_start and j < n and pattern[j] == "/":
                # "**/" : zero or more whole directories
                items.append(Opt((ANY_RUN, "/")))
                i = j + 1
                continue
            if j == n and items and items[-1] == "/":
                # trailing "/**": the directory itself or anything below it
                items.pop()  # the "/" we already emitted
                items.append(Opt(("/", ANY_RUN)))
                i = j
                continue
            items.append(ANY_RUN)
            i = j
            continue
        if ch == "*":
            items.append(SEGMENT_RUN)
        elif ch == "?":
            items.append(SEGMENT_CHAR)
        else:
            items.append(ch)
        i += 1
    return items


def _to_regex(items: Iterable[Item]) -> str:
    out: list[str] = []
    for item in items:
        if isinstance(item, str):
            out.append(re.escape(item))
        elif isinstance(item, Star):
            out.append(".*" if item.slash_ok else "[^/]*")
        elif isinstance(item, One):
            out.append("." if item.slash_ok else "[^/]")
        else:
            out.append("(?:" + _to_regex(item.items) + ")?")
    return "".join(out)


def _literal_prefix(items: list[Item]) -> str:
    prefix: list[str] = []
    for item in items:
        if not isinstance(item, str):
            break
        prefix.append(item)
    return "".join(prefix)


def _literals(items: Iterable[Item]) -> set[str]:
    chars: set[str] = set()
    for item in items:
        if isinstance(item, str):
            chars.add(item)
        elif isinstance(item, Opt):
            chars |= _literals(item.items)
    return chars


# --- compiled patterns ----------------------------------------------------------


class Pattern:
    """A compiled pattern. `text` is the pattern after ~/$HOME/root expansion.

    The regular expression is compiled on first use: a rule set of thousands of
    patterns loads fast, and only the rules whose literal prefix a value reaches
    ever pay for a regex.
    """

    __slots__ = ("_hash", "_regex", "items", "kind", "literal_prefix", "match", "text")

    def __init__(
        self, kind: PatternKind, text: str, items: tuple[Item, ...], literal_prefix: str
    ) -> None:
        self.kind = kind
        self.text = text
        self.items = items
        self.literal_prefix = literal_prefix
        self._regex: re.Pattern[str] | None = None
        self._hash = hash((kind, text))
        # `match(value) -> bool`: plain string tests for the common shapes (a literal,
        # a prefix with a trailing star, `cmd *`, `dir/**`), the regex otherwise.
        self.match: Callable[[str], bool] = self._simple_matcher() or self._regex_match

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            self._regex = re.compile(_to_regex(self.items), re.DOTALL)
        return self._regex

    @property
    def is_literal(self) -> bool:
        return len(self.literal_prefix) == len(self.items)

    def matches(self, value: str) -> bool:
        return self.match(value)

    def _regex_match(self, value: str) -> bool:
        return (self._regex or self.regex).fullmatch(value) is not None

    def _simple_matcher(self) -> Callable[[str], bool] | None:
        prefix = self.literal_prefix
        size = len(prefix)
        rest = self.items[size:]
        if not rest:
            return prefix.__eq__
        if rest == (ANY_RUN,):
            return lambda value: value.startswith(prefix)
        if rest == (SEGMENT_RUN,):
            return lambda value: value.startswith(prefix) and "/" not in value[size:]
        for separator in (" ", "/"):
            if rest == (Opt((separator, ANY_RUN)),):
                extended = prefix + separator
                return lambda value: value == prefix or value.startswith(extended)
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and (self.kind, self.text) == (other.kind, other.text)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Pattern({self.kind!r}, {self.text!r})"


def validate_pattern(surface: Surface, pattern: str) -> None:
    """Raise ValueError with a one-line message when `pattern` cannot be a rule."""
    if not isinstance(pattern, str):
        raise ValueError("pattern must be a string")
    if not pattern:
        raise ValueError("pattern is empty")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"pattern is longer than {MAX_PATTERN_LENGTH} characters")
    if any((ord(c) < 32 and c not in "\t") or c == "\x7f" for c in pattern):
        raise ValueError("pattern contains a control character")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in pattern):
        raise ValueError("pattern contains an invalid character (lone surrogate)")
    if surface.is_path and "***" in pattern:
        raise ValueError("'***' is not a valid path glob (use '**')")
    if surface is Surface.NET:
        from askgate.policy.net import validate_net_pattern

        validate_net_pattern(pattern)


@lru_cache(maxsize=65_536)
def compile_pattern(kind: PatternKind, text: str) -> Pattern:
    if kind == "net":
        from askgate.policy.net import net_pattern_text

        text = net_pattern_text(text)
    items = _parse_path(text) if kind == "path" else _parse_wildcard(text)
    return Pattern(kind, text, tuple(items), _literal_prefix(items))


# --- automata and containment ------------------------------------------------------


class _Nfa:
    """Thompson-style NFA: labelled edges plus epsilon edges; one accept state."""

    __slots__ = ("accept", "edges", "eps")

    def __init__(self, items: Iterable[Item]) -> None:
        self.edges: list[list[tuple[str, int]]] = [[]]
        self.eps: list[list[int]] = [[]]
        end = self._build(list(items), 0)
        self.accept = end

    def _new(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def _build(self, items: list[Item], start: int) -> int:
        cur = start
        for item in items:
            if isinstance(item, str):
                nxt = self._new()
                self.edges[cur].append((item, nxt))
                cur = nxt
                continue
            if isinstance(item, One):
                nxt = self._new()
                self.edges[cur].append((_ANY if item.slash_ok else _NOT_SLASH, nxt))
                cur = nxt
            elif isinstance(item, Star):
                # Separate entry, loop and exit states so that an epsilon edge into
                # the exit (from an enclosing optional group) cannot reach the loop.
                loop = self._new()
                self.eps[cur].append(loop)
                self.edges[loop].append((_ANY if item.slash_ok else _NOT_SLASH, loop))
                exit_ = self._new()
                self.eps[loop].append(exit_)
                cur = exit_
            else:
                start = self._new()
                self.eps[cur].append(start)
                end = self._build(list(item.items), start)
                join = self._new()
                self.eps[end].append(join)
                self.eps[cur].append(join)
                cur = join
        return cur

    def closure(self, states: Iterable[int]) -> frozenset[int]:
        seen = set(states)
        stack = list(seen)
        while stack:
            s = stack.pop()
            for t in self.eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def step(self, states: frozenset[int], symbol: str) -> frozenset[int]:
        nxt: set[int] = set()
        for s in states:
            for label, t in self.edges[s]:
                if label in (symbol, _ANY) or (label == _NOT_SLASH and symbol != "/"):
                    nxt.add(t)
        return self.closure(nxt) if nxt else frozenset()


_CONTAINS_CACHE: dict[tuple[Pattern, Pattern], bool] = {}
_CONTAINS_CACHE_LIMIT = 262_144


def contains(outer: Pattern, inner: Pattern) -> bool:
    """True when every value `inner` matches is also matched by `outer`."""
    key = (outer, inner)
    cached = _CONTAINS_CACHE.get(key)
    if cached is None:
        if outer.kind != inner.kind:
            raise ValueError("cannot compare a wildcard with a path glob")
        cached = _contains(outer, inner)
        if len(_CONTAINS_CACHE) >= _CONTAINS_CACHE_LIMIT:
            _CONTAINS_CACHE.clear()
        _CONTAINS_CACHE[key] = cached
    return cached


def _contains(outer: Pattern, inner: Pattern) -> bool:
    if outer.text == inner.text:
        return True
    # Fast paths for the common shapes; the automaton below decides the rest.
    if inner.is_literal:  # a single value
        return outer.matches(inner.text)
    if outer.is_literal:  # a single value cannot hold a pattern that matches several
        return False
    if (
        len(outer.items) == len(outer.literal_prefix) + 1
        and outer.items[-1] == ANY_RUN
        and inner.literal_prefix.startswith(outer.literal_prefix)
    ):  # "PREFIX*" holds everything that starts with PREFIX
        return True
    a = _Nfa(inner.items)
    b = _Nfa(outer.items)
    alphabet = sorted(_literals(list(inner.items)) | _literals(list(outer.items)) | {"/"})
    alphabet.append(_OTHER)
    start = (a.closure([0]), b.closure([0]))
    seen = {start}
    stack = [start]
    while stack:
        sa, sb = stack.pop()
        if a.accept in sa and b.accept not in sb:
            return False
        for symbol in alphabet:
            na = a.step(sa, symbol)
            if not na:
                continue  # inner cannot continue: nothing to check on this branch
            pair = (na, b.step(sb, symbol))
            if pair not in seen:
                seen.add(pair)
                stack.append(pair)
    return True


def strictly_narrower(narrow: Pattern, wide: Pattern) -> bool:
    """`narrow` matches a proper subset of what `wide` matches."""
    return contains(wide, narrow) and not contains(narrow, wide)


def equivalent(a: Pattern, b: Pattern) -> bool:
    return contains(a, b) and contains(b, a)

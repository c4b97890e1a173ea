"""Pathname expansion with bash's semantics (not Python's `glob`).

What bash does to an unquoted word, in bash's order: brace expansion (`{a,b}`,
`{1..3}`, `{a..e..2}`, nested), then tilde expansion (by the caller), then pathname
expansion per `/`-separated segment: `*`, `?`, bracket expressions with `!` or `^`
negation, ranges in code point order (bash's `globasciiranges`, on by default), POSIX
classes (`[[:alpha:]]` …), a leading `]` taken literally, an unclosed `[` taken
literally; a name starting with `.` only matched by a pattern segment starting with a
literal `.`; `.` and `..` never matched (`globskipdots`); `**` is `*` (globstar off);
no match: the word itself (nullglob off). Defaults of `bash -c` with no `shopt`: the
analysis asks when a command changes them (docs/bash.md, *Globs*). bash's locale is not
known, so a non-ASCII name matches if it matches as characters (UTF-8) or as bytes (C),
and a class (`[[:alpha:]]`) holds every non-ASCII character: a superset of bash's names.

Anything else bash could mean — extglob groups (`@(…)`, `!(…)` …), equivalence
classes (`[[=a=]]`), collating symbols (`[[.a.]]`), an unknown class name — is
reported as not modelled, and the engine asks. Pure apart from listing directories.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

__all__ = ["MAX_BRACE_WORDS", "Unmodelled", "brace_expand", "expand", "has_glob", "translate"]

MAX_BRACE_WORDS = 256
_MAX_DIRECTORIES = 64  # directories listed for one word
_MAX_ENTRIES = 20_000  # names looked at for one word

_CLASSES: dict[str, str] = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "A-Za-z0-9_",
    "xdigit": "0-9A-Fa-f",
}
_EXTGLOB = re.compile(r"[?*+@!]\(")


class Unmodelled(Exception):
    """The pattern uses something the expander does not model (the engine asks)."""


# -- brace expansion -------------------------------------------------------------------


def brace_expand(word: str, limit: int = MAX_BRACE_WORDS) -> list[str]:
    """bash's brace expansion of one word; Unmodelled when it makes more than `limit`."""
    results = _braces(word, limit)
    if len(results) > limit:
        raise Unmodelled(f"brace expansion of {word[:80]!r} makes more than {limit} words")
    return results


def _braces(word: str, limit: int) -> list[str]:
    start = 0
    while True:
        opening = _next_brace(word, start)
        if opening < 0:
            return [word]
        closing, commas = _matching(word, opening)
        if closing < 0:
            start = opening + 1  # unclosed: bash tries the next `{`
            continue
        body = word[opening + 1 : closing]
        prefix, suffix = word[:opening], word[closing + 1 :]
        if commas:
            options: list[str] = []
            last = 0
            for comma in commas:
                options.append(body[last : comma - opening - 1])
                last = comma - opening
            options.append(body[last:])
            expanded: list[str] = []
            for option in options:
                expanded.extend(_braces(option, limit))
                if len(expanded) > limit:
                    return expanded
        else:
            sequence = _sequence(body)
            if sequence is None:
                start = opening + 1
                continue
            expanded = sequence
        tails = _braces(suffix, limit)
        out: list[str] = []
        for middle in expanded:
            for tail in tails:
                out.append(prefix + middle + tail)
                if len(out) > limit:
                    return out
        return out


def _next_brace(word: str, start: int) -> int:
    index = word.find("{", start)
    while index > 0 and word[index - 1] == "$":  # `${…}` is a parameter, not a brace
        index = word.find("{", index + 1)
    return index


def _matching(word: str, opening: int) -> tuple[int, list[int]]:
    """The `}` closing the brace at `opening` and the top-level commas inside."""
    depth = 0
    commas: list[int] = []
    index = opening
    while index < len(word):
        char = word[index]
        if char == "\\":
            index += 2
            continue
        if char == "{" and not (index > 0 and word[index - 1] == "$" and index != opening):
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index, commas
        elif char == "," and depth == 1:
            commas.append(index)
        index += 1
    return -1, []


_INTEGER_SEQUENCE = re.compile(r"([+-]?\d+)\.\.([+-]?\d+)(?:\.\.([+-]?\d+))?")
_LETTER_SEQUENCE = re.compile(r"([A-Za-z])\.\.([A-Za-z])(?:\.\.([+-]?\d+))?")


def _sequence(body: str) -> list[str] | None:
    match = _INTEGER_SEQUENCE.fullmatch(body)
    if match is not None:
        first, last = int(match.group(1)), int(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        if abs(last - first) // step + 1 > MAX_BRACE_WORDS:
            raise Unmodelled(f"the sequence {{{body}}} makes more than {MAX_BRACE_WORDS} words")
        width = 0
        for text in (match.group(1), match.group(2)):
            digits = text.lstrip("+-")
            if len(digits) > 1 and digits.startswith("0"):
                width = max(width, len(text))
        values = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        return [_padded(value, width) for value in values]
    match = _LETTER_SEQUENCE.fullmatch(body)
    if match is not None:
        first, last = ord(match.group(1)), ord(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        codes = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        return [chr(code) for code in codes]
    return None


def _padded(value: int, width: int) -> str:
    if not width:
        return str(value)
    sign = "-" if value < 0 else ""
    return sign + str(abs(value)).zfill(width - len(sign))


# -- pathname expansion ------------------------------------------------------------------


def has_glob(segment: str) -> bool:
    """Does a segment hold a character pathname expansion acts on (`*`, `?`, a `[…]`)?"""
    if "*" in segment or "?" in segment:
        return True
    return _bracket_end(segment, segment.find("[")) > 0 if "[" in segment else False


def _bracket_end(pattern: str, opening: int) -> int:
    """Index of the `]` closing the bracket expression at `opening`, or -1 (literal `[`)."""
    if opening < 0:
        return -1
    index = opening + 1
    if index < len(pattern) and pattern[index] in "!^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1  # a leading `]` is a member
    while index < len(pattern):
        char = pattern[index]
        if char == "[" and index + 1 < len(pattern) and pattern[index + 1] in ":=.":
            kind = pattern[index + 1]
            close = pattern.find(kind + "]", index + 2)
            if close >= 0:
                index = close + 2
                continue
        if char == "\\":
            index += 2
            continue
        if char == "]":
            return index
        index += 1
    return -1


def translate(segment: str) -> str:
    """One path segment as a regular expression (fullmatch) with bash's meaning."""
    if _EXTGLOB.search(segment):
        raise Unmodelled(f"the extglob pattern {segment[:80]!r} is not modelled")
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "\\" and index + 1 < len(segment):
            index += 1
            out.append(re.escape(segment[index]))
        elif char == "[":
            end = _bracket_end(segment, index)
            if end < 0:
                out.append(re.escape(char))
            else:
                out.append(_bracket(segment[index + 1 : end]))
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _bracket(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    members: list[str] = []
    classes = False
    index = 0
    while index < len(body):
        char = body[index]
        if char == "[" and body[index + 1 : index + 2] in (":", "=", "."):
            classes = True
            kind = body[index + 1]
            close = body.find(kind + "]", index + 2)
            name = body[index + 2 : close]
            if kind != ":" or name not in _CLASSES:
                raise Unmodelled(f"the bracket expression [{body[:60]}] is not modelled")
            members.append(_CLASSES[name])
            index = close + 2
            continue
        if char == "\\" and index + 1 < len(body):
            index += 1
            char = body[index]
        if index + 2 < len(body) and body[index + 1] == "-" and body[index + 2] != "]":
            last = body[index + 2]
            if last == "\\" and index + 3 < len(body):
                last = body[index + 3]
                index += 1
            if ord(last) >= ord(char):
                members.append(f"{_escape_member(char)}-{_escape_member(last)}")
            index += 3
            continue
        members.append(_escape_member(char))
        index += 1
    if not members:
        return "(?!)"
    if classes and not negate:
        # Which non-ASCII characters a class holds depends on the locale: count them all
        # in (a superset of what bash matches is checked, never a subset).
        members.append("\u0080-\U0010ffff")
    inner = "".join(members)
    return f"[^{inner}]" if negate else f"[{inner}]"


def _escape_member(char: str) -> str:
    return "\\" + char if char in "\\]^-[" else char


def _listing(directory: str, budget: list[int]) -> list[str]:
    budget[0] -= 1
    if budget[0] < 0:
        raise Unmodelled("the glob lists too many directories")
    try:
        names = os.listdir(directory)
    except (OSError, ValueError):
        return []
    budget[1] -= len(names)
    if budget[1] < 0:
        raise Unmodelled("the glob looks at too many names")
    return names


def expand(
    pattern: str, directory: str, limit: int, home: Callable[[str], str] | None = None
) -> list[str] | None:
    """The words an unquoted glob word becomes in `directory` (relative results stay
    relative), None when it names more than `limit` files; Unmodelled when bash could
    mean something the expander does not model. `home` expands a leading `~`."""
    if _EXTGLOB.search(pattern):
        raise Unmodelled(f"the extglob pattern {pattern[:80]!r} is not modelled")
    words = brace_expand(pattern)
    found: list[str] = []
    budget = [_MAX_DIRECTORIES, _MAX_ENTRIES]
    for word in words:
        if not word:
            continue  # an empty brace alternative is a null word, which bash removes
        if home is not None and word.startswith("~"):
            word = home(word)
        elif word.startswith(("$HOME", "$PWD")):
            # The analysis keeps `$HOME/…` and `$PWD/…` as written (docs/bash.md, Floors):
            # `cat $HOME/.ss*/id_rsa` expands below the home directory, `$PWD/.e*` here.
            name = "$HOME" if word.startswith("$HOME") else "$PWD"
            rest = word[len(name) :]
            if rest[:1] in ("", "/"):
                if name == "$PWD":
                    word = directory.rstrip("/") + rest
                elif home is not None:
                    word = home("~" + rest)
        matches = _pathnames(word, directory, budget)
        found.extend(matches or [word])
        if len(found) > limit:
            return None
    return found


def _pathnames(word: str, directory: str, budget: list[int]) -> list[str]:
    segments = word.split("/")
    if not any(has_glob(segment) for segment in segments):
        return []
    absolute = word.startswith("/")
    # (path as it will be reported, path on disk)
    current: list[tuple[str, str]] = [("/" if absolute else "", "/" if absolute else directory)]
    parts = segments[1:] if absolute else segments
    for position, segment in enumerate(parts):
        last = position == len(parts) - 1
        if segment == "":
            if last:  # a trailing `/`: directories only
                current = [(shown + "/", disk) for shown, disk in current if os.path.isdir(disk)]
            continue
        following: list[tuple[str, str]] = []
        if not has_glob(segment):
            for shown, disk in current:
                candidate = os.path.join(disk, segment)
                if os.path.isdir(candidate) or (last and os.path.lexists(candidate)):
                    following.append((_join(shown, segment), candidate))
            current = following
            if not current:
                return []
            continue
        matcher = re.compile(translate(segment), re.DOTALL)
        explicit_dot = segment.startswith(".")
        for shown, disk in current:
            for name in sorted(_listing(disk, budget)):
                if name.startswith(".") and (not explicit_dot or name in (".", "..")):
                    continue
                if not _matches(matcher, name):
                    continue
                candidate = os.path.join(disk, name)
                if not last and not os.path.isdir(candidate):
                    continue
                following.append((_join(shown, name), candidate))
        current = following
        if not current:
            return []
    return [shown for shown, _ in current]


def _matches(matcher: re.Pattern[str], name: str) -> bool:
    """A name matches as characters (a UTF-8 locale) or as bytes (the C locale, where `?`
    is one byte): bash's locale is the agent's, so either counts."""
    if matcher.fullmatch(name):
        return True
    if name.isascii():
        return False
    as_bytes = name.encode("utf-8", "surrogateescape").decode("latin-1")
    return matcher.fullmatch(as_bytes) is not None


def _join(shown: str, name: str) -> str:
    if not shown:
        return name
    return shown + name if shown.endswith("/") else shown + "/" + name

"""getopt-style scanning of a command's words, shared by wrappers and path rules."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.shell.words import Word


class Scan:
    """Options and operands of one argv tail.

    `options` holds (name, value) pairs: name is `-x` or `--long`, value the option
    argument word (attached or the next word) or None. `end` is the index in the
    scanned sequence where scanning stopped (the first operand for non-permuting
    scans). `unknown` lists option names not in the caller's vocabulary.
    """

    __slots__ = ("end", "operands", "option_words", "options", "unknown")

    def __init__(self) -> None:
        self.options: list[tuple[str, Word | None]] = []
        self.operands: list[Word] = []
        self.option_words: list[Word] = []
        self.unknown: list[str] = []
        self.end = 0

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.options if name in names and value is not None]


def scan(
    words: Sequence[Word],
    short_value: str = "",
    long_value: frozenset[str] = frozenset(),
    *,
    permute: bool = False,
    short_flags: str | None = None,
    long_flags: frozenset[str] | None = None,
    optional_value: frozenset[str] = frozenset(),
) -> Scan:
    """Scan options like getopt_long.

    `short_value` lists short options taking an argument; `long_value` long options
    (without `=`) taking one. With `permute`, operands may be interleaved with
    options (GNU style); otherwise scanning stops at the first operand (wrappers:
    `timeout 5 cmd -x` must not read `-x` as timeout's). When `short_flags` /
    `long_flags` are given, options outside both vocabularies are reported in
    `unknown`. `optional_value` options take a value only when attached (`-i.bak`,
    `--color=auto`).
    """
    result = Scan()
    i, n = 0, len(words)
    while i < n:
        word = words[i]
        text = word.text
        if text == "--":
            result.option_words.append(word)
            result.operands.extend(words[i + 1 :])
            result.end = i + 1
            return result
        if not text.startswith("-") or text == "-":
            if not permute:
                break
            result.operands.append(word)
            i += 1
            continue
        result.option_words.append(word)
        if text.startswith("--"):
            name, eq, attached = text.partition("=")
            if eq:
                result.options.append((name, Word(attached, word.source, word.dynamic)))
            elif name in long_value and i + 1 < n:
                result.options.append((name, words[i + 1]))
                result.option_words.append(words[i + 1])
                i += 1
            else:
                result.options.append((name, None))
            known = name in long_value or name in optional_value
            if long_flags is not None and not known and name not in long_flags:
                result.unknown.append(name)
            i += 1
            continue
        # A cluster of short options: -abc, -uroot, -n5
        j = 1
        while j < len(text):
            letter = text[j]
            name = "-" + letter
            if letter in short_value:
                rest = text[j + 1 :]
                if rest:
                    result.options.append((name, Word(rest, word.source, word.dynamic)))
                elif i + 1 < n:
                    result.options.append((name, words[i + 1]))
                    result.option_words.append(words[i + 1])
                    i += 1
                else:
                    result.options.append((name, None))
                break
            if name in optional_value:
                rest = text[j + 1 :]
                result.options.append(
                    (name, Word(rest, word.source, word.dynamic) if rest else None)
                )
                break
            result.options.append((name, None))
            if short_flags is not None and letter not in short_flags:
                result.unknown.append(name)
            j += 1
        i += 1
    result.end = i
    if not permute:
        result.operands = list(words[i:])
    return result


def names(text: str) -> frozenset[str]:
    """A set written as one space-separated string (keeps long tables compact)."""
    return frozenset(text.split())

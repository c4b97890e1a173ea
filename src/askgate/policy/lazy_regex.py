"""Regular expressions compiled on first use instead of at import.

The shell analyser and the policy modules keep dozens of module-level patterns, and
`re.compile` runs Python's regex parser and compiler for each: about 15 ms when a
one-shot hook process imports them, while one call typically uses a handful (a plain
`git status` never needs the patterns for perl one-liners or psql escapes).
`lazy_compile(pattern, flags)` stands in for `re.compile(pattern, flags)` in a
module-level assignment: the first method call compiles, later calls delegate to the
compiled pattern. Same pattern, same flags, same answers.

A leaf: the standard library's `re` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any, AnyStr, Generic

__all__ = ["LazyPattern", "lazy_compile"]


class LazyPattern(Generic[AnyStr]):
    """`re.compile(pattern, flags)`, compiled by the first call of any method."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, pattern: AnyStr, flags: int = 0) -> None:
        self._source: AnyStr = pattern
        self._flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    @property
    def compiled(self) -> re.Pattern[AnyStr]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    @property
    def pattern(self) -> AnyStr:
        return self._source

    @property
    def flags(self) -> int:
        return self.compiled.flags

    @property
    def groups(self) -> int:
        return self.compiled.groups

    @property
    def groupindex(self) -> Any:
        return self.compiled.groupindex

    def search(self, string: AnyStr, *args: Any) -> re.Match[AnyStr] | None:
        return self.compiled.search(string, *args)

    def match(self, string: AnyStr, *args: Any) -> re.Match[AnyStr] | None:
        return self.compiled.match(string, *args)

    def fullmatch(self, string: AnyStr, *args: Any) -> re.Match[AnyStr] | None:
        return self.compiled.fullmatch(string, *args)

    def finditer(self, string: AnyStr, *args: Any) -> Iterator[re.Match[AnyStr]]:
        return self.compiled.finditer(string, *args)

    def findall(self, string: AnyStr, *args: Any) -> list[Any]:
        return self.compiled.findall(string, *args)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr | Any]:
        return self.compiled.split(string, maxsplit)

    def sub(
        self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], string: AnyStr, count: int = 0
    ) -> AnyStr:
        return self.compiled.sub(repl, string, count)

    def subn(
        self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], string: AnyStr, count: int = 0
    ) -> tuple[AnyStr, int]:
        return self.compiled.subn(repl, string, count)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source!r}, {self._flags!r})"


def lazy_compile(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> LazyPattern[AnyStr]:
    return LazyPattern(pattern, int(flags))

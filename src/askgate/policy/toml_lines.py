"""Find the line each key of a TOML document is written on.

`tomllib` returns plain dicts without positions, but a policy error must point at a line.
This scanner walks text that `tomllib` has already accepted and records, for every key
path (`("agent", "reviewer", "write", "**")`), the line where it first appears: table
headers (`[agent.reviewer.write]`, quoted and dotted parts), `key = value` lines inside
the current table, dotted keys and inline tables. Values are skipped without being
interpreted, including multi-line strings and arrays, so their contents never look like
keys. It is lenient by design: on anything unexpected it stops and returns what it has.
"""

from __future__ import annotations

import re
from collections.abc import Callable

KeyPath = tuple[str, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_BASIC_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_LITERAL_STRING = re.compile(r"'([^'\n]*)'")
_SCALAR = re.compile(r"[^,\]}\n#]*")
_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))")
_SIMPLE_ESCAPES = {
    "b": "\b",
    "t": "\t",
    "n": "\n",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    '"': '"',
    "\\": "\\",
}


def _unescape(body: str) -> str:
    def replace(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2)
        if code is not None:
            return chr(int(code, 16))
        return _SIMPLE_ESCAPES.get(match.group(3), match.group(3))

    return _ESCAPE.sub(replace, body)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.found: dict[KeyPath, int] = {}
        self._counted_pos = 0
        self._counted_line = 1

    def line_at(self, pos: int) -> int:
        # Positions only move forward, so counting newlines incrementally is O(n) overall.
        if pos < self._counted_pos:
            return self.text.count("\n", 0, pos) + 1
        self._counted_line += self.text.count("\n", self._counted_pos, pos)
        self._counted_pos = pos
        return self._counted_line

    def record(self, path: KeyPath, pos: int) -> None:
        line = self.line_at(pos)
        for end in range(1, len(path) + 1):
            self.found.setdefault(path[:end], line)

    def peek(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def skip_blank(self, *, newlines: bool) -> None:
        text, length = self.text, len(self.text)
        while self.pos < length:
            char = text[self.pos]
            if char in " \t\r" or (newlines and char == "\n"):
                self.pos += 1
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = length if end < 0 else end
            else:
                return

    def key(self) -> KeyPath:
        parts: list[str] = []
        while True:
            self.skip_blank(newlines=False)
            if self.peek('"'):
                match = _BASIC_STRING.match(self.text, self.pos)
                if match is None:
                    break
                parts.append(_unescape(match.group(1)))
            elif self.peek("'"):
                match = _LITERAL_STRING.match(self.text, self.pos)
                if match is None:
                    break
                parts.append(match.group(1))
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                if match is None:
                    break
                parts.append(match.group(0))
            self.pos = match.end()
            self.skip_blank(newlines=False)
            if not self.peek("."):
                break
            self.pos += 1
        return tuple(parts)

    def skip_multiline(self, quote: str) -> None:
        text, length = self.text, len(self.text)
        fence = quote * 3
        index = self.pos + 3
        while index < length:
            if quote == '"' and text[index] == "\\":
                index += 2
            elif text.startswith(fence, index):
                index += 3
                # A closing fence may carry up to two more quote characters of content.
                extra = 0
                while extra < 2 and index < length and text[index] == quote:
                    index += 1
                    extra += 1
                break
            else:
                index += 1
        self.pos = index

    def value(self, path: KeyPath) -> None:
        if self.peek('"""') or self.peek("'''"):
            self.skip_multiline(self.text[self.pos])
        elif self.peek('"') or self.peek("'"):
            pattern = _BASIC_STRING if self.peek('"') else _LITERAL_STRING
            match = pattern.match(self.text, self.pos)
            self.pos = match.end() if match else self.pos + 1
        elif self.peek("["):
            self.pos += 1
            self.sequence("]", lambda: self.value(path))
        elif self.peek("{"):
            self.pos += 1
            self.sequence("}", lambda: self.pair(path))
        else:
            match = _SCALAR.match(self.text, self.pos)
            self.pos = match.end() if match else self.pos + 1

    def pair(self, table: KeyPath) -> None:
        start = self.pos
        key = self.key()
        self.skip_blank(newlines=False)
        if not key or not self.peek("="):
            raise ValueError("not a key/value pair")
        self.pos += 1
        self.record(table + key, start)
        self.skip_blank(newlines=False)
        self.value(table + key)

    def sequence(self, closer: str, item: Callable[[], None]) -> None:
        while self.pos < len(self.text):
            self.skip_blank(newlines=True)
            if self.peek(closer):
                self.pos += 1
                return
            before = self.pos
            item()
            self.skip_blank(newlines=True)
            if self.peek(","):
                self.pos += 1
            elif self.pos == before:
                raise ValueError("no progress")

    def run(self) -> dict[KeyPath, int]:
        table: KeyPath = ()
        length = len(self.text)
        while True:
            self.skip_blank(newlines=True)
            if self.pos >= length:
                return self.found
            before = self.pos
            if self.peek("["):
                start = self.pos
                self.pos += 2 if self.peek("[[") else 1
                table = self.key()
                self.record(table, start)
                self.skip_blank(newlines=False)
                self.pos += 2 if self.peek("]]") else 1
            else:
                self.pair(table)
            # Whatever is left on the line is a comment or already-skipped text.
            end = self.text.find("\n", self.pos)
            self.pos = length if end < 0 else end
            if self.pos == before:
                raise ValueError("no progress")


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map every key path in `text` (valid TOML) to the 1-based line it first appears on."""
    scanner = _Scanner(text)
    try:
        return scanner.run()
    except (ValueError, IndexError, RecursionError):
        return scanner.found


def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """The line of `path`, or of its longest recorded prefix; None when nothing matches."""
    for end in range(len(path), 0, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return None

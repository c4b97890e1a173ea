"""Which options make a program run another program, as data (`policy/builtin/
exec-options.toml`, one table per program with examples).

Loading is lazy, as for the program specs (pathspecs.py): the file is read as text and cut
at its `[name]` headers on first use (the names are needed for every command); a program's
table is parsed, and its examples run, the first time that program is analysed. A bad
table or a wrong example raises ExecOptionsError (the analysis then asks).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "builtin", "exec-options.toml")
_HEADER = re.compile(r"^\[([A-Za-z0-9_.+-]+)\]\s*$", re.MULTILINE)
_ALSO = re.compile(r"^also\s*=\s*\[([^\]]*)\]", re.MULTILINE)
_FIELDS = frozenset({"options", "also", "examples"})
_OPTION = re.compile(r"^--?[A-Za-z0-9][A-Za-z0-9-]*$")

# Set by runners.py: (name, words, options) -> the option found, or None.
example_checker: Callable[[str, list[str], tuple[str, ...]], str | None] | None = None


class ExecOptionsError(ValueError):
    """exec-options.toml does not load (a packaging error: the analyser fails closed)."""


_index: dict[str, tuple[str, str]] | None = None  # name -> (table name, table text)
_loaded: dict[str, tuple[str, ...]] = {}


def _read_index(path: str = DATA) -> dict[str, tuple[str, str]]:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ExecOptionsError(f"{path}: {exc}") from None
    found: dict[str, tuple[str, str]] = {}
    headers = list(_HEADER.finditer(text))
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.start() : end]
        also = _ALSO.search(body)
        names = [header.group(1), *(re.findall(r"'([^']*)'", also.group(1)) if also else [])]
        for name in names:
            found[name] = (header.group(1), body)
    return found


def names() -> frozenset[str]:
    """Every program name the file lists (read as text only)."""
    global _index
    if _index is None:
        _index = _read_index()
    return frozenset(_index)


def options_for(name: str) -> tuple[str, ...] | None:
    """The options of `name` that run programs (None: none listed)."""
    global _index
    cached = _loaded.get(name)
    if cached is not None:
        return cached
    if _index is None:
        _index = _read_index()
    entry = _index.get(name)
    if entry is None:
        return None
    options = load_table(*entry)
    for alias, other in _index.items():
        if other[0] == entry[0]:
            _loaded[alias] = options
    return options


def load_table(table: str, text: str, where: str = DATA) -> tuple[str, ...]:
    """Parse one table and run its examples."""
    import tomllib

    try:
        data = tomllib.loads(text)[table]
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        raise ExecOptionsError(f"{where}: [{table}]: {exc}") from None
    unknown = set(data) - _FIELDS
    if unknown:
        raise ExecOptionsError(f"{where}: [{table}]: unknown field(s) {sorted(unknown)}")
    raw = data.get("options")
    if not isinstance(raw, str) or not raw.split():
        raise ExecOptionsError(f"{where}: [{table}].options: expected options")
    options = tuple(raw.split())
    bad = [o for o in options if not _OPTION.match(o)]
    if bad:
        raise ExecOptionsError(f"{where}: [{table}].options: {bad[0]!r} is not an option")
    examples = data.get("examples", [])
    if not isinstance(examples, list) or not examples:
        raise ExecOptionsError(f"{where}: [{table}]: every table needs examples")
    for number, example in enumerate(examples):
        run, runs = example.get("run"), example.get("runs")
        if not isinstance(run, str) or not isinstance(runs, bool) or set(example) - {"run", "runs"}:
            raise ExecOptionsError(f"{where}: [{table}].examples[{number}]: expected run, runs")
        words = run.split()
        if example_checker is not None:
            found = example_checker(words[0], words[1:], options)
            if bool(found) != runs:
                raise ExecOptionsError(
                    f"{where}: [{table}].examples[{number}]: `{run}` gives runs = {bool(found)}"
                )
    return options


def all_tables(path: str = DATA) -> dict[str, tuple[str, ...]]:
    """Every table, parsed and checked (for tests)."""
    index = _read_index(path)
    return {name: load_table(table, text, path) for name, (table, text) in index.items()}

"""Compiled regular expressions kept between one-shot hook processes.

`re.compile` runs Python's regex parser and compiler (pure Python) for every pattern a
process meets: about 5 ms of a one-shot hook's life, spent on the same few dozen patterns
every time (the standard library's `platform` and `textwrap`, which msgspec imports, the
policy engine's input checks, the review log's secret masks, the rules in use). CPython
turns a pattern into a program (a list of opcodes) and hands that to `_sre.compile`;
`install` makes `re` remember those programs in the user's state directory and pass them
straight to `_sre.compile` the next time.

Same pattern, same program: a program is reused only for the identical pattern text,
type and flags, written by the identical Python (version, `_sre` magic number and code
size), read from a file only this user could have written (askgate.private_files), and
`_sre.compile` checks every program it is given. Anything unexpected — a missing or
corrupt file, an entry of the wrong shape, an exception — falls back to Python's own
compile. Only the one-shot hook installs it (`askgate hook …` deciding in-process); the
daemon and the CLI compile as usual.

Layout: `$XDG_STATE_HOME/askgate/regex-cache.marshal` (0600, in the 0700 state directory
that askgate's built-in rules keep agents from writing).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing`: installed before anything else is imported
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FILE_NAME = "regex-cache.marshal"
ENV_SWITCH = "ASKGATE_HOOK_CACHE"  # "off": compile as usual (askgate.policy_cache too)
FORMAT = 1
MAX_PATTERNS = 4_096  # a process that meets more (generated patterns) stops recording
MAX_PATTERN_LENGTH = 10_000

# (type, pattern, flags) -> (flags, code, groups, groupindex, indexgroup), what
# `_sre.compile` takes after the pattern itself.
_Program = tuple[int, list[int], int, dict[str, int], tuple["str | None", ...]]


class _State:
    path = ""
    table: dict[tuple[str, str | bytes, int], Any] | None = None  # loaded on first compile
    added = 0


_state = _State()
# Python's own `re._compiler.compile`, kept at the first `install` (never this module's).
_python_compile: Any = None


def _identity() -> tuple[Any, ...]:
    import _sre  # type: ignore[import-not-found]

    return (FORMAT, sys.version, sys.hexversion, _sre.MAGIC, _sre.CODESIZE, _sre.MAXREPEAT)


def _load() -> dict[tuple[str, str | bytes, int], Any]:
    import marshal

    from askgate.private_files import read_private

    data = read_private(_state.path) if _state.path else None
    if not data:
        return {}
    try:
        stored = marshal.loads(data)
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(stored, tuple) or len(stored) != 2 or stored[0] != _identity():
        return {}
    table = stored[1]
    return table if isinstance(table, dict) else {}


def _program_of(pattern: str | bytes, flags: int) -> _Program:
    """What `re._compiler.compile` computes before it calls `_sre.compile` (Python 3.11+)."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    groupindex = parsed.state.groupdict
    indexgroup: list[str | None] = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    return (
        flags | parsed.state.flags,
        [int(op) for op in code],  # opcodes are int subclasses, which marshal refuses
        parsed.state.groups - 1,
        dict(groupindex),
        tuple(indexgroup),
    )


def _compile(pattern: Any, flags: int = 0) -> Any:
    import _sre

    original = _python_compile
    if not isinstance(pattern, (str, bytes)) or flags & 128 or len(pattern) > MAX_PATTERN_LENGTH:
        return original(pattern, flags)  # (128: re.DEBUG prints while compiling)
    if _state.table is None:
        try:
            _state.table = _load()
        except Exception:
            _state.table = {}
    key = (type(pattern).__name__, pattern, flags)
    program = _state.table.get(key)
    if program is not None:
        try:
            return _sre.compile(pattern, *program)
        except Exception:  # a program of the wrong shape: compile it afresh
            del _state.table[key]
    try:
        program = _program_of(pattern, flags)
        compiled = _sre.compile(pattern, *program)
    except Exception:
        return original(pattern, flags)  # raises re.error for a bad pattern, as before
    if len(_state.table) < MAX_PATTERNS:
        _state.table[key] = program
        _state.added += 1
    return compiled


def install(env: Mapping[str, str]) -> None:
    """Make `re.compile` reuse programs from the state directory (this process only)."""
    global _python_compile
    import re._compiler  # type: ignore[import-not-found]

    if re._compiler.compile is _compile:  # already installed in this process
        return
    if env.get(ENV_SWITCH, "").lower() in ("off", "0", "no", "false"):
        return
    from askgate.locations import state_dir

    try:
        path = os.path.join(state_dir(env), FILE_NAME)
    except ValueError:  # no HOME: nowhere to keep it
        return
    _state.path, _state.table, _state.added = path, None, 0
    _python_compile = re._compiler.compile
    re._compiler.compile = _compile


def save() -> None:
    """Write the programs back when this process compiled new ones (best effort)."""
    if not _state.added or _state.table is None or not _state.path:
        return
    import marshal

    from askgate.private_files import write_private

    try:
        write_private(_state.path, marshal.dumps((_identity(), _state.table)))
    except (OSError, ValueError):
        return
    _state.added = 0

"""One layer of wrapping: what a wrapper runs, and the helpers wrapper handlers share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.words import Word


class Peel:
    """What one wrapper layer does (see module docstring)."""

    __slots__ = (
        "assigned",
        "cwd",
        "extra",
        "floor",
        "inner",
        "keep",
        "option_words",
        "reads",
        "recursive",
        "recursive_writes",
        "scripts",
        "settings",
        "unknown_names",
        "writes",
    )

    def __init__(self, inner: Sequence[Word] = (), floor: str | None = None) -> None:
        self.inner: list[Word] = list(inner)
        self.floor = floor
        self.keep = False  # the wrapper stays a unit of its own
        self.scripts: list[tuple[Word, str]] = []  # (shell source, context)
        self.extra: list[tuple[list[Word], str]] = []  # (argv, context)
        self.cwd: list[Word] = []
        self.reads: list[str] = []
        self.recursive: list[str] = []  # read with everything below (xargs' unknown files)
        self.writes: list[str] = []
        self.recursive_writes: list[str] = []  # changed with everything below (find -delete)
        self.option_words: list[Word] = []  # scanned for path-looking words
        self.assigned: list[str] = []
        # `env NAME=value`: the words, for HARMLESS_SETTINGS (the names are in `assigned`).
        self.settings: list[Word] = []
        # Why the files it hands its command are not known (xargs fed by a file): any
        # read or write deny/ask rule could apply to them (Unit.unknown_names).
        self.unknown_names = ""

    def add_floor(self, reason: str) -> None:
        self.floor = reason if self.floor is None else f"{self.floor}; {reason}"


Handler = Callable[[list[Word]], Peel | None]


def simple(
    short_value: str = "",
    long_value: str = "",
    short_flags: str = "",
    long_flags: str = "",
    floor: str | None = None,
    skip_operands: int = 0,
) -> Handler:
    """A wrapper of the form `name [options] [N fixed operands] command…`."""
    long_values, long_flag_set = names(long_value), names(long_flags)

    def handler(args: list[Word]) -> Peel:
        result = scan(
            args, short_value, long_values, short_flags=short_flags, long_flags=long_flag_set
        )
        peel = Peel(result.operands[skip_operands:], floor)
        peel.option_words = result.option_words + result.operands[:skip_operands]
        if result.unknown and floor is None:
            # A transparent wrapper we cannot read might be hiding what it runs.
            peel.add_floor(f"unrecognised option {result.unknown[0]} for a wrapper")
        return peel

    return handler


def joined(words: Sequence[Word]) -> Word:
    """Several words handed to a shell as one string (ssh, watch, eval)."""
    text = " ".join(w.text for w in words)
    dynamic = next((w.dynamic for w in words if w.dynamic), None)
    return Word(text, " ".join(w.source for w in words), dynamic)


def kept(floor: str | None = None) -> Peel:
    peel = Peel((), floor)
    peel.keep = True
    return peel

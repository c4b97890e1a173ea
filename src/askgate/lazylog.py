"""A logger for modules on the hook's path that imports `logging` only when it logs.

`import logging` costs a one-shot hook process several milliseconds (threading, traceback,
weakref, string, its own regexes) on every tool call, while these modules log only on an
internal error. `LazyLogger("askgate.gate")` stands in for `logging.getLogger(...)`: the
first attribute looked up (`log.exception`, `log.warning`, ...) imports logging, runs what
`when_logging_loads` registered (the hook's one-line stderr handler) and hands over the
real logger, so callers, levels, handlers and caller information are logging's own.

Imported on every tool call: the standard library's `sys` only.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # not `typing`: imported on every tool call
if TYPE_CHECKING:
    from collections.abc import Callable
    from logging import Logger
    from typing import Any

_PENDING: list[Callable[[], None]] = []


def when_logging_loads(configure: Callable[[], None]) -> None:
    """Run `configure` now when `logging` is already imported, else just before a lazy
    logger first hands out the real one (so it is in place before any record)."""
    if "logging" in sys.modules:
        configure()
    else:
        _PENDING.append(configure)


def _run_pending() -> None:
    while _PENDING:
        _PENDING.pop(0)()


class LazyLogger:
    """`logging.getLogger(name)`, looked up on first use."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Logger | None = None

    @property
    def name(self) -> str:
        return self._name

    def real(self) -> Logger:
        if self._logger is None:
            import logging

            _run_pending()
            self._logger = logging.getLogger(self._name)
        return self._logger

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.real(), attribute)

"""The working directory as `cd`, `pushd` and `popd` move it within one command."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.shell.words import Word


def _absolute(path: str) -> bool:
    return (
        path.startswith(("/", "~"))
        or path in ("$HOME", "$PWD")
        or path.startswith(("$HOME/", "$PWD/"))
    )


def join(base: str | None, target: str) -> str | None:
    """`cd base && cd target`, folded lexically (bash's default logical cd).

    Returns None when the result is the starting directory itself.
    """
    combined = target if _absolute(target) or base is None else f"{base}/{target}"
    return normalise(combined)


def normalise(path: str) -> str | None:
    """`.` and `//` dropped; `..` kept as written. bash's default cd folds `..` lexically
    (logical), but `cd -P` and every cd after `set -P` climb out of a symlink's *target*:
    keeping `..` lets paths.resolve check both the lexical and the resolved form."""
    absolute = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            # Never folded here: `link/..` is the link target's parent to a physical cd
            # (paths.resolve computes both forms). `..` at `/` stays at `/`.
            if parts or not absolute:
                parts.append("..")
            continue
        parts.append(part)
    if absolute:
        return "/" + "/".join(parts)
    return "/".join(parts) or None


def _root(part: str) -> bool:
    return part in ("~", "$HOME", "$PWD")


class Cwd:
    """Where the next unit runs: `path` (None = the request's cwd), or unknown."""

    __slots__ = ("path", "stack", "unknown")

    def __init__(
        self,
        path: str | None = None,
        unknown: str | None = None,
        stack: tuple[str | None, ...] = (),
    ) -> None:
        self.path = path
        self.unknown = unknown
        self.stack = stack

    def copy(self) -> Cwd:
        return Cwd(self.path, self.unknown, self.stack)

    def same(self, other: Cwd) -> bool:
        return (self.path, self.unknown, self.stack) == (other.path, other.unknown, other.stack)

    def assign(self, other: Cwd) -> None:
        self.path, self.unknown, self.stack = other.path, other.unknown, other.stack

    def lose(self, reason: str) -> None:
        if self.unknown is None:
            self.unknown = reason
        self.path = None

    def merge(self, branches: Sequence[Cwd]) -> None:
        """After if/case: known only when every branch ends in the same place."""
        first = branches[0]
        if all(first.same(b) for b in branches[1:]):
            self.assign(first)
        else:
            self.assign(first)
            self.lose("runs after a cd in only some branches")

    def within(self, extra: Sequence[Word]) -> tuple[str | None, str | None]:
        """This directory moved further by `git -C`/`env -C` words: (path, unknown reason)."""
        path, unknown = self.path, self.unknown
        for word in extra:
            if not word.static:
                return (
                    None,
                    unknown or f"runs in a directory only known at run time ({word.source})",
                )
            path = join(path, word.text)
        return path, unknown

    def change(self, command: str, operands: Sequence[Word]) -> None:
        """Apply `cd`/`pushd`/`popd` with their non-option operands."""
        if command == "popd":
            if self.stack:
                self.path, self.stack = self.stack[-1], self.stack[:-1]
            else:
                self.lose("runs after popd")
            return
        if not operands:
            if command == "pushd":
                self.lose("runs after pushd without a directory")
            else:
                self.path = "~"
            return
        if len(operands) > 1:
            self.lose(f"runs after {command} with several operands")
            return
        target = operands[0]
        if not target.static or target.text == "-" or target.text.startswith(("+", "-")):
            self.lose(
                f"runs after `{command} {target.source}` to a directory only known at run time"
            )
            return
        if self.unknown is not None and not _absolute(target.text):
            return  # relative to a directory we do not know
        if command == "pushd":
            self.stack = (*self.stack, self.path)
        self.path = join(self.path, target.text)
        if _absolute(target.text):
            self.unknown = None

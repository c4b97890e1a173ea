"""The working directories a command may be in, as `cd`, `pushd` and `popd` move it.

bash does not tell in advance whether a `cd` succeeds, so the analyser keeps the *set*
of places the shell may be in: one `Config` per possibility (the directory, the rest of
the directory stack, `$OLDPWD`). `a && b` runs b only where a succeeded; after `a; b`
or `a || b` the places a started from stay possible (walker.py merges them at those
separators). A directory the analysis cannot know is UNKNOWN: a unit that runs there
and names a relative path is floored (commands.py), a unit without one is not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.words import Word

# A directory only known at run time (never a real path: it holds a NUL).
UNKNOWN = "\x00unknown"
# More possibilities than this and the set becomes "somewhere unknown".
MAX_CONFIGS = 32
_TILDE_USER = lazy_compile(r"^~[A-Za-z_][A-Za-z0-9_.-]*(?:/.*)?$")
_ROTATION = lazy_compile(r"^[+-][0-9]+$")

Dir = str | None  # absolute, `~…`, `$HOME…`, relative to the request's cwd, None = that cwd
Probe = Callable[[Dir], "bool | None"]  # does this directory exist and can it be entered?


class Config(NamedTuple):
    """One possible state of the shell: where it is, its `dirs` stack below the top,
    and `$OLDPWD`. `deep` = entries below `stack` are unknown (the agent's shell may
    have pushed before this command)."""

    path: Dir
    stack: tuple[Dir, ...] = ()
    oldpwd: Dir = UNKNOWN
    deep: bool = True


_START = Config(None)
_START_CONFIGS = (_START,)
_new_cwd = object.__new__  # copies skip __init__ (they are made for every pipeline stage)
# configs -> their distinct paths (Cwd.paths is asked once per unit; the sets recur).
_PATHS_MEMO: dict[tuple[Config, ...], tuple[Dir, ...]] = {}


def _absolute(path: str) -> bool:
    return (
        path.startswith(("/", "~"))
        or path in ("$HOME", "$PWD")
        or path.startswith(("$HOME/", "$PWD/"))
    )


def is_relative(path: str) -> bool:
    """A path whose meaning depends on the working directory."""
    return not path.startswith(("/", "~")) and not (path == "$HOME" or path.startswith("$HOME/"))


def join(base: Dir, target: str) -> Dir:
    """`cd base && cd target`, folded lexically (bash's default logical cd).

    Returns None when the result is the starting directory itself; UNKNOWN when the
    base is unknown and the target relative.
    """
    if target == "$PWD" or target.startswith("$PWD/"):
        if base is UNKNOWN or base == UNKNOWN:
            return UNKNOWN
        target = "." + target[4:] if base is not None else target
    if _absolute(target):
        return normalise(target)
    if base == UNKNOWN:
        return UNKNOWN
    return normalise(target if base is None else f"{base}/{target}")


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
    return part.startswith("~") or part in ("$HOME", "$PWD")


class Cwd:
    """The set of places the next unit may run in (see module docstring)."""

    __slots__ = ("configs", "fallible", "reason")

    def __init__(
        self,
        path: Dir = None,
        unknown: str | None = None,
        stack: tuple[Dir, ...] = (),
        configs: tuple[Config, ...] | None = None,
    ) -> None:
        if configs is None:
            if unknown or path is not None or stack:
                configs = (Config(UNKNOWN if unknown else path, stack),)
            else:
                configs = _START_CONFIGS
        self.configs = configs
        self.reason = unknown
        # How many directory changes so far may have failed (the walker keeps where the
        # shell stood before one of those possible, too).
        self.fallible = 0

    # -- views ---------------------------------------------------------------------

    @property
    def paths(self) -> tuple[Dir, ...]:
        """The distinct possible directories, most recent first (UNKNOWN included)."""
        configs = self.configs
        if len(configs) == 1:
            return (configs[0].path,)
        found = _PATHS_MEMO.get(configs)
        if found is None:
            found = tuple(dict.fromkeys(c.path for c in configs))
            if len(_PATHS_MEMO) >= 1024:
                _PATHS_MEMO.clear()
            _PATHS_MEMO[configs] = found
        return found

    @property
    def unknown(self) -> str | None:
        """Why one of the possible directories is unknown, or None."""
        if UNKNOWN in self.paths:
            return self.reason or "runs in a directory only known at run time"
        return None

    # -- copying and combining -------------------------------------------------------

    def copy(self) -> Cwd:
        twin = _new_cwd(Cwd)
        twin.configs, twin.reason, twin.fallible = self.configs, self.reason, self.fallible
        return twin

    def snapshot(self, configs: tuple[Config, ...], fallible: int) -> Cwd:
        """This state as it was (configs and fallible count saved earlier)."""
        earlier = _new_cwd(Cwd)
        earlier.configs, earlier.reason, earlier.fallible = configs, self.reason, fallible
        return earlier

    def same(self, other: Cwd) -> bool:
        return self.configs == other.configs

    def assign(self, other: Cwd) -> None:
        self.configs, self.reason, self.fallible = other.configs, other.reason, other.fallible

    def _set(self, configs: Sequence[Config], reason: str | None = None) -> None:
        unique = tuple(dict.fromkeys(configs))
        if len(unique) > MAX_CONFIGS:
            unique = (*unique[: MAX_CONFIGS - 1], Config(UNKNOWN))
            reason = reason or "runs where too many directory changes meet"
        if reason and self.reason is None:
            self.reason = reason
        self.configs = unique

    def lose(self, reason: str) -> None:
        """Every later unit runs somewhere unknown (stack and $OLDPWD included)."""
        if self.reason is None or all(c.path != UNKNOWN for c in self.configs):
            self.reason = reason
        self.configs = (Config(UNKNOWN),)

    def union(self, others: Sequence[Cwd]) -> None:
        """Any of these states is possible from here on (a command that may have failed)."""
        configs = list(self.configs)
        reason = self.reason
        for other in others:
            configs.extend(other.configs)
            reason = reason or other.reason
            self.fallible = max(self.fallible, other.fallible)
        self._set(configs, reason)

    def merge(self, branches: Sequence[Cwd]) -> None:
        """After if/case: any branch's end is possible."""
        first, rest = branches[0], branches[1:]
        self.assign(first)
        if rest:
            self.union(rest)

    def within(self, extra: Sequence[Word]) -> Cwd:
        """These directories moved further by `git -C`/`env -C` words (a new Cwd)."""
        moved = self.copy()
        for word in extra:
            target = _static_target(word)
            if target is None:
                moved.lose(f"runs in a directory only known at run time ({word.source})")
                continue
            moved._set([c._replace(path=join(c.path, target)) for c in moved.configs])
        return moved

    # -- cd, pushd, popd -----------------------------------------------------------------

    def change(self, command: str, args: Sequence[Word], probe: Probe | None = None) -> None:
        """Apply `cd`/`pushd`/`popd` with their arguments (options included).

        `probe(directory)` says whether a directory exists and can be entered now (None:
        cannot tell). A change into one that can is taken to succeed; any other may fail,
        and the walker then keeps the previous places possible too."""
        no_cd = physical = False
        operands: list[Word] = []
        ended = False
        for word in args:
            text = word.text
            if not ended and word.static and text == "--":
                ended = True
            elif (
                not ended
                and word.static
                and text.startswith("-")
                and text != "-"
                and not _ROTATION.match(text)
            ):
                if command != "cd" and "n" in text[1:]:
                    no_cd = True
                physical = physical or "P" in text[1:]
            else:
                operands.append(word)
        if len(operands) > 1:
            self.lose(f"runs after {command} with several operands")
            return
        operand = operands[0] if operands else None
        if operand is not None and _static_target(operand) is None:
            self.lose(
                f"runs after `{command} {operand.source}` to a directory only known at run time"
            )
            return
        target = None if operand is None else _static_target(operand)
        if physical and target is not None and ".." in target.split("/"):
            # `cd -P link/..` is the link target's parent, which the text does not show.
            self.lose(f"runs after `{command} -P {target}`, which resolves links first")
            return
        step = {"cd": _cd, "pushd": _pushd, "popd": _popd}[command]
        result: list[Config] = []
        certain = probe is not None
        for config in self.configs:
            moved = step(config, target, no_cd)
            if moved is None:
                self.reason = self.reason or f"runs after `{command}` to a place not tracked"
                moved = Config(UNKNOWN)
                certain = False  # it may also have failed
            elif certain and moved.path != config.path:
                certain = probe(moved.path) is True  # type: ignore[misc]
            elif moved.path == config.path and (target is not None or command != "cd"):
                certain = False  # bash refused (out of range, no stack): a failure
            result.append(moved)
        if not certain:
            self.fallible += 1
        self._set(result)


def _static_target(word: Word) -> str | None:
    """The directory a cd operand names, or None when it is only known at run time."""
    if word.static:
        return word.text
    if _TILDE_USER.match(word.text) and word.dynamic and word.dynamic.startswith("tilde"):
        return word.text  # `~user`: resolved later (paths.py), like `~`
    return None


def _moved(config: Config, path: Dir, stack: tuple[Dir, ...]) -> Config:
    return Config(path, stack, config.path, config.deep)


def _cd(config: Config, target: str | None, no_cd: bool) -> Config | None:
    if target is None:
        return _moved(config, "~", config.stack)
    if target == "-":
        return Config(config.oldpwd, config.stack, config.path, config.deep)
    return _moved(config, join(config.path, target), config.stack)


def _rotation(config: Config, text: str) -> int | None:
    """The index into `dirs` (0 = current) that `+N`/`-N` names; None when unknowable."""
    count = 1 + len(config.stack)
    number = int(text[1:])
    if text[0] == "+":
        return number if number < count or not config.deep else None
    if config.deep:
        return None  # counted from the bottom, which is not known
    index = count - 1 - number
    return index if index >= 0 else count  # count = out of range (bash: error)


def _pushd(config: Config, target: str | None, no_cd: bool) -> Config | None:
    dirs = (config.path, *config.stack)
    if target is None:
        if len(dirs) < 2:
            return None if config.deep else config  # bash: "no other directory"
        if no_cd:
            return None
        return _moved(config, dirs[1], (dirs[0], *dirs[2:]))
    if _ROTATION.match(target):
        index = _rotation(config, target)
        if index is None:
            return None
        if index >= len(dirs):
            return config  # out of range: bash refuses, nothing moves
        rotated = dirs[index:] + dirs[:index]
        if no_cd:
            return None
        return _moved(config, rotated[0], rotated[1:])
    new = join(config.path, target)
    if no_cd:
        return Config(config.path, (new, *config.stack), config.oldpwd, config.deep)
    return _moved(config, new, dirs)


def _popd(config: Config, target: str | None, no_cd: bool) -> Config | None:
    dirs = (config.path, *config.stack)
    if target is None:
        index = 1 if no_cd else 0
    elif _ROTATION.match(target):
        found = _rotation(config, target)
        if found is None:
            return None
        index = found
    else:
        return config  # bash: invalid argument, nothing moves
    if index >= len(dirs) or len(dirs) < 2:
        return None if config.deep else config  # empty stack or out of range
    remaining = dirs[:index] + dirs[index + 1 :]
    if index == 0:
        return _moved(config, remaining[0], remaining[1:])
    return Config(config.path, remaining[1:], config.oldpwd, config.deep)

"""The plan's entries, a leaf below plan.py and tripwires.py (which plan.py calls back): one
path the kernel enforces, a pattern the plan covers, and the `.git` file's target.

Imports nothing of the sandbox package, so the package stays acyclic.
"""

from __future__ import annotations

import contextlib
import os

import msgspec

from askgate.policy.paths import fold_lexically

# What a tripwire or the watch moves aside goes to NAME.askgate-blocked[-N].
SUFFIX = ".askgate-blocked"
# What counts as made while a run lasted: changed after it started, less this much (file
# times are coarser than the clock on some filesystems).
CLOCK_SLACK_S = 1.0


def symlinks_on_the_way(path: str) -> list[str]:
    """The symlinks among `path`'s components (itself included), outermost first."""
    found: list[str] = []
    current = ""
    for part in path.split("/")[1:]:
        current += "/" + part
        if os.path.islink(current):
            found.append(current)
    return found


def outside_env() -> dict[str, str]:
    """What the tail's git parses get of this process's environment (git runs outside
    the sandbox, and only the system git: gitconfig.py)."""
    return {"HOME": os.environ.get("HOME", "/"), "PATH": os.environ.get("PATH", "")}


def move_aside(path: str) -> tuple[str | None, str | None]:
    """(where it went, None) or (None, why it could not be kept: then it is removed)."""
    target = path + SUFFIX
    for number in range(1, 100):
        if not os.path.lexists(target):
            break
        target = f"{path}{SUFFIX}-{number}"
    try:
        os.rename(path, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(path)  # cannot be kept aside: it must not stay in place
        return None, error.strerror or str(error)
    return target, None


class PlanEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One path the kernel enforces, and the rule it comes from."""

    path: str  # symlinks resolved: what the mount covers
    named: str = ""  # the path as the rule names it (before symlinks are resolved)
    kind: str  # "dir" | "file" | "missing" | "other"
    why: str  # the rule, e.g. `read "~/.ssh/**" = deny (user: /h/.config/askgate/policy.toml:3)`
    pattern: str = ""
    placeholder: str | None = None  # the first missing component to create (then masked)
    # The placeholder is a symlink into askgate's holding directory (hidden in every
    # sandbox), not a mount: see `_redirectable` and placeholders.py.
    redirect: bool = False
    # A link tripwire (tripwires.py): the protected name is a symlink in a writable
    # directory (frozen at its target); this is its text, put back if it was replaced.
    link: str = ""
    # A glob tripwire (kind "glob"): a directory a program scans at start (a user site
    # directory's `*.pth`); what matches there made since this time is moved aside.
    since: float = 0.0
    # The index tripwire: the writable roots (a file outside them the command could not
    # have written, so the tail never moves it).
    roots: tuple[str, ...] = ()


class _Source(msgspec.Struct, frozen=True):
    pattern: str  # absolute, or starting with **
    why: str
    rule: bool = False  # from a policy rule: checked against the policy's own evaluation


def gitdir_of_link(path: str) -> str | None:
    """The directory a `.git` *file* names (`gitdir: ../main/.git/worktrees/x`, relative
    to the file's directory), folded; None when it is not such a file."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(4096).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = text[len("gitdir:") :].strip()
    if not target:
        return None
    return fold_lexically(os.path.join(os.path.dirname(path), target))


class TreeWatch(msgspec.Struct, frozen=True, kw_only=True):
    """Protected names that may be made *below* the roots (`sub/.envrc`,
    `src/.claude/settings.json`), where no mount can stand for a name not known in
    advance: the directories the plan's walk listed, watched by their change time
    (treewatch.py), and the names to look for where one changed.

    `names`: the literal tails of the anywhere-patterns (`.envrc`, `.claude/settings.json`,
    `.codex` for `**/.codex/**`), with `whys` (the rule of each); `existing`: what the
    walk found at those names, and the holes and placeholders (never moved aside);
    `absent`: paths that did not exist and must not appear (`.git/modules`); `modules`:
    the project's `.git/modules`, whose new repositories' configurations are checked."""

    directories: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    whys: tuple[str, ...] = ()
    existing: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    modules: str = ""

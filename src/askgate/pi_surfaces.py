"""pi's surface names as askgate lookups, so a pi extension can call `rpc:check` unchanged.

pi's permission system names its surfaces differently (seed 000 lists the legacy six:
`tools`, `bash`, `mcp`, `skills`, `special`, `external_directory`; the flat format adds
`path` and the per-tool names `read`, `write`, `edit`, `grep`, `find`, `ls`). Each name
maps to one or more askgate (surface, value) lookups; the answer is the strictest of them.
Pure data and one function: no policy is evaluated here.
"""

from __future__ import annotations

from askgate.policy.model import Surface

Lookup = tuple[Surface, str | None]

# pi name -> askgate surface, value passed through unchanged.
RENAMED: dict[str, Surface] = {
    "tools": Surface.TOOL,
    "skills": Surface.SKILL,
}

# pi's path-bearing tools: with a path, the path surface that tool touches; without one,
# the `tool` surface with the tool's name (is the tool itself allowed?).
PATH_TOOLS: dict[str, Surface] = {
    "read": Surface.READ,
    "grep": Surface.READ,
    "find": Surface.READ,
    "ls": Surface.READ,
    "write": Surface.WRITE,
    "edit": Surface.WRITE,
}

# pi's `path` surface covers every access to a path: both directions are looked up.
PATH_ANY = "path"

# pi's `special` surface takes the name of a special check as its value (no path): askgate
# answers `external_directory` with the rule for a directory outside any project, `/`.
SPECIAL = "special"
SPECIAL_CHECKS: dict[str, Lookup] = {"external_directory": (Surface.EXTERNAL_DIRECTORY, "/")}


class UnknownSurface(ValueError):
    """Neither an askgate surface nor a pi name askgate can answer."""


def lookups(surface: str, value: str | None) -> list[Lookup]:
    """The askgate lookups that answer `(surface, value)`; the caller takes the strictest.

    `value` None means "no value given" (askgate then evaluates `*`)."""
    if surface in PATH_TOOLS:
        if value is None:
            return [(Surface.TOOL, surface)]
        return [(PATH_TOOLS[surface], value)]
    if surface in RENAMED:
        return [(RENAMED[surface], value)]
    if surface == PATH_ANY:
        return [(Surface.READ, value), (Surface.WRITE, value)]
    if surface == SPECIAL:
        target = SPECIAL_CHECKS.get(value or "")
        if target is None:
            raise UnknownSurface(
                f"special check {value!r} has no askgate equivalent"
                f" (known: {', '.join(SPECIAL_CHECKS)})"
            )
        return [target]
    try:
        return [(Surface(surface), value)]
    except ValueError:
        known = [str(s) for s in Surface] + [*RENAMED, *PATH_TOOLS, PATH_ANY, SPECIAL]
        names = ", ".join(dict.fromkeys(known))
        raise UnknownSurface(f"{surface!r} is not a surface (known: {names})") from None


def askgate_surface(surface: str, value: str | None) -> Surface | None:
    """The single askgate surface a prompt about `(surface, value)` concerns, or None
    (an unknown name, or a pi name that spans several surfaces)."""
    try:
        found = lookups(surface, value)
    except UnknownSurface:
        return None
    return found[0][0] if len(found) == 1 else None

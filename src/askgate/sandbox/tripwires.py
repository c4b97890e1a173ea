"""Tripwires: protected files that did not exist when the command started.

A missing protected file whose placeholder would be seen by ordinary work (`.envrc`,
`.npmrc`, `.gitattributes`, `.git/commondir` — git lists a placeholder as untracked and
`git add -A` commits it; an empty `commondir` stops git altogether) is watched instead of
held: once the command is over — under bubblewrap every process of it is gone by then
(its PID namespace ended) — whatever appeared at such a name is moved aside to
`NAME.askgate-blocked[-N]`, never run by anything, and one line says so. Its parent
directory is pinned (`plan.pinned_ancestors`), so the name cannot have been reached
through a renamed directory either.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

from askgate.sandbox.plan import PlanEntry

SUFFIX = ".askgate-blocked"


def sprung(tripwires: Sequence[PlanEntry]) -> list[PlanEntry]:
    return [entry for entry in tripwires if os.path.lexists(entry.path)]


def disarm(tripwires: Sequence[PlanEntry]) -> list[str]:
    """Move aside what the command created at a tripwire; one line for each."""
    lines: list[str] = []
    for entry in sprung(tripwires):
        target = entry.path + SUFFIX
        for number in range(1, 100):
            if not os.path.lexists(target):
                break
            target = f"{entry.path}{SUFFIX}-{number}"
        try:
            os.rename(entry.path, target)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)  # cannot be kept aside: it must not stay in place
            lines.append(
                f"removed {entry.path} the command created ({error.strerror}); {entry.why}"
            )
            continue
        lines.append(f"moved {entry.path} the command created to {target}: {entry.why}")
    return lines


def shell_test(tripwires: Sequence[PlanEntry]) -> str | None:
    """A bash condition (builtins only) true when any tripwire sprung, or None."""
    import shlex

    if not tripwires:
        return None
    tests = [f"[ -e {shlex.quote(e.path)} ] || [ -L {shlex.quote(e.path)} ]" for e in tripwires]
    return " || ".join(tests)

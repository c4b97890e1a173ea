"""Secrets that git tracks: a file the policy denies reading (the built-in secrets list,
the project's own read denies) whose blob sits in `.git/objects` is readable by anything
that reads git's objects (`git show HEAD:.env`, a copy of `.git`), whatever the sandbox
hides. `askgate init` and `askgate doctor` warn about each one.

The list of tracked files comes from `git ls-files` (bounded: a huge repository is
checked up to MAX_FILES paths, and says so); deciding is the policy's own read decision,
so an exception such as `.env.example` is not reported.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

MAX_FILES = 50_000
GIT_TIMEOUT_S = 20.0


class TrackedSecrets:
    def __init__(self, paths: list[tuple[str, str]], note: str | None) -> None:
        self.paths = paths  # (path relative to the root, the reason the rule gives)
        self.note = note  # why the check is incomplete or could not run, if it is


def tracked_files(root: str) -> tuple[list[str], str | None]:
    """Paths git tracks under `root` (relative), and a note when the list is incomplete."""
    argv = ["git", "-C", root, "ls-files", "-z", "--cached"]
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(argv, capture_output=True, timeout=GIT_TIMEOUT_S, env=env)
    except (OSError, subprocess.SubprocessError) as error:
        return [], f"git ls-files did not run ({type(error).__name__})"
    if done.returncode != 0:
        return [], "not a git repository (or git ls-files failed)"
    names = [name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name]
    if len(names) > MAX_FILES:
        return names[:MAX_FILES], f"checked the first {MAX_FILES} of {len(names)} tracked files"
    return names, None


def find_tracked_secrets(root: str, env: Mapping[str, str] | None = None) -> TrackedSecrets:
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action, Surface

    names, note = tracked_files(root)
    if not names:
        return TrackedSecrets([], note)
    policy = Policy.load(root, env=env)
    denies = [
        policy.rules.compile(rule)
        for rule in policy.rules.rules
        if rule.surface is Surface.READ and rule.action is Action.DENY and rule.agent is None
    ]
    found: list[tuple[str, str]] = []
    for name in names:
        path = os.path.join(root, name)
        if not any(pattern.match(path) for pattern in denies):
            continue  # the common case: no deny pattern matches, no full decision needed
        decision = policy.decide(Surface.READ, path, cwd=root)
        if decision.action is Action.DENY:
            rule = decision.rule
            found.append((name, (rule.reason if rule is not None else None) or "read denied"))
    return TrackedSecrets(found, note)


def warning_lines(result: TrackedSecrets) -> list[str]:
    """One line per tracked secret, then what to do."""
    lines = [
        f"git tracks {name} ({why}): its contents are in .git/objects"
        for name, why in result.paths[:20]
    ]
    if len(result.paths) > 20:
        lines.append(f"… and {len(result.paths) - 20} more tracked secret files")
    if result.paths:
        lines.append(
            "remove them from the index (`git rm --cached FILE`), rotate what they held, and"
            " rewrite history if it was pushed"
        )
    return lines

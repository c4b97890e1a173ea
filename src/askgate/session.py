"""Session approvals: "Yes, for this session" and the pattern it approves.

A session approval only ever turns an *ask* into allow (a policy deny is final,
and asks that come from an opaque construct are never covered). The suggested
pattern is arity-aware for bash (``git status --short`` -> ``git status *``) and is
refused outright for prefixes that would approve arbitrary code (``bash -c``,
``python``, ``sudo``, ``env`` …).
"""

from __future__ import annotations

import _thread  # threading's Lock without importing threading (every tool call)
import os

from askgate.policy.model import Surface
from askgate.policy.patterns import Pattern, compile_pattern, kind_of

# How many leading words name "the command" (longest prefix wins; unknown = 1).
ARITY: dict[str, int] = {
    "git": 2,
    "npm": 2,
    "npm run": 3,
    "npm exec": 3,
    "pnpm": 2,
    "pnpm run": 3,
    "yarn": 2,
    "yarn run": 3,
    "bun": 2,
    "bun run": 3,
    "npx": 2,
    "pip": 2,
    "pip3": 2,
    "uv": 2,
    "uv run": 3,
    "poetry": 2,
    "poetry run": 3,
    "docker": 2,
    "docker compose": 3,
    "podman": 2,
    "kubectl": 2,
    "helm": 2,
    "aws": 3,
    "gcloud": 3,
    "az": 3,
    "gh": 2,
    "gh pr": 3,
    "gh issue": 3,
    "cargo": 2,
    "go": 2,
    "go run": 3,
    "make": 1,
    "terraform": 2,
    "systemctl": 2,
    "brew": 2,
    "apt": 2,
    "apt-get": 2,
    "dotnet": 2,
    "mvn": 2,
    "gradle": 2,
    "rustup": 2,
    "deno": 2,
    "pytest": 1,
    "ruff": 2,
    "tox": 1,
    "just": 2,
}

# Words that would approve arbitrary code or privilege: never a session pattern's
# first word (Codex keeps a similar list of banned prefix suggestions).
BANNED_PREFIXES = frozenset(
    {
        "bash",
        "sh",
        "zsh",
        "dash",
        "ksh",
        "fish",
        "csh",
        "tcsh",
        "busybox",
        "python",
        "python2",
        "python3",
        "node",
        "nodejs",
        "deno",
        "bun",
        "perl",
        "ruby",
        "php",
        "lua",
        "osascript",
        "pwsh",
        "powershell",
        "sudo",
        "doas",
        "su",
        "env",
        "xargs",
        "eval",
        "exec",
        "source",
        ".",
        "command",
        "builtin",
        "nohup",
        "timeout",
        "nice",
        "time",
        "stdbuf",
        "setsid",
        "watch",
        "parallel",
        "ssh",
        "chroot",
        "nsenter",
        "find",
        "fd",
        "git -c",
        "npx",
        "uvx",
        "pipx",
        "awk",
        "gawk",
        "sed",
    }
)

MAX_SESSION_PATTERNS = 5


def suggest_bash_pattern(command: str) -> str | None:
    words = command.split(" ")
    if not words or not words[0]:
        return None
    first = os.path.basename(words[0]) if "/" in words[0] else words[0]
    if first in BANNED_PREFIXES or " ".join(words[:2]) in BANNED_PREFIXES:
        return None
    # A "*" or "?" the agent typed would be a wildcard in the approved pattern, wider than
    # the command the human saw; "$" and "`" make the command word dynamic.
    if any(ch in first for ch in "*?$`"):
        return None
    arity = 1
    for n in range(min(len(words), 3), 0, -1):
        key = " ".join([first, *words[1:n]])
        if key in ARITY:
            arity = ARITY[key]
            break
    if len(words) < arity or len(words) == 1:
        if any(ch in word for word in words[1:] for ch in "*?"):
            return None
        return " ".join([first, *words[1:]])
    head = [first, *words[1:arity]]
    if any(w.startswith("-") or any(ch in w for ch in "*?") for w in head[1:]):
        return None
    return " ".join(head) + " *"


def suggest_pattern(surface: Surface, value: str) -> str | None:
    """The pattern "Yes, for this session" approves, or None when no safe one exists."""
    if surface is Surface.BASH:
        return suggest_bash_pattern(value)
    if surface is Surface.MCP:
        server, sep, _ = value.partition(":")
        wild = any(ch in server for ch in "*?")
        return f"{server}:*" if sep and server and not wild else None
    if surface.is_path:
        parent = os.path.dirname(value)
        if parent in ("", "/") or any(ch in parent for ch in "*?"):
            return None
        return parent.rstrip("/") + "/*"
    if "*" in value or "?" in value:
        return None
    return value


class SessionApprovals:
    """In-memory approvals for one session. Thread-safe; cleared when the gate closes."""

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._patterns: dict[Surface, list[Pattern]] = {}

    def approve(self, surface: Surface, pattern: str) -> None:
        compiled = compile_pattern(kind_of(surface), pattern)
        with self._lock:
            bucket = self._patterns.setdefault(surface, [])
            if compiled not in bucket:
                bucket.append(compiled)

    def covering(self, surface: Surface, value: str) -> str | None:
        """The approved pattern that covers `value`, if any."""
        with self._lock:
            for pattern in self._patterns.get(surface, ()):
                if pattern.matches(value):
                    return pattern.text
        return None

    def patterns(self) -> list[tuple[Surface, str]]:
        with self._lock:
            return [(s, p.text) for s, ps in self._patterns.items() for p in ps]

    def clear(self) -> None:
        with self._lock:
            self._patterns.clear()

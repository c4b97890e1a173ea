"""What kind of project a directory holds, and the starter policy `askgate init` writes.

Pure apart from looking at which marker files exist: no file is read or written here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# marker file (at the project root) -> profile it suggests
MARKERS: tuple[tuple[str, str], ...] = (
    ("pyproject.toml", "python-dev"),
    ("setup.py", "python-dev"),
    ("setup.cfg", "python-dev"),
    ("requirements.txt", "python-dev"),
    ("package.json", "node-dev"),
    ("Cargo.toml", "rust-dev"),
    ("go.mod", "go-dev"),
    ("Dockerfile", "docker-read"),
    ("compose.yaml", "docker-read"),
    ("compose.yml", "docker-read"),
    ("docker-compose.yml", "docker-read"),
    ("docker-compose.yaml", "docker-read"),
    (".git", "git-local"),
)
# Every starter policy reads and writes inside the project without asking.
ALWAYS = ("read-only", "project-write")


def detect_profiles(root: str) -> list[tuple[str, str]]:
    """(profile, the marker that suggested it) for `root`, in a stable order."""
    found: list[tuple[str, str]] = [(name, "always") for name in ALWAYS]
    for marker, profile in MARKERS:
        if os.path.lexists(os.path.join(root, marker)) and profile not in {p for p, _ in found}:
            found.append((profile, marker))
    return found


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def starter_policy(profiles: Sequence[str]) -> str:
    """The text of a starter policy selecting `profiles`."""
    selected = ", ".join(_toml_string(name) for name in profiles)
    return f"""# askgate policy written by `askgate init`. Edit freely; `askgate config test` checks
# the examples, `askgate explain bash "…"` shows which rule decides and why.
#
# Profiles are built-in rule sets (`askgate config show --builtin`, docs/policy.md); they
# load just below this file, so every rule here overrides them.

default = "ask"
profiles = [{selected}]

[read]
"~/.ssh/**" = {{ action = "deny", reason = "private keys", match = ["~/.ssh/id_ed25519"] }}
"~/.aws/**" = {{ action = "deny", reason = "cloud credentials" }}
"~/.gnupg/**" = {{ action = "deny", reason = "private keys" }}
"**/.env*" = {{ action = "deny", reason = "secrets", match = [".env", "app/.env.local"] }}
"**/.env.example" = {{ action = "allow", match = [".env.example"] }}

[write]
"**/.env*" = {{ action = "deny", reason = "secrets" }}

[bash]
# Common edits (uncomment what fits):
# "git push *" = "allow"                      # push without asking
# "make *" = "allow"                          # run the Makefile's targets
# "docker compose up *" = "ask"
# "rm -rf ./build" = "allow"                  # a literal rule: exactly this command
# "curl *" = {{ action = "deny", reason = "use the WebFetch tool" }}
"""

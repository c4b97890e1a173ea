"""What kind of project a directory holds, and the starter policy `askgate init` writes.

Pure apart from looking at which marker files exist: no file is read or written here.
Markers count at the root and below it (monorepos keep `frontend/package.json` and
`services/api/pyproject.toml`), found by a walk bounded in depth and entries that skips
dependency and build trees.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

# marker file name -> profile it suggests
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
# Every starter policy reads and writes inside the project without asking; with the
# sandbox required, the sandboxed profile replaces project-write (it holds its writes).
ALWAYS = ("read-only", "project-write")
ALWAYS_SANDBOXED = ("read-only", "sandboxed-project")
# curl and wget with their hosts decided by `[net]`: only where init writes the host list
# and `network = "policy"` (this askgate has both).
SANDBOXED_FETCH = "sandboxed-fetch"

# How far below the root markers are looked for, and how much the walk may read: a
# monorepo keeps its packages one to three levels down; a huge tree must not stall init.
MAX_DEPTH = 3
MAX_ENTRIES = 5_000
# Directories that hold other people's code or build output, never the project's own
# markers (a package.json in node_modules says nothing about this project).
SKIPPED_DIRS = frozenset(
    {
        "node_modules",
        "vendor",
        "target",
        "dist",
        "build",
        "out",
        "venv",
        "env",
        "site-packages",
        "__pycache__",
        "third_party",
        "bower_components",
    }
)
_MARKER_NAMES = {marker: profile for marker, profile in MARKERS if marker != ".git"}


def _markers_below(root: str) -> list[tuple[str, str]]:
    """(profile, marker path relative to root) for markers 1..MAX_DEPTH levels below
    `root`, shallowest first, within MAX_ENTRIES directory entries."""
    found: list[tuple[str, str]] = []
    level = [root]
    seen = 0
    for _depth in range(MAX_DEPTH):
        next_level: list[str] = []
        for directory in level:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError:
                continue
            seen += len(entries)
            if seen > MAX_ENTRIES:
                return found
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not name.startswith(".") and name not in SKIPPED_DIRS:
                        next_level.append(entry.path)
                elif directory != root and name in _MARKER_NAMES:
                    found.append((_MARKER_NAMES[name], os.path.relpath(entry.path, root)))
        level = next_level
    return found


def detect_profiles(root: str, *, sandboxed: bool = False) -> list[tuple[str, str]]:
    """(profile, the marker that suggested it) for `root`, in a stable order: markers at
    the root first (in MARKERS order), then those found below it."""
    always: tuple[str, ...] = ALWAYS_SANDBOXED if sandboxed else ALWAYS
    if sandboxed and network_policy_supported():
        always = (*always, SANDBOXED_FETCH)  # with the [net] host list init writes
    found: list[tuple[str, str]] = [(name, "always") for name in always]
    chosen = set(always)
    for marker, profile in MARKERS:
        if os.path.lexists(os.path.join(root, marker)) and profile not in chosen:
            found.append((profile, marker))
            chosen.add(profile)
    for profile, marker in _markers_below(root):
        if profile not in chosen:
            found.append((profile, marker))
            chosen.add(profile)
    return found


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Package registries each project kind downloads from (the default host list of a
# sandboxed policy, with the machine's own loopback).
REGISTRY_HOSTS: dict[str, tuple[str, ...]] = {
    "python-dev": ("pypi.org", "files.pythonhosted.org"),
    "node-dev": ("registry.npmjs.org", "registry.yarnpkg.com"),
    "rust-dev": ("crates.io", "index.crates.io", "static.crates.io"),
    "go-dev": ("proxy.golang.org", "sum.golang.org"),
}
LOCAL_HOSTS = ("localhost:*", "127.0.0.1:*", "[::1]:*")


def default_hosts(profiles: Sequence[str]) -> list[str]:
    """The hosts a sandboxed project reaches without asking: its registries and localhost."""
    hosts = [host for name in profiles for host in REGISTRY_HOSTS.get(name, ())]
    return list(dict.fromkeys([*hosts, *LOCAL_HOSTS]))


def network_lines(profiles: Sequence[str], *, supported: bool) -> list[str]:
    """The network part of a sandboxed starter policy. `supported`: this askgate knows the
    `net` surface and `[sandbox] network = "policy"`; else the same lines are written as
    comments, so the file loads today and says what to switch on. (The one place the
    lead adjusts if the network names change.)"""
    hosts = default_hosts(profiles)
    net = [f'{_toml_string(host)} = "allow"' for host in hosts]
    if supported:
        return ['network = "policy"          # only the hosts in [net] below', "", "[net]", *net]
    return [
        "# network: this askgate has no host list yet; when it does:",
        '# network = "policy"',
        "# [net]",
        *[f"# {line}" for line in net],
    ]


def network_policy_supported() -> bool:
    from askgate.policy.model import Surface
    from askgate.policy.sandbox_table import NETWORK_MODES

    return "net" in {surface.value for surface in Surface} and "policy" in NETWORK_MODES


def starter_policy(profiles: Sequence[str], *, sandboxed: bool = False) -> str:
    """The text of a starter policy selecting `profiles`; with `sandboxed`, shell commands
    must run in the kernel sandbox."""
    selected = ", ".join(_toml_string(name) for name in profiles)
    sandbox = ""
    if sandboxed:
        lines = network_lines(profiles, supported=network_policy_supported())
        sandbox = (
            "\n# Every allowed shell command runs in the kernel sandbox (docs/sandbox.md); if it\n"
            "# cannot start, the command does not run. That is what lets the sandboxed-project\n"
            "# profile allow running the project's own code.\n"
            "[sandbox]\n"
            'bash = "required"\n' + "\n".join(lines) + "\n"
        )
    return f"""# askgate policy written by `askgate init`. Edit freely; `askgate config test` checks
# the examples, `askgate explain bash "…"` shows which rule decides and why.
#
# Profiles are built-in rule sets (`askgate config show --builtin`, docs/policy.md); they
# load just below this file, so every rule here overrides them. Credentials (~/.ssh,
# ~/.aws, ~/.gnupg, cloud and registry tokens, shell histories, .env) are denied by
# askgate's built-in secrets list whatever this file says.

default = "ask"
profiles = [{selected}]
{sandbox}
[read]
"**/.env*" = {{ action = "deny", reason = "secrets", match = [".env", "app/.env.local"] }}
"**/.env.example" = {{ action = "allow", match = [".env.example"] }}
"**/.env.sample" = "allow"
"**/.env.template" = "allow"

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

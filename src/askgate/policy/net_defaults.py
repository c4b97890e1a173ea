"""The `[net]` table `askgate init` writes: the project's package registries and the
machine's own loopback ports, everything else asked (docs/network.md).

    default_net_table(["python-dev", "node-dev"]) ==
        {"localhost": "allow", "pypi.org:443": "allow", "files.pythonhosted.org:443": "allow",
         "registry.npmjs.org:443": "allow", "registry.yarnpkg.com:443": "allow", "*": "ask"}

Keys are the profile names `profiles/detect.py` suggests. Data, so a registry is one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# profile -> the registry hosts its package manager contacts (HTTPS)
REGISTRIES: dict[str, tuple[str, ...]] = {
    "python-dev": ("pypi.org:443", "files.pythonhosted.org:443"),
    "node-dev": ("registry.npmjs.org:443", "registry.yarnpkg.com:443"),
    "rust-dev": ("crates.io:443", "index.crates.io:443", "static.crates.io:443"),
    "go-dev": ("proxy.golang.org:443", "sum.golang.org:443"),
}
# Every project: the machine's own loopback ports (dev servers, databases). Under
# `network = "policy"` these are the HOST's ports, reached through askgate's proxy.
ALWAYS: tuple[str, ...] = ("localhost",)
OTHERWISE = "*"


def default_net_table(
    profiles: Iterable[str], *, extra_hosts: Sequence[str] = ()
) -> dict[str, str]:
    """pattern -> action for the detected `profiles` (unknown names add nothing), plus
    `extra_hosts` (e.g. the hosts of the repository's git remotes), then `"*" = "ask"`."""
    table: dict[str, str] = dict.fromkeys(ALWAYS, "allow")
    for profile in profiles:
        table.update(dict.fromkeys(REGISTRIES.get(profile, ()), "allow"))
    table.update(dict.fromkeys(extra_hosts, "allow"))
    table[OTHERWISE] = "ask"
    return table


def render_net_table(table: dict[str, str]) -> str:
    """The table as TOML (`[net]` and one `"pattern" = "action"` line each)."""
    lines = ["[net]"]
    lines += [f'"{pattern}" = "{action}"' for pattern, action in table.items()]
    return "\n".join(lines) + "\n"

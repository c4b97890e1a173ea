"""Commands `askgate suggest` proposes only where the sandbox is required: network tools,
interpreters running inline code, package installs. Each is a question a rule table cannot
make safe (it reaches another machine, runs code nobody has read, or runs an unknown
package's install scripts); inside the kernel sandbox it can do only what the policy
lets the kernel allow.

`risky_class(text)` takes a bash pattern (`npm install *`) or a unit's command (`npm install
lodash`), words separated by spaces, and names the class, or None. A `*` where the deciding
word would be counts as that word (`pip *` covers `pip install`).

    >>> risky_class("curl -s https://x")
    'a network tool'
    >>> risky_class("python3 -c *")
    'an interpreter running inline code'
    >>> risky_class("pip *")
    'a package install'
    >>> risky_class("npm test *") is None
    True
"""

from __future__ import annotations

import os

NETWORK_TOOLS = frozenset(
    {
        "curl",
        "wget",
        "http",
        "https",
        "xh",
        "httpie",
        "aria2c",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "telnet",
        "ftp",
        "sftp",
        "ssh",
        "scp",
        "rsync",
        "gh",
        "glab",
        "hub",
    }
)
# program -> subcommands that reach a remote
NETWORK_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset({"fetch", "pull", "push", "clone", "ls-remote", "remote", "submodule"}),
    "docker": frozenset({"pull", "push", "login", "run"}),
    "npm": frozenset({"publish", "login", "adduser"}),
}
INTERPRETERS: dict[str, frozenset[str]] = {
    name: flags
    for names, flags in (
        (("python", "python3", "python2", "pypy3"), frozenset({"-c", "-"})),
        (("node", "nodejs", "bun"), frozenset({"-e", "-p", "--eval", "--print", "-"})),
        (("deno",), frozenset({"eval"})),
        (("perl", "ruby"), frozenset({"-e", "-E"})),
        (("php",), frozenset({"-r"})),
        (("bash", "sh", "zsh", "dash", "ksh", "fish"), frozenset({"-c", "-lc", "-ic"})),
        (("osascript", "Rscript", "lua"), frozenset({"-e"})),
        (("awk", "gawk"), frozenset({"BEGIN"})),
    )
    for name in names
}
# program -> subcommands that install packages (and run their install scripts)
INSTALLERS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "download"}),
    "pip3": frozenset({"install", "download"}),
    "pipx": frozenset({"install", "run"}),
    "uv": frozenset({"add", "pip", "tool", "sync"}),
    "uvx": frozenset({"*"}),
    "poetry": frozenset({"add", "install"}),
    "pdm": frozenset({"add", "install"}),
    "conda": frozenset({"install", "create"}),
    "mamba": frozenset({"install", "create"}),
    "npm": frozenset({"install", "i", "add", "ci", "exec", "x"}),
    "npx": frozenset({"*"}),
    "pnpm": frozenset({"add", "install", "i", "dlx"}),
    "yarn": frozenset({"add", "install", "dlx"}),
    "bun": frozenset({"add", "install", "i", "x"}),
    "bunx": frozenset({"*"}),
    "cargo": frozenset({"install", "add", "binstall"}),
    "go": frozenset({"install", "get"}),
    "gem": frozenset({"install"}),
    "bundle": frozenset({"install", "add"}),
    "composer": frozenset({"install", "require"}),
    "brew": frozenset({"install", "reinstall"}),
    "apt": frozenset({"install"}),
    "apt-get": frozenset({"install"}),
    "dnf": frozenset({"install"}),
    "yum": frozenset({"install"}),
    "apk": frozenset({"add"}),
}


def _covers(word: str, choices: frozenset[str]) -> bool:
    return "*" in word or word in choices or "*" in choices


def _words(text: str) -> list[str]:
    words = text.split()
    if words:
        words[0] = os.path.basename(words[0])
    return words


def risky_class(text: str) -> str | None:
    words = _words(text)
    if not words:
        return None
    program, rest = words[0], words[1:]
    if program == "*":
        return "a network tool"  # a pattern starting with `*` covers every program
    if program in NETWORK_TOOLS:
        return "a network tool"
    following = next((w for w in rest if not w.startswith("-") or w == "*"), "")
    if program in NETWORK_SUBCOMMANDS and _covers(following, NETWORK_SUBCOMMANDS[program]):
        return "a network tool"
    if program in INSTALLERS and (
        "*" in INSTALLERS[program] or _covers(following, INSTALLERS[program])
    ):
        return "a package install"
    if program in INTERPRETERS:
        flags = INTERPRETERS[program]
        if any(word == "*" or word in flags for word in rest) or (rest and rest[0] == "*"):
            return "an interpreter running inline code"
    return None

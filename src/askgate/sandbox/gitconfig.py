"""The files a project's frozen git configuration names: frozen too.

`.git/config` is read-only inside the sandbox, but what it *points to* can lie in the
writable project: `core.hooksPath = tools/hooks` (git runs the hooks there on the next
`git commit` outside), `include.path = ../.gitconfig-project` (an included file may set
`core.fsmonitor`, which `git status` runs), `core.fsmonitor = tools/fsmon.sh`,
`core.sshCommand`, an alias `!tools/x.sh`, a filter or diff driver's program. The plan
reads the repository's configuration (`config`, `config.worktree`, each submodule's
`modules/NAME/config`, the user's global files, and every file they include, conditional
includes whatever their condition) and freezes what it names: a hooks directory, an
included file (recursively, to git's own depth of 10), an attributes file, and the
program of each setting git runs as a command when it is a path (has a `/`; a bare name
is looked up on PATH, not in the project).

git itself parses the files (`git config --file F --list -z`: no repository discovery,
no system or global file, no include followed by git, so no `safe.directory` check and
nothing run), and only for a file whose text names one of the keys above (key names are
plain letters, case-insensitive: a config without them costs no process). Parsed files
are remembered by their inode, size and modification time, so a resident daemon parses a
config once. Paths are resolved as git resolves them: an include relative to the file
that includes it, `~/` to HOME, a hooks path and a program relative to the worktree.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping

from askgate.policy.paths import fold_lexically

GIT_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_INCLUDE_DEPTH = 10
PARSE_TIMEOUT_S = 2.0
MAX_CONFIG_BYTES = 1 << 20
WHY = "git: named by the repository's configuration ({key} in {origin})"

# Words whose presence in a config file's text means it may name a path (lowercased).
_KEYWORDS: tuple[bytes, ...] = (
    b"include",
    b"hookspath",
    b"attributesfile",
    b"fsmonitor",
    b"sshcommand",
    b"editor",
    b"pager",
    b"askpass",
    b"program",
    b"external",
    b"textconv",
    b"command",
    b"driver",
    b"clean",
    b"smudge",
    b"process",
    b"helper",
    b"alias",
    b"difffilter",
    b"proxy",
    b"uploadpack",
    b"receivepack",
    b"alternaterefs",
    b"keycommand",
    b"cmd",
    b"update",
    b"path",
    b"browser",
    b"templatedir",
    b"sendmail",
    b"smtpserver",
)
# Keys whose value git runs as a command (`section.key`, or `section.*.key` for any
# subsection); alias.* starting with `!` too.
_PROGRAMS: frozenset[str] = frozenset(
    {
        "core.fsmonitor",
        "core.sshcommand",
        "core.editor",
        "core.pager",
        "core.askpass",
        "sequence.editor",
        "gpg.program",
        "gpg.*.program",
        "diff.external",
        "diff.*.textconv",
        "diff.*.command",
        "merge.*.driver",
        "filter.*.clean",
        "filter.*.smudge",
        "filter.*.process",
        "credential.helper",
        "credential.*.helper",
        "pager.*",
        "interactive.difffilter",
        "uploadpack.packobjectshook",
        "core.gitproxy",
        "core.alternaterefscommand",
        "remote.*.uploadpack",
        "remote.*.receivepack",
        "gpg.*.defaultkeycommand",
        "trailer.*.command",
        "trailer.*.cmd",
        "mergetool.*.cmd",
        "mergetool.*.path",
        "difftool.*.cmd",
        "difftool.*.path",
        "sendemail.smtpserver",
        "sendemail.sendmailcmd",
        "sendemail.tocmd",
        "sendemail.cccmd",
        "web.browser",
        "browser.*.cmd",
        "browser.*.path",
        "man.*.cmd",
        "man.*.path",
    }
)

_BOOLEANS = frozenset({"", "true", "false", "yes", "no", "on", "off", "1", "0"})

# (path, its bytes) -> [(key, value)]
_PARSED: dict[tuple[str, bytes], list[tuple[str, str]]] = {}
_MAX_REMEMBERED = 256


def named_paths(
    config_files: Iterable[str], *, worktree: str, env: Mapping[str, str]
) -> list[tuple[str, str, str]]:
    """(absolute path, "dir" | "file", why) for everything the given git configuration
    files name that git would run or read configuration from: included files first."""
    home = env.get("HOME", "")
    found: dict[str, tuple[str, str]] = {}
    pending = [(fold_lexically(path), 0) for path in config_files if path.startswith("/")]
    seen: set[str] = set()
    while pending:
        config, depth = pending.pop(0)
        if config in seen:
            continue
        seen.add(config)
        for key, value in _entries(config, env):
            origin = os.path.basename(config) if depth == 0 else config
            why = WHY.format(key=key, origin=origin)
            if key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
                path = _resolve(value, base=os.path.dirname(config), home=home)
                if path is not None:
                    found.setdefault(path, ("file", why))
                    if depth + 1 < MAX_INCLUDE_DEPTH:
                        pending.append((path, depth + 1))
            elif key in ("core.hookspath", "init.templatedir"):
                path = _resolve(value, base=worktree, home=home)
                if path is not None:
                    found.setdefault(path, ("dir", why))
            elif key == "core.attributesfile":
                path = _resolve(value, base=worktree, home=home)
                if path is not None:
                    found.setdefault(path, ("file", why))
            elif _is_program(key, value):
                program = _first_word(value)
                if "/" in program:
                    path = _resolve(program, base=worktree, home=home)
                    if path is not None:
                        found.setdefault(path, ("file", why))
    return [(path, kind, why) for path, (kind, why) in found.items()]


def submodule_configs(git_directories: Iterable[tuple[str, Iterable[str]]]) -> list[str]:
    """`modules/NAME/config` of each git directory that holds its submodules: git outside
    reads it when `git status` recurses into the submodule."""
    found: list[str] = []
    for directory, parts in git_directories:
        if "modules/*/config" not in parts:
            continue
        try:
            names = sorted(os.listdir(os.path.join(directory, "modules")))
        except OSError:
            continue
        found += [os.path.join(directory, "modules", name, "config") for name in names]
    return found


def global_files(env: Mapping[str, str]) -> list[str]:
    """The user's own git configuration files (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/
    config`, or `$GIT_CONFIG_GLOBAL`): what they name in a writable HOME is frozen too."""
    named = env.get("GIT_CONFIG_GLOBAL", "")
    if named:
        return [named] if named.startswith("/") else []
    home = env.get("HOME", "")
    xdg = env.get("XDG_CONFIG_HOME", "") or (os.path.join(home, ".config") if home else "")
    found = [os.path.join(home, ".gitconfig")] if home.startswith("/") else []
    if xdg.startswith("/"):
        found.append(os.path.join(xdg, "git", "config"))
    return found


def _is_program(key: str, value: str) -> bool:
    if key.startswith("alias."):
        return value.startswith("!")
    if key.startswith("submodule.") and key.endswith(".update"):
        return value.startswith("!")  # `!command` runs; checkout, rebase, merge do not
    if key == "core.fsmonitor" and value.strip().lower() in _BOOLEANS:
        return False  # the built-in daemon (true) or off
    section, _, rest = key.partition(".")
    middle, _, name = rest.rpartition(".")
    wildcard = f"{section}.*.{name}" if middle else f"{section}.*"
    return key in _PROGRAMS or wildcard in _PROGRAMS


def _first_word(value: str) -> str:
    text = value.lstrip("!").strip()
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return words[0] if words else ""


def _resolve(value: str, *, base: str, home: str) -> str | None:
    value = value.strip()
    if not value or value.startswith("%(") or (value.startswith("~") and "/" not in value):
        return None
    if value.startswith("~/"):
        if not home.startswith("/"):
            return None
        value = os.path.join(home, value[2:])
    elif value.startswith("~"):
        return None  # another user's home: not this user's to write
    path = fold_lexically(value if value.startswith("/") else os.path.join(base, value))
    # A glob character would make the path a pattern for the plan: freeze the nearest
    # directory above it without one instead (fail closed).
    while "*" in path or "?" in path:
        path = os.path.dirname(path)
    return path if path != "/" else None


def _entries(config: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    try:
        with open(config, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES)
    except OSError:
        return []
    # Keyed by the bytes read, not by inode and mtime: a command can set a file's mtime back
    # (`touch -d`), never make other bytes equal these.
    key = (config, raw)
    text = raw.lower()
    remembered = _PARSED.get(key)
    if remembered is not None:
        return remembered
    entries = _parse(config, env) if any(word in text for word in _KEYWORDS) else []
    if len(_PARSED) >= _MAX_REMEMBERED:
        _PARSED.clear()
    _PARSED[key] = entries
    return entries


def _quiet_git(env: Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
    """The system's git (never one the client's PATH names: this runs outside any sandbox)
    and an environment in which it reads no system or global file; None without one."""
    git = shutil.which("git", path=GIT_PATH)
    if git is None:
        return None
    quiet = {
        "PATH": GIT_PATH,
        "HOME": env.get("HOME", "/"),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    return git, quiet


def _parse(config: str, env: Mapping[str, str]) -> list[tuple[str, str]]:
    system_git = _quiet_git(env)
    if system_git is None:
        return []  # no system git: the configuration is not parsed (docs/sandbox.md)
    git, quiet = system_git
    try:
        done = subprocess.run(
            [git, "config", "--file", config, "--no-includes", "--list", "-z"],
            cwd="/",
            env=quiet,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PARSE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []  # git cannot read it: git outside refuses to run with it as well
    entries: list[tuple[str, str]] = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if item:
            name, _, value = item.partition("\n")
            entries.append((name, value))
    return entries


def runs_programs(config: str, env: Mapping[str, str]) -> bool:
    """Does this git configuration file make git run a program or read more configuration
    (any program setting, a hooks path, an include)? For a repository a sandboxed command
    made: git outside reads it when it recurses into a gitlink."""
    for key, value in _entries(config, env):
        if key in ("include.path", "core.hookspath", "core.attributesfile", "init.templatedir"):
            return True
        if key.startswith("includeif.") and key.endswith(".path"):
            return True
        if _is_program(key, value):
            return True
    return False


def gitlinks(worktree: str, env: Mapping[str, str]) -> list[str] | None:
    """The paths of the index's gitlinks (mode 160000), relative to the worktree: read by
    git (`ls-files --stage`, which recurses nowhere), with no system or global file and
    the fsmonitor off. None when they cannot be read (no system git, git failed): the
    caller must then assume any repository could be one."""
    system_git = _quiet_git(env)
    if system_git is None:
        return None
    git, quiet = system_git
    argv = [git, "-c", "core.fsmonitor=false", "ls-files", "--stage", "-z"]
    try:
        done = subprocess.run(
            argv,
            cwd=worktree,
            env=quiet,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    found: list[str] = []
    for item in done.stdout.decode("utf-8", "surrogateescape").split("\0"):
        head, _, path = item.partition("\t")
        if head.startswith("160000 ") and path:
            found.append(path)
    return found

"""Secret environment variables a command can reveal (docs/bash.md, "Secret variables").

The `env` policy surface names variables (`*_TOKEN`, `AWS_SECRET_ACCESS_KEY`; the built-in
list is `policy/builtin/rules/secret-env.toml`). This module finds what a command does
with the environment: the variables it expands (`$X`, `${X:-…}`, `"…$X…"`) or prints by
name (`printenv X`, `declare -p X`, `os.environ["X"]`), whether it prints the whole
environment (`env`, `printenv`, `set`, `export -p`, `declare -p`, `/proc/*/environ`,
`ps e`), whether it expands a variable named at run time (`${!name}`), and the
network tool it runs, if any (a program spec with `network = true`, `/dev/tcp/…`). The
engine decides those against the env rules. Pure string work on the command text and
its units.

Expansions are found in the raw text, quotes ignored: `'$GITHUB_TOKEN'` counts although
bash would not expand it. Reading quotes right here would mean reading heredocs and
comments as bash does (an apostrophe in an unquoted heredoc is no quote); counting too
much only asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.model import Unit
from askgate.policy.shell.argv import names
from askgate.policy.shell.pathspecs import network_programs
from askgate.policy.shell.programs import is_interpreter

_EXPANSION = lazy_compile(r"\$(?:\{([!#]?)([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")
# A process's environment through /proc (globs included: `/proc/*/environ`, `/proc/self/env*`).
_PROC_ENVIRON = lazy_compile(r"/proc/[^\s;|&<>]*(?:environ|[*?\[])")
_DEV_NET = lazy_compile(r"/dev/(?:tcp|udp)/")
# Interpreter code that reads the environment: by name when one follows, else all of it.
_CODE_ENV = lazy_compile(
    r"(?:\benviron|\bprocess\s*\.\s*env|\bgetenv|\bENV|%ENV|\$ENV|\bDeno\s*\.\s*env\s*\.\s*get)"
    r"(?:\s*(?:\[|\.get\s*\(|\(|\{|\.)\s*['\"]?([A-Za-z_][A-Za-z0-9_]*))?"
)
_PRINTS_VARIABLES = names("export declare typeset readonly local")
_QUICK = names("env printenv set ps") | _PRINTS_VARIABLES


class EnvUse(NamedTuple):
    """What one command does with its environment (see the module docstring)."""

    names: tuple[str, ...]  # variables expanded or printed by name
    dump: str | None  # the command that prints the whole environment
    indirect: str | None  # the text of a `${!…}` expansion
    network: str | None  # the network tool the command runs


def env_uses(command: str, units: Sequence[Unit]) -> EnvUse | None:
    """What `command` (and its analysed `units`) does with the environment; None: nothing."""
    found: dict[str, None] = {}
    indirect = None
    dump = None
    if "$" in command:
        for match in _EXPANSION.finditer(command):
            sigil, braced, plain = match.groups()
            if sigil == "!":
                # `${!name}` expands the variable `name` names; `${!prefix*}` and
                # `${!array[@]}` only list names or keys.
                if command[match.end() : match.end() + 1] not in ("*", "@", "["):
                    indirect = indirect or command[match.start() : match.end() + 1]
            elif sigil != "#":  # `${#X}` is only the length
                found[braced or plain] = None
    if "/proc/" in command and _PROC_ENVIRON.search(command):
        dump = "/proc/…/environ"
    network = "/dev/tcp" if "/dev/" in command and _DEV_NET.search(command) else None
    programs = network_programs()
    for unit in units:
        name = unit.command.partition(" ")[0].rpartition("/")[2]
        if name in programs and network is None:
            network = name
        if name in _QUICK:
            printed, everything = _printed(name, unit.command.split()[1:])
            found.update(dict.fromkeys(printed))
            if everything and dump is None:
                dump = unit.command[:80]
        elif is_interpreter(name):
            printed, everything = _code_reads(unit.command)
            found.update(dict.fromkeys(printed))
            if everything and dump is None:
                dump = f"{name} code that reads the whole environment"
    if not found and dump is None and indirect is None:
        return None
    return EnvUse(tuple(found), dump, indirect, network)


def _printed(name: str, args: Sequence[str]) -> tuple[list[str], bool]:
    """(variables printed by name, whether the whole environment is printed)."""
    options = [a for a in args if a[:1] in "-+" and a != "-"]
    operands = [a for a in args if a not in options]
    if name == "env":
        # (An env that runs a command is a wrapper: its command is the unit instead.)
        return [], True
    if name == "printenv":
        return operands, not operands
    if name == "set":
        return [], not args
    if name == "ps":
        # BSD-style options (no dash) with `e` show every process's environment.
        return [], any("e" in a for a in args if a[:1] != "-")
    if any(letter in a for a in options for letter in "fF"):
        return [], False  # functions, not variables
    if not operands:
        return [], True  # `export`, `export -p`, `declare -x`, `declare -p`
    if any("p" in a for a in options):
        return [o.partition("=")[0] for o in operands], False  # `declare -p NAME`
    return [], False


def _code_reads(code: str) -> tuple[list[str], bool]:
    """Variables inline interpreter code reads by name, and whether it reads them all."""
    if not any(marker in code for marker in ("environ", "env", "ENV")):
        return [], False
    printed: list[str] = []
    everything = False
    for match in _CODE_ENV.finditer(code):
        if match.group(1):
            printed.append(match.group(1))
        else:
            everything = True
    return printed, everything

"""Commands that run other commands but are matched as written.

Two kinds, both only ever make a unit stricter:

* runners (`uv run pytest`, `npx prettier`, `docker exec box rm -rf /` …) keep their
  written form as the primary form, so an allow such as `uv run *` still works, and
  get the inner command as an alternate, so a deny such as `rm -rf /*` sees it;
* options that make an ordinary tool run a program (`tar --to-command`, `rsync -e`,
  `vim -c`, awk's `system()`, sed's `e` command) floor the unit to ask.
"""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell import exec_options
from askgate.policy.shell.sedscript import runs_commands, sed_scripts
from askgate.policy.shell.words import Word

# (words after the program name that introduce the inner command, options taking a value)
_RUNNERS: dict[str, tuple[tuple[str, ...], frozenset[str]]] = {
    "uv": (("run",), frozenset({"--with", "--python", "-p", "--package", "--directory",
                                "--project", "--env-file", "--extra", "--group", "--index"})),
    "uvx": ((), frozenset({"--with", "--python", "-p", "--from", "--index"})),
    "poetry": (("run",), frozenset({"-C", "--directory", "-P", "--project"})),
    "pipenv": (("run",), frozenset()),
    "pdm": (("run",), frozenset({"-p", "--project"})),
    "hatch": (("run",), frozenset({"-e", "--env"})),
    "pipx": (("run",), frozenset({"--spec", "--python"})),
    "npx": ((), frozenset({"-p", "--package"})),
    "bunx": ((), frozenset({"-p", "--package"})),
    "pnpm": (("exec",), frozenset({"-C", "--dir", "--filter", "-F"})),
    "npm": (("exec",), frozenset({"-p", "--package", "-w", "--workspace", "--prefix"})),
    "yarn": (("exec",), frozenset()),
    "bundle": (("exec",), frozenset({"--gemfile"})),
    "direnv": (("exec",), frozenset()),  # direnv exec DIR cmd: DIR is the first operand
    "mise": (("exec",), frozenset({"-C", "--cd", "-E", "--env", "-j", "--jobs"})),
    "devbox": (("run",), frozenset({"-c", "--config", "-e", "--env", "--env-file"})),
    "nix": (("develop", "-c"), frozenset()),
    "docker": (("exec",), frozenset({"-e", "--env", "-u", "--user", "-w", "--workdir",
                                     "--env-file", "--detach-keys"})),
    "podman": (("exec",), frozenset({"-e", "--env", "-u", "--user", "-w", "--workdir",
                                     "--env-file", "--detach-keys"})),
    "kubectl": (("exec",), frozenset({"-c", "--container", "-n", "--namespace",
                                      "--context", "--kubeconfig"})),
}  # fmt: skip
# More spellings of runners already listed, and more runners (red team 2026-11-29).
_ALSO: tuple[tuple[str, tuple[str, ...], frozenset[str]], ...] = (
    ("mise", ("x",), frozenset({"-C", "--cd", "-E", "--env", "-j", "--jobs"})),
    ("asdf", ("exec",), frozenset()),
    ("rtx", ("exec",), frozenset()),
    ("rtx", ("x",), frozenset()),
    ("pnpm", ("dlx",), frozenset()),
    ("yarn", ("dlx",), frozenset({"-p", "--package"})),
    ("npm", ("x",), frozenset({"-p", "--package", "-w", "--workspace", "--prefix"})),
    ("bun", ("x",), frozenset()),
    ("bun", ("run",), frozenset({"--cwd", "--filter", "-F"})),
    ("conda", ("run",), frozenset({"-n", "--name", "-p", "--prefix", "--cwd"})),
    ("mamba", ("run",), frozenset({"-n", "--name", "-p", "--prefix", "--cwd"})),
    ("micromamba", ("run",), frozenset({"-n", "--name", "-p", "--prefix", "--cwd"})),
    ("pixi", ("run",), frozenset({"-e", "--environment", "--manifest-path"})),
    ("pixi", ("exec",), frozenset({"-s", "--spec", "-c", "--channel"})),
    ("rye", ("run",), frozenset({"--pyproject"})),
    ("tox", ("exec",), frozenset({"-e", "-c", "--conf"})),
)
# Container tools whose `run IMAGE command…` starts a command (its options are too many
# to track: every suffix that starts with an operand is offered to deny rules).
_CONTAINER_RUN = frozenset({"docker", "podman", "nerdctl", "kubectl", "finch"})
_MAX_RUN_FORMS = 12  # options with values before the image: a dozen is plenty
# Runners whose first operand is not the command (a directory, a container, a pod).
_SKIP_OPERAND = frozenset({"direnv", "docker", "podman", "kubectl"})
# Runners whose inner command runs somewhere else: its paths are not ours.
REMOTE_RUNNERS = frozenset({"docker", "podman", "kubectl"})


def container_run_forms(name: str, args: Sequence[Word]) -> list[str]:
    """`docker run [opts] IMAGE cmd…`: every operand-led suffix after `run`."""
    if name not in _CONTAINER_RUN:
        return []
    words = [w.text for w in args]
    if "run" not in words:
        return []
    tail = words[words.index("run") + 1 :]
    starts = [i for i, text in enumerate(tail) if not text.startswith("-")]
    return [" ".join(tail[i:]) for i in starts[:_MAX_RUN_FORMS]]


def runner_inner(name: str, args: Sequence[Word]) -> list[Word] | None:
    """The command a runner starts, for deny matching; None when name is not a runner."""
    spec = _RUNNERS.get(name)
    found = _inner(name, args, spec) if spec is not None else None
    for other, prefix, valued in _ALSO:
        if found is None and other == name:
            found = _inner(name, args, (prefix, valued))
    return found


def _inner(
    name: str, args: Sequence[Word], spec: tuple[tuple[str, ...], frozenset[str]]
) -> list[Word] | None:
    prefix, valued = spec
    words = list(args)
    for expected in prefix:
        # `nix develop -c`, `uv run` …: everything before the prefix word is options.
        while words and words[0].text != expected and words[0].text.startswith("-"):
            words = words[1:]
        if not words or words[0].text != expected:
            return None
        words = words[1:]
    skip_operand = name in _SKIP_OPERAND
    while words:
        text = words[0].text
        if text == "--":
            words = words[1:]
            break
        if text.startswith("-"):
            words = words[2:] if text in valued else words[1:]
            continue
        if skip_operand:
            skip_operand = False
            words = words[1:]
            continue
        break
    return words or None


# Options that run programs: data in policy/builtin/exec-options.toml (exec_options.py).
_EDITORS = frozenset({"vim", "vi", "nvim", "view", "ex", "vimdiff", "gvim"})
_EDITOR_OPTIONS = ("-c", "--cmd", "-S", "-s", "-u", "--startuptime")
_SSH_LIKE = frozenset({"scp", "sftp", "rsync"})
# ssh -o keys that run a local program or load a library (ssh ignores leading blanks
# and quotes around the key: `-o ' "ProxyCommand" cmd'`).
LOCAL_COMMAND_KEYS = (
    "proxycommand", "localcommand", "knownhostscommand", "permitlocalcommand",
    "pkcs11provider", "securitykeyprovider",
)  # fmt: skip


def ssh_option_runs(value: str) -> bool:
    return value.lstrip(' \t"').lower().startswith(LOCAL_COMMAND_KEYS)


_AWK_EXEC = lazy_compile(r'\bsystem\s*\(|\|\s*getline|\|&|\bprintf?\b[^;}]*\|\s*"')


_AWKS = ("awk", "gawk", "mawk", "nawk")
AWKS = frozenset(_AWKS)
_SEDS = ("sed", "gsed")


def exec_option_floor(name: str, args: Sequence[Word]) -> str | None:
    """Why `name args` runs another program through an option, or None."""
    options = exec_options.options_for(name)
    if options is not None:
        found = _exec_option(name, args, options)
        if found:
            return f"{name} {found} runs another program"
    if name in _SSH_LIKE:
        for index, word in enumerate(args):
            value = word.text[2:] if word.text.startswith("-o") else ""
            if word.text == "-o" and index + 1 < len(args):
                value = args[index + 1].text
            if ssh_option_runs(value):
                return f"{name} -o {value.split('=')[0]} runs a local command"
    elif name in _EDITORS:
        for word in args:
            text = word.text
            if text.startswith(_EDITOR_OPTIONS) or (
                text.startswith("+") and not text[1:].isdigit()
            ):
                return f"{name} {text} runs editor commands, which can run shell commands"
    elif name in _AWKS:
        for program in awk_programs(args):
            if _AWK_EXEC.search(program):
                return "the awk program runs commands"
    elif name in _SEDS:
        if not any(w.text == "--sandbox" for w in args) and any(
            runs_commands(script) for script in sed_scripts(args)
        ):
            return "the sed script runs commands or reads/writes other files (e, r, w)"
    elif name == "less" and any(w.text.startswith("+!") for w in args):
        return "less +! runs a command"
    return None


def _exec_option(name: str, args: Sequence[Word], options: tuple[str, ...]) -> str | None:
    """The option of `options` that args use, however spelled: `--to-comm=` (getopt takes
    any unambiguous prefix), `-avze` (a cluster of short options), `tar xIf` (old style)."""
    shorts = "".join(o[1] for o in options if len(o) == 2)
    for index, word in enumerate(args):
        text = word.text
        if text == "--":
            break
        if text.startswith("--"):
            option = text.split("=", 1)[0]
            if any(long.startswith(option) for long in options if long.startswith("--")):
                return option
        elif text.startswith("-"):
            if text.startswith(options) or any(letter in shorts for letter in text[1:]):
                return text.split("=", 1)[0]
        elif name == "tar" and index == 0 and any(letter in shorts for letter in text):
            return text  # old-style bundle: `tar xIf PROGRAM archive`
    return None


def _programs(args: Sequence[Word], program_options: tuple[str, ...], valued: str) -> list[str]:
    """The program text of awk: -e/--source values (separate, attached `--source=…`,
    `-e…`, in a cluster `-ne …`, abbreviated `--sou=…` as getopt allows), else the first
    operand. An `-f`/`--file`/`-E`/`--exec`/`-i` value is a program file: the first operand
    is then data (the file is read and floored by the program spec)."""
    found: list[str] = []
    operand: str | None = None
    index = 0
    while index < len(args):
        text = args[index].text
        index += 1
        if text == "--":
            break
        if text.startswith("--") and len(text) > 2:
            name, eq, value = text.partition("=")
            full = _long_option(name)
            if full is None:
                continue
            if not eq and index < len(args):
                value, index = args[index].text, index + 1
            if full == "--source":
                found.append(value)
            elif full in _AWK_FILE_OPTIONS:
                found.append("")
            continue
        if text.startswith("-") and len(text) > 1:
            for position, letter in enumerate(text[1:], 2):
                if letter not in valued:
                    continue
                value = text[position:]
                if not value and index < len(args):
                    value, index = args[index].text, index + 1
                if letter == "e":
                    found.append(value)
                elif letter in "fEi":
                    found.append("")
                break
            continue
        if operand is None:
            operand = text
    if not found and operand is not None:
        found.append(operand)
    return found


_AWK_LONG_VALUED = ("--source", "--file", "--exec", "--include", "--load", "--assign",
                    "--field-separator")  # fmt: skip
_AWK_FILE_OPTIONS = ("--file", "--exec", "--include")


def _long_option(name: str) -> str | None:
    """The gawk option `name` stands for (getopt takes any unambiguous prefix); None for
    a flag."""
    matches = [option for option in _AWK_LONG_VALUED if option.startswith(name)]
    return matches[0] if len(matches) == 1 or name in matches else None


def awk_programs(args: Sequence[Word]) -> list[str]:
    """The program texts of an awk command (see _programs)."""
    return [p for p in _programs(args, ("-f", "--file", "-e", "--source"), _AWK_VALUED) if p]


_AWK_VALUED = "fvFileE"


# Every name container_run_forms, runner_inner or exec_option_floor can answer for:
# for any other name they find nothing (commands.py skips them).
RUNNER_OR_EXEC_NAMES = frozenset(
    {*_CONTAINER_RUN, *_RUNNERS, *(name for name, _, _ in _ALSO), *exec_options.names(), *_SSH_LIKE,
     *_EDITORS, *_AWKS, *_SEDS, "less"}
)  # fmt: skip


def _example_runs(name: str, words: list[str], options: tuple[str, ...]) -> str | None:
    return _exec_option(name, [Word(w, w) for w in words], options)


exec_options.example_checker = _example_runs  # a table's examples run when it loads

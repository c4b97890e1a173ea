"""Which words of a command are paths it reads or writes.

Paths are reported raw (as written, after quote removal); paths.py resolves them.
Known readers and writers are described by small specs; for every other command
only words that look like paths count. Being generous here only ever makes a
unit stricter (a read/write rule can deny or ask, never allow), but a false path
outside the project costs an external-directory prompt, so pattern arguments
(grep, sed, awk, jq) and option values (`cut -d /`) are skipped.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Protocol

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell import pathspecs
from askgate.policy.shell.argv import Scan, names, scan
from askgate.policy.shell.pathspecs import (
    INDEX,
    Example,
    ProgramSpecError,
    Spec,
    spec_for,
)
from askgate.policy.shell.words import Word

# Not files: writing or reading them touches nothing a policy protects.
PSEUDO_FILES = frozenset(
    {
        "/dev/null",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/fd/0",
        "/dev/fd/1",
        "/dev/fd/2",
    }
)

FILE_TESTS = names("-e -f -d -r -w -x -s -L -h -b -c -p -S -g -u -k -O -G -N -a")

# Commands whose arguments are never paths, however they look.
NO_PATH_COMMANDS = frozenset({"echo", "printf", ":", "true", "false"})

_TILDE_USER = lazy_compile(r"^~[A-Za-z_][A-Za-z0-9_.-]*(?:/|$)")
_FILE_NAME = lazy_compile(r"^[\w.-]*\w\.[A-Za-z][A-Za-z0-9]{0,7}$")  # `x.xml`, `.env.local`
_URL = lazy_compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_REMOTE = lazy_compile(r"^[^/]*:")
_NAME_EQ = lazy_compile(r"^-{0,2}[A-Za-z_][A-Za-z0-9_.-]*=")


def looks_like_path(text: str) -> bool:
    """`/…`, `~`, `~/…`, `./…`, `../…`, `..`, `$HOME/…`, `$PWD/…`, or a `..` segment."""
    if not text:
        return False
    first = text[0]
    if first == "/":
        return not text.startswith("//") or len(text) == 2 or text[2] != "/"
    if first == "~":
        return text == "~" or text.startswith("~/") or _TILDE_USER.match(text) is not None
    if first == ".":
        return text in (".", "..") or text.startswith(("./", "../"))
    if first == "$":
        return text in ("$HOME", "$PWD") or text.startswith(("$HOME/", "$PWD/"))
    return "/../" in text or text.endswith("/..")


def url_path(text: str) -> str | None:
    """The local path of a `file://` URL; None for other URLs."""
    if text.startswith("file://"):
        rest = text[7:]
        if rest.startswith("localhost/"):
            rest = rest[9:]
        return rest if rest.startswith("/") else None
    return None


def generic_path(text: str) -> str | None:
    """The path a word names when it looks like one (also `--opt=/path`, `KEY=/path`)."""
    if "/" not in text and "~" not in text and "$" not in text and text != "..":
        return None
    if _URL.match(text):
        return url_path(text)
    if looks_like_path(text):
        return text
    match = _NAME_EQ.match(text)
    if match:
        value = text[match.end() :]
        if _URL.match(value):
            return url_path(value)
        if looks_like_path(value):
            return value
    return None


def operand_value(word: Word) -> str | None:
    """The text a word of unknown role may name a file by: the word, or an option's
    `=value` (`--output=F`, `KEY=F`); None for a bare option, a URL or a run-time word."""
    if word.dynamic is not None:
        return None
    text = word.text
    if text.isalnum():
        return text  # the common case: `status`, `build`, `5`
    if not text or "\n" in text:
        return None
    if text.startswith("-"):
        _, eq, value = text.partition("=")
        if eq and value and "/" not in value and _FILE_NAME.match(value):
            return "./" + value  # `--junitxml=out.xml`: a file, whether it exists or not
        # `-c.env`: maybe an attached value (checked only if it exists).
        attached = text[2:] if len(text) > 2 and text[1] != "-" else ""
        text = value if eq else attached
    elif "=" in text:
        match = _NAME_EQ.match(text)
        if match:
            text = text[match.end() :]
    if not text or _URL.match(text) or not _is_path(text) or len(text) > 4096:
        return url_path(text) if text.startswith("file://") else None
    return text


# Options whose separate value is, by its name, a file written or read.
_OUTPUT_OPTION = lazy_compile(
    r"^(?:-[oOfw]|--?\w*(?:out|log|file|write|dump|save|dest|export|report|junit|keyout|"
    r"cert|key|trace|record)\w*)$",
    re.I,
)
OUTPUT_OPTION = _OUTPUT_OPTION  # (commands.py: a substitution's digits as its value)
_BARE_NAME = lazy_compile(r"^[\w.][\w.+-]*$")

_CHMOD_MODE = lazy_compile(r"^-[rwxXstugoa]+$")


_SUBSTITUTION = lazy_compile(r"\$\(|`|<\(|>\(")


def _only_glob(word: Word) -> bool:
    """An unquoted glob and nothing else only known at run time (`.e*`, not `$D/*`)."""
    reason = word.dynamic or ""
    return reason.startswith("glob in") and ";" not in reason


def _is_path(text: str) -> bool:
    """Worth reporting: not a pseudo-device, not find's `{}`, not a command's output."""
    return (
        bool(text)
        and text not in PSEUDO_FILES
        and text not in ("{}", "-")
        and not _SUBSTITUTION.search(text)
    )


class PathsView(Protocol):
    """What a unit takes from a Paths (or from a memoised, immutable copy of one)."""

    @property
    def operands(self) -> Sequence[str]: ...
    @property
    def recursive(self) -> Sequence[str]: ...
    @property
    def may_run(self) -> Sequence[str]: ...
    @property
    def globbed(self) -> Sequence[str]: ...
    @property
    def recursive_writes(self) -> Sequence[str]: ...
    @property
    def unknown_names(self) -> str: ...


class Paths:
    """Mutable accumulator used while building one unit."""

    __slots__ = (
        "floors", "globbed", "may_run", "operands", "reads", "recursive", "recursive_writes",
        "unknown_names", "writes",
    )  # fmt: skip

    def __init__(self) -> None:
        self.floors: list[str] = []  # why the unit is ask (a program spec says so)
        self.recursive_writes: list[str] = []  # directories written with all below them
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.operands: list[str] = []  # role unknown: read and (tightening) write
        self.recursive: list[str] = []  # directories read with everything below them
        self.may_run: list[str] = []  # commands an unknown program may run (unknown.py)
        self.globbed: list[str] = []  # unquoted globs among the words (expanded later)
        self.unknown_names = ""  # why it touches files nobody has named (Unit.unknown_names)

    def read(self, text: str) -> None:
        if _is_path(text) and text not in self.reads:
            self.reads.append(text)

    def write(self, text: str) -> None:
        if _is_path(text) and text not in self.writes:
            self.writes.append(text)

    def recursive_read(self, text: str) -> None:
        if _is_path(text) and not _URL.match(text) and text not in self.recursive:
            self.recursive.append(text)

    def recursive_write(self, text: str) -> None:
        if _is_path(text) and text not in self.recursive_writes:
            self.recursive_writes.append(text)

    def generic(self, words: Sequence[Word]) -> None:
        for word in words:
            path = generic_path(word.text)
            if path is not None:
                self.read(path)

    def unknown(self, words: Sequence[Word]) -> None:
        """Arguments of a program whose use of them is unknown: path-looking ones are
        reads (as before), and every word that may name a file is an operand."""
        previous = ""
        operands = self.operands
        for word in words:
            text = word.text
            if _only_glob(word):
                # `git diff --no-index .e* x`: an unquoted glob names what it expands to
                # (the engine expands it, shell/globs.py): those names are operands too.
                operands.append(text)
                previous = ""
                continue
            if word.dynamic is None and text.isalnum():
                # The common case (`status`, `HEAD`, `5`): no path syntax, and the word
                # itself is the operand (what the general steps below make of it).
                if previous[:1] == "-" and _OUTPUT_OPTION.match(previous):
                    self.operand("./" + text)
                if text not in operands:
                    operands.append(text)
                previous = text
                continue
            if "/" in text or "~" in text or "$" in text or text == "..":
                path = generic_path(text)  # what generic() does, in the same pass
                if path is not None:
                    self.read(path)
            if (
                previous[:1] == "-"
                and _OUTPUT_OPTION.match(previous)
                and word.dynamic is None
                and _BARE_NAME.match(word.text)
            ):
                # `tool -o out`, `openssl rand -out hosts`: a file, whether it exists or not.
                self.operand("./" + word.text)
            previous = text if word.dynamic is None else ""
            value = operand_value(word)
            if word.dynamic is None and text[:1] == "-" and text[1:2] not in ("-", ""):
                self.cluster_values(text)
            if value is not None and value not in self.operands:
                self.operands.append(value)
                if ":" in value:
                    # `git show HEAD:.env`, `host:path`: the part after a colon may be a file.
                    after = value.partition(":")[2]
                    if after and not after.startswith("//") and after not in self.operands:
                        self.operands.append(after)

    def cluster_values(self, text: str) -> None:
        """`-qp/etc`: any letter of a cluster may take the rest as its value."""
        for index in range(3, len(text)):
            if text[index] in "/~." and text[index - 1] not in "/~.":
                self.operand(text[index:])

    def operand(self, text: str) -> None:
        if _is_path(text) and not _URL.match(text) and text not in self.operands:
            self.operands.append(text)

    def result(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        writes = tuple(self.writes)
        reads = tuple(p for p in self.reads if p not in writes)
        return reads, writes


def collect(name: str, args: Sequence[Word], paths: Paths) -> None:
    """Add the paths `name args…` reads and writes to `paths`."""
    if name in NO_PATH_COMMANDS:
        return
    spec = spec_for(name)
    if spec is None or spec.kind == "unknown":
        if spec is not None and spec.floor:
            paths.floors.append(spec.floor)
        paths.unknown(args)
    else:
        spec_paths(name, spec, args, paths)


def spec_paths(name: str, spec: Spec, args: Sequence[Word], paths: Paths) -> None:
    """What a program spec (policy/builtin/programs/*.toml) makes of `args`."""
    if spec.floor:
        paths.floors.append(spec.floor)
    if spec.words:
        _word_roles(spec, args, paths)
        return
    words = _prepared(spec, _canonical(args, spec), paths)
    result = scan(
        words, spec.short_value, spec.long_value, permute=True, optional_value=spec.optional_value
    )
    base = spec
    spec = _case(spec, result)
    if spec.floor and spec is not base:
        paths.floors.append(spec.floor)
    _option_paths(result, spec, paths)
    if spec.kind == "opaque":
        # Every word is of unknown role (as for a program with no spec); only the
        # option checks below say more (`mypy --python-executable`, `date -s`).
        _option_checks(name, spec, result, result.operands, paths)
        paths.unknown(args)
        return
    operands = _spec_operands(name, spec, result, words, paths)
    _option_checks(name, spec, result, operands, paths)
    had_input = bool(operands)
    if spec.first and operands:
        (paths.read if spec.first == "read" else paths.write)(operands[0].text)
        operands = operands[1:]
    _operand_paths(name, spec, result, operands, paths)
    _implicit(spec, result, operands, paths)
    if had_input or not spec.first:  # (`unzip` alone extracts nothing)
        _structured(spec, result, operands, paths)
    if spec.kind == "ignore":
        # ssh: the first operand is the host; what follows is the remote command's.
        words = words[: next((i for i, w in enumerate(words) if w.text[:1] != "-"), len(words))]
    first = _first_unknown(words, base)
    if first is not None:
        # An option the spec does not name: its value and what follows may be anything.
        paths.unknown(words[first:])


def _operand_paths(
    name: str, spec: Spec, result: Scan, operands: Sequence[Word], paths: Paths
) -> None:
    """The operands, by the spec's kind."""
    recursive = bool(spec.recursive) and result.has(*spec.recursive)
    kind = spec.kind
    if kind == "read" and spec.in_place and result.has(*spec.in_place):
        _in_place(result.values(*spec.in_place), operands, paths)
    elif kind == "read":
        within = [w.text.rstrip("/") for w in result.values(*spec.relative_to)]
        for word in operands:
            if not _URL.match(word.text) or url_path(word.text):
                paths.read(url_path(word.text) or word.text)
                if recursive:
                    paths.recursive_read(word.text)
                for directory in within:
                    # `tar -cf x -C ~ .ssh` reads ~/.ssh, not ./.ssh.
                    paths.read(f"{directory}/{word.text}")
                    if recursive:
                        paths.recursive_read(f"{directory}/{word.text}")
    elif kind == "write":
        _write_operands(name, operands, paths)
        if recursive:
            for word in operands:
                paths.recursive_write(word.text)
    elif kind in ("copy", "move", "link"):
        _copy(spec, result, list(operands), recursive, paths)
    elif kind == "none":
        paths.generic(operands)


def _prepared(spec: Spec, words: Sequence[Word], paths: Paths) -> Sequence[Word]:
    """The words getopt should see: a leading subcommand (`yq eval`) dropped, an
    old-style bundle (`tar czf`) given its `-`, two-valued options (`jq --arg N V`,
    `--slurpfile N FILE`: FILE read) and every word after a stop (`--args`) removed."""
    if not (spec.subcommands or spec.bundle or spec.pairs or spec.stop):
        return words
    out = list(words)
    if out and spec.subcommands and out[0].static and out[0].text in spec.subcommands:
        out = out[1:]
    if out and spec.bundle and not out[0].text.startswith("-"):
        out[0] = Word("-" + out[0].text, out[0].source, out[0].dynamic)
    kept: list[Word] = []
    index = 0
    while index < len(out):
        text = out[index].text
        if text in spec.stop:
            break  # the rest are values, not files
        if text in spec.pairs:
            if text in spec.pair_reads and index + 2 < len(out):
                paths.read(out[index + 2].text)
            index += 3
            continue
        kept.append(out[index])
        index += 1
    return kept


def _case(spec: Spec, result: Scan) -> Spec:
    """The spec of the program's mode (`tar -x`), or its own."""
    for case in spec.cases:
        if result.has(*case.when) and not result.has(*case.unless):
            return case.spec
    return spec


def _structured(spec: Spec, result: Scan, operands: Sequence[Word], paths: Paths) -> None:
    """Where an extractor writes, names read from a list, `KEY=path` operands."""
    if spec.unpacks_into or spec.unpacks:
        # The input (an archive) names the files: everything below may change.
        targets = [w.text for w in result.values(*spec.unpacks_into)] or list(spec.unpacks)
        for target in targets:
            paths.write(target)
            paths.recursive_write(target)
    for option, _ in result.options if spec.writes_anywhere else ():
        if option in spec.writes_anywhere:
            paths.floors.append(f"{option} lets the input name any path: it writes anywhere")
            break
    for key, role in spec.keys:
        for word in operands:
            name, eq, value = word.text.partition("=")
            if eq and name == key:
                (paths.read if role == "read" else paths.write)(value)


def _word_roles(spec: Spec, args: Sequence[Word], paths: Paths) -> None:
    """No getopt (`test -f X -a -d Y`): each word of `reads` makes the next word a read."""
    for index, word in enumerate(args[:-1]):
        if word.text in spec.read_opts:
            paths.read(args[index + 1].text)


def _option_checks(
    name: str, spec: Spec, result: Scan, operands: Sequence[Word], paths: Paths
) -> None:
    if spec.changes or spec.changes_with:
        _system_changes(name, spec, result, operands, paths)
    for option, _ in result.options if spec.widens else ():
        if option in spec.widens:
            # `ruff check --extension=env:python .` reads (and quotes) `.env`.
            paths.floors.append(f"`{name} {option}` makes it read files no operand names")
            break


def _system_changes(
    name: str, spec: Spec, result: Scan, operands: Sequence[Word], paths: Paths
) -> None:
    """A read-only tool with a mutating option or operand (`date -s`, `hostname NAME`,
    `sysctl -w`, `ip link set`) changes the machine: ask, whatever allows `date *`."""
    for option, _ in result.options:
        if option in spec.changes:
            paths.floors.append(f"`{name} {option}` changes the system, not only reads it")
            return
    for word in operands:
        if any(fnmatch.fnmatchcase(word.text, p) for p in spec.changes_with) or not word.static:
            paths.floors.append(f"`{name} {word.text}` changes the system, not only reads it")
            return


def _canonical(args: Sequence[Word], spec: Spec) -> Sequence[Word]:
    """chmod's `-w` modes as `+w`, and long options abbreviated as getopt allows them
    (`--target=x` for `--target-directory=x`) in full."""
    out: list[Word] | None = None
    for index, word in enumerate(args):
        text = word.text
        replaced = None
        if spec.modes and _CHMOD_MODE.match(text):
            replaced = "+" + text[1:]
        elif text.startswith("--") and len(text) > 3:
            name, eq, value = text.partition("=")
            known = spec.long_value | spec.long_flags | spec.optional_value
            if name not in known:
                matches = [option for option in known if option.startswith(name)]
                if len(matches) == 1:
                    replaced = matches[0] + eq + value
        if replaced is not None:
            if out is None:
                out = list(args)
            out[index] = Word(replaced, word.source, word.dynamic)
    return args if out is None else out


def _spec_operands(
    name: str, spec: Spec, result: Scan, words: Sequence[Word], paths: Paths
) -> list[Word]:
    """The operands that may be files: not the pattern, assignments, modes or remotes."""
    operands = _code_cut(spec, result, words, paths)
    if spec.pattern and not result.has(*spec.pattern_opts):
        operands = operands[1:]
    if spec.assignments or spec.variables:
        assigned = [
            w for w in operands if _NAME_EQ.match(w.text) or (spec.variables and "=" in w.text)
        ]
        if spec.variables:
            paths.floors.extend(_variable_floors(name, assigned))
        operands = [w for w in operands if w not in assigned]
    if spec.skip and not result.has("--reference"):
        operands = operands[spec.skip :]
    return operands


_PLAIN_VALUE = lazy_compile(r"^(?:[0-9]+|yes|no|true|false|on|off|y|n)?$", re.I)


def _variable_floors(name: str, assigned: Sequence[Word]) -> list[str]:
    """`make CC=./evil`, `make X!=cmd`, `make 'X=$(shell id)'`: a variable a recipe may
    run as a program, or that runs a shell itself (`VERBOSE=1` is a plain setting)."""
    for word in assigned:
        value = word.text.partition("=")[2]
        if "!=" in word.text or "$" in value or "`" in value or not _PLAIN_VALUE.match(value):
            return [f"{name} {word.text.split('=')[0]}=… sets a variable its recipes may run"]
    return []


def _in_place(suffixes: Sequence[Word], operands: Sequence[Word], paths: Paths) -> None:
    """`sed -i[SUFFIX]`: each file is written, and so is its backup (`-irc` on `.env`
    writes `.envrc`; a `*` in the suffix stands for the file's name)."""
    for word in operands:
        paths.write(word.text)
        paths.operand(word.text)
        for suffix in suffixes:
            if not suffix.text:
                continue
            directory, slash, base = word.text.rpartition("/")
            if "*" in suffix.text:
                backup = suffix.text.replace("*", base)
                if "/" not in backup and slash:
                    backup = f"{directory}/{backup}"
            else:
                backup = word.text + suffix.text
            paths.write(backup)


def _copy(spec: Spec, result: Scan, operands: list[Word], recursive: bool, paths: Paths) -> None:
    """cp, mv, ln, install, rsync, scp: sources and where they land."""
    targets = [w.text for w in result.values(*spec.into)] if spec.into else []
    if targets or len(operands) < 2:
        sources = operands
    else:
        sources = operands[:-1]
        last = operands[-1].text
        if not (spec.remote and _SCP_REMOTE.match(last)):
            targets = [last]
            paths.write(last)
            if recursive or spec.kind == "move":
                paths.recursive_write(last)
    moving = spec.kind == "move"
    for word in sources:
        text = word.text
        remote = spec.remote and _SCP_REMOTE.match(text)
        if not remote:
            if moving:
                paths.write(text)  # it disappears from where it was, and its content
                paths.operand(text)  # is read (an operand: read, and a write)
                paths.recursive_write(text)
            else:
                paths.read(text)
        if not spec.lands or result.has(*spec.no_target):
            continue
        base = text.partition(":")[2] if remote else text
        base = base.rstrip("/").rpartition("/")[2]
        if base in ("", ".", ".."):
            continue  # the contents land in the target itself
        for target in targets:
            landed = target + base if target.endswith("/") else f"{target}/{base}"
            paths.write(landed)
            if recursive or moving:
                paths.recursive_write(landed)
    _backups(result, paths)


def _backups(result: Scan, paths: Paths) -> None:
    """`cp -b -S .md x CLAUDE`: the file replaced is kept as `CLAUDE.md` (findings-22
    #14), so every written name + suffix is written too (`~` unless -S/--suffix)."""
    if not result.has("-b", "-S", "--suffix") and not any(
        o.startswith("--backup") for o, _ in result.options
    ):
        return
    suffixes = [w.text for w in result.values("-S", "--suffix")] or ["~"]
    for written in list(paths.writes):
        for suffix in suffixes:
            if "/" in suffix or not suffix:
                paths.floors.append(f"the backup suffix {suffix!r} names another directory")
                continue
            paths.write(written.rstrip("/") + suffix)


def _implicit(spec: Spec, result: Scan, operands: Sequence[Word], paths: Paths) -> None:
    """Paths a program writes without naming them (`ssh-keygen -A`, `patch` in the
    working directory), and a target directory with no sources (`patch -d DIR`)."""
    targets = result.values(*spec.into) if spec.into and not operands else []
    for target in targets:
        paths.write(target.text)
        paths.recursive_write(target.text)
    for option, written in spec.implicit:
        if (option == "" and not operands and not targets) or (option and result.has(option)):
            for path in written:
                paths.write(path)
                paths.recursive_write(path)


def _first_unknown(words: Sequence[Word], spec: Spec) -> int | None:
    """Index of the first option the spec does not name (None: every option is known)."""
    long_known = spec.long_value | spec.long_flags | spec.optional_value
    flags = spec.flags
    index, count = 0, len(words)
    while index < count:
        text = words[index].text
        index += 1
        if text == "--":
            return None
        if text[:1] != "-" or text == "-":
            continue
        if text.startswith("--"):
            name, eq, _ = text.partition("=")
            if name not in long_known:
                return index - 1
            if name in spec.long_value and not eq:
                index += 1  # its value, whatever it looks like
            continue
        for position, letter in enumerate(text[1:], 1):
            if letter in spec.short_value:
                if position == len(text) - 1:
                    index += 1
                break
            if "-" + letter in spec.optional_value:
                break
            if flags is None or letter not in flags:
                return index - 1
    return None


# Writers that read the files they write first (an editor opens what it saves).
READS_WHAT_IT_WRITES = names(
    "vi vim nvim nano emacs ed ex pico micro hx kak sqlite3 patch view gvim rvim sed gsed"
)


def _write_operands(name: str, operands: Sequence[Word], paths: Paths) -> None:
    """A writer's operands; an editor or `sed -i` reads them first, too."""
    reads_first = name in READS_WHAT_IT_WRITES
    for word in operands:
        paths.write(word.text)
        if reads_first:
            paths.operand(word.text)


def _code_cut(spec: Spec, result: Scan, args: Sequence[Word], paths: Paths) -> list[Word]:
    """For interpreters, only the script file (first operand) is a path read; the
    arguments after the script, the code or `-m MODULE` are the program's own, of
    unknown role (operands). `python -m venv DIR` writes DIR."""
    code = spec.code_operands
    if not code:
        return result.operands
    if any(result.has(o) for o in code) or any(w.text in code for w in args):
        rest = result.operands
        if result.has("-m") and rest:
            module = rest[0].text
            if module in INDEX and module not in ("venv", "virtualenv"):
                after = next((i for i, w in enumerate(args) if w is rest[0]), -1)
                collect(module, args[after + 1 :] if after >= 0 else rest[1:], paths)
            rest = rest[1:]
            if module in ("venv", "virtualenv") and rest:
                paths.write(rest[-1].text)
                paths.recursive_write(rest[-1].text)
        elif result.has("-c") and rest:
            rest = rest[1:]  # the code itself (inline.py reads it)
        paths.unknown(rest)
        return []
    paths.unknown(result.operands[1:])
    return result.operands[:1]


def _option_paths(result: Scan, spec: Spec, paths: Paths) -> None:
    for option, value in result.options:
        if option in spec.sends:
            # `pytest --pastebin=all` uploads the test output to a paste site.
            paths.floors.append(f"{option} sends what it produces to another machine")
            continue
        if spec.code_when and value is not None and _code_value(spec, option, value.text):
            paths.floors.append(f"{option} {value.text} sets options or code nobody has seen")
            continue
        if option in spec.code:
            paths.floors.append(f"{option} names a program it runs")
            path = generic_path(value.text) if value is not None else None
            if path is not None:
                paths.read(path)  # the program's file
            continue
        if value is None:
            continue
        text = value.text
        if option in spec.scripts:
            paths.read(text)
            paths.floors.append(f"{option} {text} runs code from a file nobody has seen")
        elif option in spec.names_from:
            paths.read(text)
            paths.floors.append(f"{option} {text} reads the names of more files from a file")
        elif option in spec.into or option in spec.unpacks_into:
            continue  # (where the files land: _copy, _implicit and _structured)
        elif option in spec.unknown_names:
            paths.read(text)
            paths.unknown_names = f"{option} {text} lists the names of the files it reads"
        elif option in spec.write_opts:
            paths.write(text)
        elif option in spec.read_opts:
            paths.read(text)
        elif option in _AT_FILE_OPTIONS and "@" in text:
            at = text.split("@", 1)[1].split(";", 1)[0]  # curl -d @f, -F name=@f;type=x
            if at and at != "-":
                paths.read(at)
        elif option in ("-F", "--form") and "=<" in text:
            paths.read(text.split("=<", 1)[1].split(";", 1)[0])
        elif _known_option(option, spec):
            continue  # a value that is not a path (`cut -d /`, `grep -e /x`)
        else:
            path = generic_path(text)
            if path is not None:
                paths.read(path)


def _code_value(spec: Spec, option: str, value: str) -> bool:
    return any(
        option == name and any(fnmatch.fnmatchcase(value.lstrip(), p) for p in patterns)
        for name, patterns in spec.code_when
    )


_AT_FILE_OPTIONS = names(
    "-d --data --data-binary --data-ascii --data-urlencode --json -F --form --variable"
)


def _known_option(option: str, spec: Spec) -> bool:
    if option.startswith("--"):
        return option in spec.long_value or option in spec.optional_value
    return option[1:] in spec.short_value or option in spec.optional_value


# Names collect() has a rule for; for every other name it is `paths.unknown(args)`.
# (A spec of kind "unknown" is only data for other parts, such as `network`: its program
# stays an unknown one, whose words and what it may run unknown.py looks at.)
COLLECT_NAMES = frozenset(
    {*NO_PATH_COMMANDS, *(n for n, s in INDEX.items() if s.kind != "unknown")}
)

# --- recursive readers ------------------------------------------------------------------

_GREPS = names("grep egrep fgrep zgrep")
_SEARCHERS = names("rg ag ack ripgrep")
_WALKERS = names("find fd fdfind du tree")
_COPIERS = names("cp rsync scp")
RECURSIVE_NAMES = _GREPS | _SEARCHERS | _WALKERS | names("ls") | _COPIERS
_RECURSIVE_FLAG = lazy_compile(r"^-[A-Za-z]*[rR]")
# Readers that are recursive only with a flag (-r, -R, -a, --recursive, --archive,
# --directories=recurse: each spelling holds an r, an R or an a).
_NEEDS_FLAG = _GREPS | _COPIERS | names("ls")


def recursive_dirs(name: str, args: Sequence[Word], paths: Paths) -> None:
    """Directories `name args…` reads with everything below them (Paths.recursive).

    The argument parsing is deliberately loose: a word taken for a directory by mistake
    only adds a check (a read deny/ask rule inside it makes the unit ask)."""
    finder = _RECURSIVE_FINDERS.get(name)
    if finder is None:
        return
    if name in _NEEDS_FLAG and not any(
        w.text[:1] == "-" and ("r" in w.text or "R" in w.text or "a" in w.text) for w in args
    ):
        return  # `ls -la`, `grep x f`, `cp a b`: nothing read recursively
    texts = [w.text for w in args if w.static]
    operands = [t for t in texts if not t.startswith("-") or t == "-"]
    flagged = any(
        _RECURSIVE_FLAG.match(t) or t in ("--recursive", "--dereference-recursive", "--archive")
        for t in texts
    )
    for text in finder(texts, operands, flagged):
        if _is_path(text) and not _URL.match(text) and text not in paths.recursive:
            paths.recursive.append(text)


# Each finder: (static words, operands, whether a recursive flag is given) -> directories.


def _grep_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    if not flagged and "--directories=recurse" not in texts:
        return []
    explicit = any(t in ("-e", "-f", "--regexp", "--file") or t.startswith("--regexp=")
                   for t in texts)  # fmt: skip
    return (operands if explicit else operands[1:]) or ["."]


def _searcher_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    explicit = any(t in ("-e", "-f", "--regexp", "--file", "--files") for t in texts)
    return (operands if explicit else operands[1:]) or ["."]


def _find_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    found: list[str] = []
    for text in texts:
        if text.startswith(("-", "(", "!")):
            break
        found.append(text)
    return found or ["."]


def _fd_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    return operands[1:] or ["."]


def _walker_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    return operands or ["."]  # du, tree


def _ls_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    return (operands or ["."]) if flagged and "-d" not in texts else []


def _copier_dirs(texts: list[str], operands: list[str], flagged: bool) -> list[str]:
    if flagged or any(_ARCHIVE_FLAG.match(t) for t in texts):
        return operands[:-1]
    return []


_ARCHIVE_FLAG = lazy_compile(r"^-[A-Za-z]*a")
_RecursiveFinder = Callable[[list[str], list[str], bool], list[str]]
_RECURSIVE_FINDERS: dict[str, _RecursiveFinder] = {
    **dict.fromkeys(_GREPS, _grep_dirs),
    **dict.fromkeys(_SEARCHERS, _searcher_dirs),
    "find": _find_dirs,
    "fd": _fd_dirs,
    "fdfind": _fd_dirs,
    "du": _walker_dirs,
    "tree": _walker_dirs,
    "ls": _ls_dirs,
    **dict.fromkeys(_COPIERS, _copier_dirs),
}


# --- the program specs' examples -------------------------------------------------------


def check_examples(examples: Sequence[Example]) -> None:
    """Run every example of the program specs; a wrong one fails the load loudly."""
    for example in examples:
        run = example.run
        texts = shlex.split(run) if ("'" in run or '"' in run) else run.split()
        words = [Word(text, text) for text in texts]
        name, args = texts[0], words[1:]
        paths = Paths()
        collect(name, args, paths)
        recursive_dirs(name, args, paths)
        problems = []
        reads, writes = paths.result()
        for label, want, got in (
            ("reads", example.reads, reads),
            ("writes", example.writes, writes),
            ("recursive", example.recursive, tuple(paths.recursive)),
            ("recursive_writes", example.recursive_writes, tuple(paths.recursive_writes)),
        ):
            if want is not None and sorted(want) != sorted(got):
                problems.append(f"{label} {sorted(got)}, not {sorted(want)}")
        if example.operands is not None:
            missing = [o for o in example.operands if o not in paths.operands]
            if missing:
                problems.append(f"operands {paths.operands} lack {missing}")
        if example.floor is not None and bool(paths.floors) != example.floor:
            problems.append(f"floor {paths.floors or None}, not {example.floor}")
        if problems:
            raise ProgramSpecError(f"{example.source}: `{run}` gives {'; '.join(problems)}")


pathspecs.example_checker = check_examples  # a spec's examples run when it loads

"""Program knowledge as data: which words of well-known commands are paths, which options
run programs, which options the analysis knows at all.

The specs live in `policy/builtin/programs/*.toml`, one table per program, each with
examples (`run = "cp a b", reads = [...], writes = [...]`) that pathargs.py checks when
a program's spec is first used: a wrong example fails that load loudly
(ProgramSpecError; the analysis then asks), and tests/test_shell_round3_programs.py runs
every one. docs/bash.md, "Program specs", describes the format.

Loading is lazy, per program: at import the files are only read as text and cut at their
`[name]` headers (the index: names, `also`, `kind`, `network`, which the analyser needs
for every command); a program's own table is parsed with tomllib, turned into a Spec and
its examples run the first time that program is analysed, once per process. When the
table is parsed, the index entries must agree with it, or the load fails. Nothing is
cached on disk: every process reads the shipped files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

PROGRAMS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "builtin", "programs")
KINDS = frozenset(
    {"read", "write", "copy", "move", "link", "none", "ignore", "unknown", "opaque", "names"}
)


class ProgramSpecError(ValueError):
    """A program spec file that does not load (a packaging error: the analyser fails)."""


class Example(NamedTuple):
    """One checked example: what `run` must give (None: not checked)."""

    source: str
    run: str
    reads: tuple[str, ...] | None
    writes: tuple[str, ...] | None
    operands: tuple[str, ...] | None  # must all be among the unit's operands
    recursive: tuple[str, ...] | None
    recursive_writes: tuple[str, ...] | None
    floor: bool | None


class Spec(NamedTuple):
    """How one command's words map to paths.

    kind: "read" (operands read), "write" (operands written), "copy" (last operand
    written unless -t, the rest read), "move" (as copy, and every source is written:
    it disappears), "link" (as copy), "none" (operands only when they look like paths),
    "ignore" (operands are never local paths: ssh's host and remote command), "unknown"
    (every word is of unknown role, as for a program with no spec: a spec that only says
    `network` or `floor`), "opaque" (as "unknown", every word of unknown role, but the
    spec's option checks apply: `code`, `widens`, `changes`, `floor`).
    pattern: the first operand is a pattern/program unless an option in `pattern_opts`
    supplied it. skip: leading operands that are not paths (chmod MODE).
    flags/long_flags: the options known to take no value; None when the spec names no
    flags (then every option it does not name is of unknown role: pathargs.py).
    """

    kind: str
    short_value: str = ""
    long_value: frozenset[str] = frozenset()
    pattern: bool = False
    pattern_opts: frozenset[str] = frozenset()
    read_opts: frozenset[str] = frozenset()
    write_opts: frozenset[str] = frozenset()
    skip: int = 0
    optional_value: frozenset[str] = frozenset()
    flags: str | None = None
    long_flags: frozenset[str] = frozenset()
    into: frozenset[str] = frozenset()  # option values: a directory the files land in
    code: frozenset[str] = frozenset()  # options whose value is a program it runs
    scripts: frozenset[str] = frozenset()  # option values: a file of code it runs
    in_place: frozenset[str] = frozenset()  # options that make a reader write its operands
    names_from: frozenset[str] = frozenset()  # option values: a file listing more names
    recursive: frozenset[str] = frozenset()  # options that make it act on whole trees
    no_target: frozenset[str] = frozenset()  # `cp -T`: the last operand is the target
    code_operands: frozenset[str] = frozenset()  # with these, operands are code, not files
    remote: bool = False  # `host:path` operands are on another machine
    assignments: bool = False  # `NAME=value` operands are not files (awk)
    modes: bool = False  # `-w`, `-x` operands are modes, not options (chmod)
    variables: bool = False  # `NAME=value` operands set variables it may run (make)
    lands: bool = False  # sources land inside the target: target/basename(source)
    implicit: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (option or "", paths written)
    floor: str | None = None  # why the program is always ask
    network: bool = False  # it talks to other machines (a secret given to it leaves)
    changes: frozenset[str] = frozenset()  # options that change the system (`date -s`)
    changes_with: tuple[str, ...] = ()  # operand patterns that do (`hostname NAME`: `*`)
    widens: frozenset[str] = frozenset()  # options that make it read files nobody named
    sends: frozenset[str] = frozenset()  # options that send data to another machine
    code_when: tuple[tuple[str, tuple[str, ...]], ...] = ()  # option -> values that are code
    # Programs with more structure (tar, zip, jq, compressors, dd, test):
    bundle: bool = False  # a first word without `-` is a cluster of options (`tar czf x`)
    cases: tuple[Case, ...] = ()  # the first whose `when` option is given decides the rest
    first: str = ""  # "read" / "write": the first operand is a file so used (an archive)
    unpacks_into: frozenset[str] = frozenset()  # values: a directory input names land in
    unpacks: tuple[str, ...] = ()  # the directories written so when no unpacks_into is given
    writes_anywhere: frozenset[str] = frozenset()  # options letting the input name any path
    unknown_names: frozenset[str] = frozenset()  # option values: a list of names it reads
    relative_to: frozenset[str] = frozenset()  # values: a directory operands are relative to
    pairs: frozenset[str] = frozenset()  # options that take two values (`--arg NAME V`)
    pair_reads: frozenset[str] = frozenset()  # ... whose second value is a file read
    stop: frozenset[str] = frozenset()  # options after which every word is a value
    subcommands: frozenset[str] = frozenset()  # a first word so named is not an operand
    keys: tuple[tuple[str, str], ...] = ()  # `KEY=path` operands: (KEY, "read" | "write")
    words: bool = False  # no getopt: each word of `reads` makes the next one a read (test)


class Case(NamedTuple):
    """One of a program's modes (`tar -c`, `tar -x`): the spec that decides in it."""

    when: frozenset[str]
    unless: frozenset[str]
    spec: Spec


_FIELDS = {
    "kind", "also", "values", "flags", "optional", "reads", "writes", "into", "code",
    "scripts", "in_place", "names_from", "recursive", "no_target", "code_operands",
    "pattern", "skip", "remote", "assignments", "modes", "lands", "variables", "implicit", "floor",
    "examples", "note", "network", "changes", "changes_with",
    "widens", "sends", "code_when", "bundle", "cases", "first", "unpacks_into", "unpacks",
    "writes_anywhere", "unknown_names", "relative_to", "pairs", "pair_reads", "stop",
    "subcommands", "keys", "words",
}  # fmt: skip
# What a case may change (its option vocabulary is the program's).
_CASE_FIELDS = {
    "when", "unless", "kind", "reads", "writes", "into", "recursive", "first", "unpacks_into",
    "unpacks", "writes_anywhere", "unknown_names", "relative_to", "in_place", "floor",
    "implicit", "names_from",
}  # fmt: skip
_ROLES = ("read", "write")
_EXAMPLE_FIELDS = {"run", "reads", "writes", "operands", "recursive", "recursive_writes",
                   "floor"}  # fmt: skip


def _options(value: object, where: str) -> tuple[str, frozenset[str]]:
    """`"-t -S --target-directory"` -> (short letters "tS", long names)."""
    if not isinstance(value, str):
        raise ProgramSpecError(f"{where}: expected a space-separated string of options")
    short = []
    long = []
    for option in value.split():
        if option.startswith("--") and len(option) > 2:
            long.append(option)
        elif option.startswith("-") and len(option) == 2:
            short.append(option[1])
        else:
            raise ProgramSpecError(f"{where}: {option!r} is not an option (-x or --name)")
    return "".join(short), frozenset(long)


def _names(value: object, where: str) -> frozenset[str]:
    """The options of a category as written (`-i --in-place`)."""
    short, long = _options(value, where)
    return frozenset({*("-" + s for s in short), *long})


def _spec(name: str, table: Mapping[str, Any], where: str) -> Spec:
    unknown = set(table) - _FIELDS
    if unknown:
        raise ProgramSpecError(f"{where}: unknown field(s) {sorted(unknown)}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise ProgramSpecError(f"{where}: kind must be one of {sorted(KINDS)}")
    short_value, long_value = _options(table.get("values", ""), f"{where}.values")
    flags: str | None = None
    long_flags: frozenset[str] = frozenset()
    if "flags" in table:
        flags, long_flags = _options(table["flags"], f"{where}.flags")
    pattern = table.get("pattern")
    implicit = table.get("implicit", {})
    if not isinstance(implicit, dict) or not all(
        isinstance(v, list) and all(isinstance(p, str) for p in v) for v in implicit.values()
    ):
        raise ProgramSpecError(f"{where}.implicit: expected {{ OPTION = [paths…] }}")
    floor = table.get("floor")
    if floor is not None and not isinstance(floor, str):
        raise ProgramSpecError(f"{where}.floor: expected a reason")
    skip = table.get("skip", 0)
    if not isinstance(skip, int) or skip < 0:
        raise ProgramSpecError(f"{where}.skip: expected a count")

    def category(key: str) -> frozenset[str]:
        return _names(table.get(key, ""), f"{where}.{key}")

    for key in _BOOLEANS:
        if not isinstance(table.get(key, False), bool):
            raise ProgramSpecError(f"{where}.{key}: expected true or false")

    # Every option of a category that names a file, a directory or a program takes a
    # value (unless it is listed as taking one only when attached).
    for key in _VALUED:
        short, long = _options(table.get(key, ""), f"{where}.{key}")
        optional = category("optional")
        short_value += "".join(c for c in short if c not in short_value and f"-{c}" not in optional)
        long_value = long_value | {o for o in long if o not in optional}
    code_when = _code_when(table.get("code_when", {}), where)
    for option, _ in code_when:  # (each takes a value)
        if option.startswith("--"):
            long_value = long_value | {option}
        elif option[1] not in short_value:
            short_value += option[1]
    return Spec(
        kind=kind,
        short_value=short_value,
        long_value=long_value,
        pattern=pattern is not None,
        pattern_opts=_names(pattern or "", f"{where}.pattern"),
        read_opts=category("reads"),
        write_opts=category("writes"),
        skip=skip,
        optional_value=category("optional"),
        flags=flags,
        long_flags=long_flags,
        into=category("into"),
        code=category("code"),
        scripts=category("scripts"),
        in_place=category("in_place"),
        names_from=category("names_from"),
        recursive=category("recursive"),
        no_target=category("no_target"),
        code_operands=category("code_operands"),
        remote=bool(table.get("remote", False)),
        assignments=bool(table.get("assignments", False)),
        modes=bool(table.get("modes", False)),
        lands=bool(table.get("lands", False)),
        variables=bool(table.get("variables", False)),
        implicit=tuple((option, tuple(written)) for option, written in implicit.items()),
        floor=floor,
        network=bool(table.get("network", False)),
        changes=category("changes"),
        widens=category("widens"),
        changes_with=_strings(table.get("changes_with", []), f"{where}.changes_with") or (),
        sends=category("sends"),
        code_when=code_when,
        **_structure(name, table, where, category),
    )


_BOOLEANS = ("remote", "assignments", "modes", "lands", "variables", "network", "bundle", "words")
_VALUED = (
    "reads", "writes", "into", "code", "scripts", "names_from", "widens", "sends",
    "unpacks_into", "unknown_names", "relative_to",
)  # fmt: skip


def _structure(
    name: str, table: Mapping[str, Any], where: str, category: Callable[[str], frozenset[str]]
) -> dict[str, Any]:
    """The fields of programs with more structure (tar, zip, jq …): docs/bash.md."""
    first = table.get("first", "")
    if first not in ("", *_ROLES):
        raise ProgramSpecError(f"{where}.first: expected 'read' or 'write'")
    keys = table.get("keys", {})
    if not isinstance(keys, dict) or not all(v in _ROLES for v in keys.values()):
        raise ProgramSpecError(f"{where}.keys: expected {{ KEY = 'read' | 'write' }}")
    subcommands = _strings(table.get("subcommands", []), f"{where}.subcommands") or ()
    return {
        "bundle": bool(table.get("bundle", False)),
        "words": bool(table.get("words", False)),
        "first": first,
        "unpacks_into": category("unpacks_into"),
        "unpacks": _strings(table.get("unpacks", []), f"{where}.unpacks") or (),
        "writes_anywhere": category("writes_anywhere"),
        "unknown_names": category("unknown_names"),
        "relative_to": category("relative_to"),
        "pairs": category("pairs"),
        "pair_reads": category("pair_reads"),
        "stop": category("stop"),
        "subcommands": frozenset(subcommands),
        "keys": tuple(keys.items()),
        "cases": _cases(name, table, where),
    }


def _cases(name: str, table: Mapping[str, Any], where: str) -> tuple[Case, ...]:
    """`cases = [{ when = '-c --create', kind = 'read', … }]`: each case is the program's
    table with the case's fields in place of its own (options and examples stay)."""
    raw = table.get("cases", [])
    if not isinstance(raw, list):
        raise ProgramSpecError(f"{where}.cases: expected a list of tables")
    base = {k: v for k, v in table.items() if k not in ("cases", "examples", "also", "note")}
    found = []
    for index, case in enumerate(raw):
        at = f"{where}.cases[{index}]"
        if not isinstance(case, dict) or "when" not in case:
            raise ProgramSpecError(f"{at}: expected {{ when = '-x …', … }}")
        unknown = set(case) - _CASE_FIELDS
        if unknown:
            raise ProgramSpecError(f"{at}: a case cannot set {sorted(unknown)}")
        merged = {**base, **{k: v for k, v in case.items() if k not in ("when", "unless")}}
        spec = _spec(name, merged, at)
        if (spec.short_value, spec.long_value) != _options_of(table, where):
            raise ProgramSpecError(f"{at}: a case takes its options' values from the program")
        when = _names(case["when"], f"{at}.when")
        unless = _names(case.get("unless", ""), f"{at}.unless")
        found.append(Case(when=when, unless=unless, spec=spec))
    return tuple(found)


def _options_of(table: Mapping[str, Any], where: str) -> tuple[str, frozenset[str]]:
    """The value-taking options of a program's own table (its cases must agree)."""
    spec = _spec("", {k: v for k, v in table.items() if k not in ("cases",)}, where)
    return spec.short_value, spec.long_value


def _code_when(value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`{ '-o' = ['addopts=*'] }`: an option whose value, matching a pattern, is code."""
    if not isinstance(value, dict):
        raise ProgramSpecError(f"{where}.code_when: expected {{ OPTION = [patterns…] }}")
    found = []
    for option, patterns in value.items():
        _options(option, f"{where}.code_when")
        listed = _strings(patterns, f"{where}.code_when.{option}")
        if not listed:
            raise ProgramSpecError(f"{where}.code_when.{option}: expected value patterns")
        found.append((option, listed))
    return tuple(found)


def _strings(value: object, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProgramSpecError(f"{where}: expected a list of strings")
    return tuple(value)


def _examples(name: str, table: Mapping[str, Any], where: str) -> list[Example]:
    found = []
    raw = table.get("examples", [])
    if not isinstance(raw, list) or not raw:
        raise ProgramSpecError(f"{where}: every program spec needs examples")
    for index, example in enumerate(raw):
        at = f"{where}.examples[{index}]"
        if not isinstance(example, dict) or not isinstance(example.get("run"), str):
            raise ProgramSpecError(f'{at}: expected {{ run = "{name} …", … }}')
        unknown = set(example) - _EXAMPLE_FIELDS
        if unknown:
            raise ProgramSpecError(f"{at}: unknown field(s) {sorted(unknown)}")
        floor = example.get("floor")
        if floor is not None and not isinstance(floor, bool):
            raise ProgramSpecError(f"{at}.floor: expected true or false")
        found.append(
            Example(
                source=at,
                run=example["run"],
                reads=_strings(example.get("reads"), f"{at}.reads"),
                writes=_strings(example.get("writes"), f"{at}.writes"),
                operands=_strings(example.get("operands"), f"{at}.operands"),
                recursive=_strings(example.get("recursive"), f"{at}.recursive"),
                recursive_writes=_strings(
                    example.get("recursive_writes"), f"{at}.recursive_writes"
                ),
                floor=floor,
            )
        )
    return found


def load(directory: str = PROGRAMS_DIR) -> tuple[dict[str, Spec], list[Example]]:
    """Every spec in `directory` (name -> Spec, aliases included) and their examples."""
    specs: dict[str, Spec] = {}
    examples: list[Example] = []
    try:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".toml"))
    except OSError as exc:
        raise ProgramSpecError(f"{directory}: {exc.strerror}") from None
    if not files:
        raise ProgramSpecError(f"{directory}: no program specs")
    for file_name in files:
        path = os.path.join(directory, file_name)
        import tomllib  # (only here and on first use: the hook path never needs it)

        try:
            with open(path, "rb") as handle:
                document = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ProgramSpecError(f"{path}: {exc}") from None
        for name, table in document.items():
            where = f"{path}: [{name}]"
            if not isinstance(table, dict):
                raise ProgramSpecError(f"{where}: expected a table")
            spec = _spec(name, table, where)
            also = table.get("also", [])
            if not isinstance(also, list) or not all(isinstance(a, str) for a in also):
                raise ProgramSpecError(f"{where}.also: expected a list of program names")
            for alias in (name, *also):
                if alias in specs:
                    raise ProgramSpecError(f"{where}: {alias!r} has a spec already")
                specs[alias] = spec
            examples.extend(_examples(name, table, where))
    return specs, examples


# -- the lazy index -------------------------------------------------------------------

_HEADER = re.compile(r"^\[([^\]\n]+)\][ \t]*$", re.M)
_ALSO = re.compile(r"^also\s*=\s*\[([^\]\n]*)\]", re.M)
_QUOTED = re.compile(r"'([^'\n]*)'|\"([^\"\n]*)\"")
_KIND = re.compile(r"^kind\s*=\s*['\"](\w+)['\"]", re.M)
_NETWORK_LINE = re.compile(r"^network\s*=\s*true\b", re.M)


class Section(NamedTuple):
    """One `[name]` table of a spec file as text, and what the index reads from it."""

    path: str
    name: str
    text: str
    also: tuple[str, ...]
    kind: str
    network: bool


def _index(directory: str = PROGRAMS_DIR) -> dict[str, Section]:
    """Every program name (aliases included) -> its table's text: no TOML parsing."""
    found: dict[str, Section] = {}
    try:
        files = sorted(f for f in os.listdir(directory) if f.endswith(".toml"))
        texts = []
        for file_name in files:
            path = os.path.join(directory, file_name)
            with open(path, encoding="utf-8") as handle:
                texts.append((path, handle.read()))
    except (OSError, UnicodeDecodeError) as exc:
        raise ProgramSpecError(f"{directory}: {exc}") from None
    if not texts:
        raise ProgramSpecError(f"{directory}: no program specs")
    for path, text in texts:
        headers = list(_HEADER.finditer(text))
        for index, header in enumerate(headers):
            end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
            body = text[header.start() : end]
            also = _ALSO.search(body)
            kind = _KIND.search(body)
            section = Section(
                path=path,
                name=header.group(1),
                text=body,
                also=tuple(a or b for a, b in _QUOTED.findall(also.group(1))) if also else (),
                kind=kind.group(1) if kind else "",
                network=_NETWORK_LINE.search(body) is not None,
            )
            for alias in (section.name, *section.also):
                if alias in found:
                    raise ProgramSpecError(
                        f"{path}: [{section.name}]: {alias!r} has a spec already"
                    )
                found[alias] = section
    return found


INDEX = _index()
# Set by pathargs.py: runs a program's examples when its spec is first loaded.
example_checker: Callable[[list[Example]], None] | None = None
_LOADED: dict[str, Spec] = {}


def _load_section(section: Section) -> Spec:
    """Parse one table, check that the index read it right, run its examples."""
    import tomllib

    where = f"{section.path}: [{section.name}]"
    try:
        document = tomllib.loads(section.text)
    except tomllib.TOMLDecodeError as exc:
        raise ProgramSpecError(f"{where}: {exc}") from None
    table = document.get(section.name)
    if len(document) != 1 or not isinstance(table, dict):
        raise ProgramSpecError(f"{where}: expected one table")
    spec = _spec(section.name, table, where)
    also = table.get("also", [])
    if tuple(also) != section.also or spec.kind != section.kind or spec.network != section.network:
        raise ProgramSpecError(f"{where}: write `also`, `kind` and `network` on lines of their own")
    examples = _examples(section.name, table, where)
    for alias in (section.name, *section.also):
        _LOADED[alias] = spec
    if example_checker is not None:
        try:
            example_checker(examples)
        except ProgramSpecError:
            for alias in (section.name, *section.also):
                _LOADED.pop(alias, None)
            raise
    return spec


def spec_for(name: str) -> Spec | None:
    """The spec of program `name` (loaded on first use), or None: no spec."""
    spec = _LOADED.get(name)
    if spec is not None:
        return spec
    section = INDEX.get(name)
    return None if section is None else _load_section(section)


class _Specs(Mapping[str, Spec]):
    """Every spec by program name, each loaded on first use (spec_for)."""

    def __getitem__(self, name: str) -> Spec:
        spec = spec_for(name)
        if spec is None:
            raise KeyError(name)
        return spec

    def get(self, name: str, default: Any = None) -> Any:
        spec = spec_for(name)
        return default if spec is None else spec

    def __iter__(self) -> Iterator[str]:
        return iter(INDEX)

    def __len__(self) -> int:
        return len(INDEX)

    def __contains__(self, name: object) -> bool:
        return name in INDEX


SPECS: Mapping[str, Spec] = _Specs()


def all_examples() -> list[Example]:
    """Every example of every spec (parses every file: for tests)."""
    return load()[1]


def kind_of(name: str) -> str | None:
    """A program's spec kind from the index, without loading the spec."""
    section = INDEX.get(name)
    return None if section is None else section.kind


def network_programs() -> frozenset[str]:
    """The programs whose spec says `network = true` (a secret given to one leaves)."""
    return _NETWORK


_NETWORK = frozenset(name for name, section in INDEX.items() if section.network)

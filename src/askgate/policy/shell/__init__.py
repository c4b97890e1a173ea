"""Bash command analysis: every command a string can run, as policy units.

`analyze(command)` never raises; its only filesystem access is whether a `cd` target
exists (when given the request's cwd), and it never writes. It parses with
tree-sitter-bash (loaded lazily on first use, so importing this module is cheap)
and returns a ShellAnalysis whose units the policy engine matches one by one.
See docs/bash.md for what counts as a unit, which wrappers are seen through, and
when a unit is floored to ask.
"""

from __future__ import annotations

import os
import time
from typing import Any

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.model import Action, ShellAnalysis, Unit
from askgate.policy.shell.base import Frame
from askgate.policy.shell.cwd import Cwd, Probe
from askgate.policy.shell.walker import Sink, Walker

__all__ = ["DEFAULT_MAX_LENGTH", "analyze"]

DEFAULT_MAX_LENGTH = 10_000
# Beyond max_length the command is ask anyway; units are still extracted (so denies
# apply) up to this many times max_length, past that nothing is parsed at all.
ANALYSE_LIMIT_FACTOR = 5

_BIG_TREE = 5_000  # nodes
_SWEEP_BUDGET_SECONDS = 0.25
_SURROGATE = lazy_compile(r"[\ud800-\udfff]")
_BLANK = " \t\n\r\f\v"
# Programs whose output or input the analysis reads literally (`cat <<'EOF' | apply_patch`,
# `echo a b | xargs rm`, `while read f`): a function of that name, anywhere in the
# command (a loop may call it before its definition is reached), makes that reading wrong.
SHADOWED_NAMES = frozenset({"cat", "echo", "printf", "read", "xargs", "apply_patch",
                            "applypatch"})  # fmt: skip
_COMMAND_TYPES = frozenset({"command", "declaration_command", "unset_command", "test_command"})
_COMMAND_QUERY = f"[{' '.join(f'({t})' for t in sorted(_COMMAND_TYPES))}] @c"

_TOP_FRAME = Frame()  # immutable
_tools: tuple[Any, Any] | None = None  # (parser, query cursor); built on first use


def _bash_language() -> Any:
    """The tree-sitter-bash grammar pointer.

    The tree_sitter_bash package's __init__ imports importlib.resources (~20 ms, a
    fifth of a hook's cold start) only to serve highlight queries we never use, so
    the compiled binding is loaded directly; any surprise falls back to the package.
    """
    try:
        import importlib.machinery
        import importlib.util
        import os

        spec = importlib.util.find_spec("tree_sitter_bash")
        folders = list(spec.submodule_search_locations or ()) if spec else []
        for folder in folders:
            for name in sorted(os.listdir(folder)):
                if name.startswith("_binding.") and name.endswith(".so"):
                    path = os.path.join(folder, name)
                    loader = importlib.machinery.ExtensionFileLoader(
                        "tree_sitter_bash._binding", path
                    )
                    binding_spec = importlib.util.spec_from_loader(loader.name, loader)
                    if binding_spec is None:
                        break
                    module = importlib.util.module_from_spec(binding_spec)
                    loader.exec_module(module)
                    return module.language()
    except (ImportError, OSError, AttributeError):
        pass
    import tree_sitter_bash

    return tree_sitter_bash.language()


def _load() -> tuple[Any, Any]:
    global _tools
    if _tools is None:
        from tree_sitter import Language, Parser, Query, QueryCursor

        language = Language(_bash_language())
        _tools = (Parser(language), QueryCursor(Query(language, _COMMAND_QUERY)))
    return _tools


# tree-sitter-bash can read unmapped memory (SIGSEGV) when a `{` is followed, anywhere
# later, by a 4-byte UTF-8 character (tree-sitter/tree-sitter-bash#337, open). Such
# characters are plain word characters to bash, so the parser gets a copy where each is
# replaced by two U+00B7 (also 4 bytes: every byte offset stays valid) while the walker
# slices the real text from the original bytes.
_FOUR_BYTE_CHARACTER = lazy_compile(rb"[\xf0-\xf7][\x80-\xbf]{3}")
_SAFE_STAND_IN = "\u00b7\u00b7".encode()


def _parse(src: bytes) -> Any:
    parser = _tools[0] if _tools is not None else _load()[0]
    if not src.isascii():
        src = _FOUR_BYTE_CHARACTER.sub(_SAFE_STAND_IN, src)
    return parser.parse(src).root_node


def _find_commands(root: Any) -> list[Any] | None:
    """Every command-like node under root; None when the search ran out of time.

    A query is fastest on ordinary trees but takes seconds on deeply nested error
    trees (and its progress callback crashes in py-tree-sitter 0.26), so big trees
    are walked with a cursor under a time budget instead.
    """
    if root.descendant_count < _BIG_TREE:
        cursor = _tools[1] if _tools is not None else _load()[1]
        captured: list[Any] = cursor.captures(root).get("c", [])
        return captured
    deadline = time.monotonic() + _SWEEP_BUDGET_SECONDS
    found: list[Any] = []
    cursor = root.walk()
    steps = 0
    while True:
        node = cursor.node
        if node.type in _COMMAND_TYPES:
            found.append(node)
        steps += 1
        if steps % 2048 == 0 and time.monotonic() > deadline:
            return None
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return found


def analyze(
    command: str,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    cwd: str | None = None,
    home: str | None = None,
) -> ShellAnalysis:
    """Split a bash command string into units (see module docstring). Never raises.

    Given the request's `cwd` (and `home`), a `cd` into a directory that exists and can
    be entered is taken to succeed; without them, or for any other target, the places
    before it stay possible too. That look is the only filesystem access."""
    try:
        probe = directory_probe(cwd, home) if cwd else None
        return _analyze(command, max_length, probe)
    except Exception as error:  # fail closed: whatever went wrong, the answer is ask
        source = command if isinstance(command, str) else repr(command)
        return ShellAnalysis(
            source=source,
            units=(),
            floor=Action.ASK,
            floor_reason=f"internal error while analysing the command: {type(error).__name__}",
        )


def directory_probe(cwd: str, home: str | None) -> Probe:
    """Whether a directory the analysis tracks exists and can be entered (None: unknown)."""
    seen: dict[str | None, bool | None] = {}

    def probe(path: str | None) -> bool | None:
        if path in seen:
            return seen[path]
        answer: bool | None
        try:
            target = _absolute_directory(path, cwd, home)
            answer = (
                None if target is None else (os.path.isdir(target) and os.access(target, os.X_OK))
            )
        except (OSError, ValueError, KeyError):
            answer = None
        seen[path] = answer
        return answer

    return probe


def _absolute_directory(path: str | None, cwd: str, home: str | None) -> str | None:
    if path is None:
        return cwd
    if "\x00" in path or path.startswith("$PWD"):
        return None
    if path == "~" or path.startswith("~/") or path == "$HOME" or path.startswith("$HOME/"):
        if not home:
            return None
        rest = path[1:] if path.startswith("~") else path[5:]
        return home + rest
    if path.startswith("~"):
        import pwd

        name, _, rest = path[1:].partition("/")
        return os.path.join(pwd.getpwnam(name).pw_dir, rest)
    return os.path.join(cwd, path)


def _analyze(command: str, max_length: int, probe: Probe | None = None) -> ShellAnalysis:
    if not isinstance(command, str):
        return _ask(repr(command), "the command is not a string")
    if not command.strip(_BLANK):
        return ShellAnalysis(source=command, units=())
    reasons: list[str] = []
    text = command
    if "\x00" in text:
        reasons.append("the command contains NUL bytes")
        text = text.replace("\x00", "\n")  # both halves stay visible to deny rules
    if not text.isascii() and _SURROGATE.search(text):
        reasons.append("the command contains invalid unicode (lone surrogates)")
        text = _SURROGATE.sub("\ufffd", text)
    if len(text) > max_length:
        reasons.append(f"the command is longer than {max_length} characters")
        if len(text) > max_length * ANALYSE_LIMIT_FACTOR:
            return _ask(command, "; ".join(reasons))
    src = text.encode("utf-8")
    root = _parse(src)
    if root.has_error:
        reasons.append("the command does not parse cleanly")
    sink = Sink(_parse, _find_commands)
    sink.probe = probe
    _prescan(text, sink)
    walker = Walker(sink, src)
    walker.program(root, Cwd(), _TOP_FRAME)
    walker.sweep(root, Cwd(), _TOP_FRAME)
    reasons.extend(sink.floors)
    if sink.functions and not sink.functions.isdisjoint(SHADOWED_NAMES):
        names = ", ".join(sorted(sink.functions & SHADOWED_NAMES))
        reasons.append(f"this command defines a function named {names}, which the analysis "
                       "reads as the program")  # fmt: skip
    if sink.glob_options and any(unit.globbed for unit in sink.units):
        reasons.append(sink.glob_options)
    if sink.links:
        from askgate.policy.shell.links import apply_links

        sink.units[:] = apply_links(sink.units, sink.links)
    units = tuple(dict.fromkeys(sink.units)) if len(sink.units) > 1 else tuple(sink.units)
    if len(units) > 1:
        units = _runs_what_it_wrote(units)
    if not units and not reasons:
        reasons.append("the command contains nothing to run")
    reason = "; ".join(dict.fromkeys(reasons)) or None
    return ShellAnalysis(
        source=command,
        units=units,
        floor=Action.ASK if reason else None,
        floor_reason=reason,
    )


_RUNNERS_OF_FILES = frozenset({"source", ".", "bash", "sh", "zsh", "dash", "ksh", "python",
                               "python3", "node", "perl", "ruby", "php"})  # fmt: skip
WRITTEN_EARLIER = "runs a file written earlier in the same command"
# Programs that run the project's code and configuration (findings-22 #8, #15: a
# conftest.py, a mypy plugin, a pytest.ini `addopts = -p` written just before).
_PROJECT_RUNNERS = frozenset(
    {
        "pytest",
        "py.test",
        "mypy",
        "tox",
        "nox",
        "make",
        "gmake",
        "npm",
        "yarn",
        "pnpm",
        "bun",
        "cargo",
        "go",
        "ruff",
        "pylint",
        "flake8",
        "coverage",
        "hatch",
        "poetry",
        "uv",
        "pre-commit",
    }
)
_CODE_OR_CONFIG = lazy_compile(
    r"(?:^|/)(?:[^/]*\.(?:py|pyi|pth|ini|cfg|toml|mk|js|mjs|cjs|ts|json|go|rs)|Makefile|"
    r"GNUmakefile|makefile|\.pdbrc|\.npmrc)$"
)


def _runs_what_it_wrote(units: tuple[Unit, ...]) -> tuple[Unit, ...]:
    """`echo 'cat .env' > .venv/bin/activate; source .venv/bin/activate`: a unit that
    runs a file (`source F`, `./F`, `bash F`, `python F`) an earlier unit of the same
    command wrote runs code nobody reviewed, whatever a literal rule for `source F`
    says: floored, with a reason consent cannot lift (engine._PATH_FLOORS). So does a
    runner of project code (`pytest`, `mypy`, `make` …) after a file of code or
    configuration was written (`> conftest.py; pytest`)."""
    import msgspec

    written: set[str] = set()
    code_written = False
    found: list[Unit] = []
    for unit in units:
        head = unit.command.partition(" ")[0]
        runs = head in _RUNNERS_OF_FILES or "/" in head
        runner = head in _PROJECT_RUNNERS or (head.startswith("python") and " -m " in unit.command)
        if (runs or runner) and written:
            here = unit.cwd or ""
            if (runner and code_written) or any(
                os.path.normpath(os.path.join(here, p)) in written for p in unit.reads
            ):
                reason = WRITTEN_EARLIER
                if unit.floor_reason:
                    reason = f"{unit.floor_reason}; {reason}"
                unit = msgspec.structs.replace(unit, floor=Action.ASK, floor_reason=reason)
        written.update(os.path.normpath(os.path.join(unit.cwd or "", p)) for p in unit.writes)
        code_written = code_written or any(_CODE_OR_CONFIG.search(p) for p in unit.writes)
        found.append(unit)
    return tuple(found)


# Text that changes what `cd`, `pushd` and `popd` do for the whole command (a function
# or alias of that name, `enable -n`, `shopt -s cdable_vars`, CDPATH), looked for in the
# raw text so strings run later (`bash -c '…'`) count too.
_MOVES_REDEFINED = lazy_compile(
    r"(?:\b(?:cd|pushd|popd)\s*\(\s*\)|\bfunction\s+(?:cd|pushd|popd)\b|"
    r"\benable\b[^;&|\n]*\s-[a-z]*n|\bcdable_vars\b|\bCDPATH\b|\bautocd\b|"
    r"\balias\b[^;&|\n]*\b(?:cd|pushd|popd)\s*=|\bset\b[^;&|\n]*(?:\s-[a-zA-Z]*P|physical))"
)


# Each alternative of _MOVES_REDEFINED needs one of these strings: the regex (tens of µs
# on a long command, tried at every position) runs only when one is there.
_MOVES_REDEFINED_NEEDLES = ("(", "function", "enable", "cdable_vars", "CDPATH", "autocd", "alias",
                            "set")  # fmt: skip


# Options that change what a glob names: the expander models bash's defaults only.
_GLOB_OPTIONS = lazy_compile(
    r"\bGLOBIGNORE\b|\bshopt\b[^;&|\n]*\b(?:dotglob|nocaseglob|globstar|extglob|nullglob|"
    r"failglob|globasciiranges|globskipdots|nocasematch)\b|\bshopt\s+-[a-z]*s[a-z]*\s*(?:$|[;&|\n])"
)


def _prescan(text: str, sink: Sink) -> None:
    if (
        ("cd" in text or "enable" in text or "alias" in text)
        and any(needle in text for needle in _MOVES_REDEFINED_NEEDLES)
        and _MOVES_REDEFINED.search(text)
    ):
        sink.moves_redefined = "and this command changes what cd, pushd or popd do"
    if ("shopt" in text or "GLOBIGNORE" in text) and _GLOB_OPTIONS.search(text):
        sink.glob_options = "this command changes how globs expand (shopt, GLOBIGNORE)"
    if "lastpipe" in text:
        sink.lastpipe = True
    if "<(" in text or ">(" in text:
        sink.process_substitutions = True
    if "=" in text and ("$((" in text or "${" in text):
        from askgate.policy.shell.evaluating import integer_variables

        sink.integers = integer_variables(text)


def _ask(source: str, reason: str) -> ShellAnalysis:
    return ShellAnalysis(source=source, units=(), floor=Action.ASK, floor_reason=reason)

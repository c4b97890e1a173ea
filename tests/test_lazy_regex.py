"""Module-level regexes compiled on first use (askgate.policy.lazy_regex)."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest

import askgate.policy.shell
from askgate.policy.lazy_regex import LazyPattern, lazy_compile


def _module_patterns() -> list[tuple[str, LazyPattern]]:
    found: list[tuple[str, LazyPattern]] = []
    for info in pkgutil.iter_modules(askgate.policy.shell.__path__, "askgate.policy.shell."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = value.values() if isinstance(value, dict) else [value]
            found.extend((f"{info.name}.{name}", v) for v in values if isinstance(v, LazyPattern))
    return found


PATTERNS = _module_patterns()


def test_the_shell_analyser_has_lazy_patterns() -> None:
    assert len(PATTERNS) >= 50


@pytest.mark.parametrize(("name", "lazy"), PATTERNS, ids=[n for n, _ in PATTERNS])
def test_each_compiles_to_what_re_compile_gives(name: str, lazy: LazyPattern) -> None:
    # Pattern equality compares the pattern text, the flags and the compiled code.
    assert lazy.compiled == re.compile(lazy.pattern, lazy._flags), name
    assert lazy.flags == lazy.compiled.flags


def test_methods_answer_like_the_compiled_pattern() -> None:
    lazy = lazy_compile(r"(?P<word>[a-z]+)(\d*)", re.I)
    real = re.compile(r"(?P<word>[a-z]+)(\d*)", re.I)
    text = "Abc12 de f3"
    assert lazy.search(text).group(0) == real.search(text).group(0)
    assert lazy.match(text, 1).span() == real.match(text, 1).span()
    assert lazy.fullmatch("abc12") is not None and lazy.fullmatch("abc 12") is None
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in real.finditer(text)]
    assert lazy.findall(text) == real.findall(text)
    assert lazy.split(text) == real.split(text)
    assert lazy.sub("x", text, 1) == real.sub("x", text, 1)
    assert lazy.subn(lambda m: m.group(1).upper(), text) == real.subn(
        lambda m: m.group(1).upper(), text
    )
    assert (lazy.groups, dict(lazy.groupindex)) == (real.groups, dict(real.groupindex))
    assert lazy_compile(rb"\xf0").search(b"a\xf0") is not None


def test_a_bad_pattern_fails_where_it_is_used() -> None:
    lazy = lazy_compile(r"(unclosed")
    with pytest.raises(re.error):
        lazy.search("x")


def test_importing_the_analyser_compiles_none_of_them() -> None:
    script = (
        "import askgate.policy.shell as shell, importlib, pkgutil\n"
        "from askgate.policy.lazy_regex import LazyPattern\n"
        "compiled = 0\n"
        "for info in pkgutil.iter_modules(shell.__path__, 'askgate.policy.shell.'):\n"
        "    module = importlib.import_module(info.name)\n"
        "    for value in vars(module).values():\n"
        "        values = value.values() if isinstance(value, dict) else [value]\n"
        "        compiled += sum(v._compiled is not None for v in values\n"
        "                        if isinstance(v, LazyPattern))\n"
        "print(compiled)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"0"

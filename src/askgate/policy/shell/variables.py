"""Builtins that set variables or run strings in ways a plain reading misses.

`export 'PATH=/x'`, `builtin export PATH=/x`, `read PATH`, `printf -v PATH`,
`declare -n r=PATH; r=/x` and `unset PATH` all change what later commands run, just
like `PATH=/x`; `declare -i` turns later assignments into arithmetic; `mapfile -C`,
`compgen -C|-W`, `fc` and history expansion run strings nobody wrote as commands.
"""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.programs import dangerous_variable, harmless_setting
from askgate.policy.shell.words import Word

DECLARATIONS = names("declare typeset local export readonly unset")
_NAMEREF_KEYWORDS = names("declare typeset local")


def declaration_floors(keyword: str, words: Sequence[Word]) -> list[str]:
    """Floors for `keyword words…` (declare, export, unset …), however it was spelled."""
    floors: list[str] = []
    options = True
    for word in words:
        text = word.text
        if options and text == "--":
            options = False
            continue
        if options and len(text) > 1 and text[0] in "-+" and "=" not in text:
            letters = text[1:]
            if text[0] == "-" and keyword in _NAMEREF_KEYWORDS:
                if "n" in letters:
                    floors.append("a name reference (-n) makes one variable stand for another")
                if "i" in letters:
                    floors.append("an integer variable (-i) evaluates assignments as arithmetic")
            continue
        name, equals, value = text.partition("=")
        if equals and harmless_setting(name, value, word.static, None):
            continue  # `export GIT_PAGER=cat`: harmless before any program (programs.py)
        floors.extend(name_floors(name.removesuffix("+"), keyword))
    return floors


def name_floors(name: str, command: str) -> list[str]:
    """Floors for a variable name that `command` sets (or unsets)."""
    base = name.split("[", 1)[0]
    floors: list[str] = []
    if dangerous_variable(base):
        floors.append(f"{command} sets {base}, which changes what commands run")
    if "[" in name:
        floors.append(f"array subscript in `{name}` is evaluated as arithmetic")
    return floors


def attached(args: Sequence[Word], flag: str) -> list[Word]:
    """Values of a one-letter option, written apart (`-v NAME`) or attached (`-vNAME`)."""
    found: list[Word] = []
    for index, word in enumerate(args):
        text = word.text
        if text == "--" or not text.startswith("-"):
            continue
        if text == flag and index + 1 < len(args):
            found.append(args[index + 1])
        elif text.startswith(flag) and len(text) > 2:
            found.append(Word(text[2:], word.source, word.dynamic))
    return found


# -- builtins that run strings ---------------------------------------------------------


def callback(name: str, args: Sequence[Word]) -> tuple[list[tuple[Word, str]], str] | None:
    """Strings a builtin runs as shell code: ([(script, context)], floor reason) or None."""
    if name in ("mapfile", "readarray"):
        values = scan(list(args), "dnOsuCc").values("-C")
        if values:
            return [(v, f"{name} -C") for v in values], f"{name} -C runs a command per line"
        return None
    if name in ("compgen", "complete"):
        result = scan(list(args), "oAGWFCXPS", permute=True)
        scripts = [(v, f"{name} -C") for v in result.values("-C")]
        for words in result.values("-W"):
            # The word list is expanded when completions are generated: $( ) runs.
            scripts.append((Word("echo " + words.text, words.source, words.dynamic),
                            f"{name} -W"))  # fmt: skip
        if scripts:
            return scripts, f"{name} -C/-W runs commands to generate completions"
        return None
    return None


def builtin_floor(name: str, args: Sequence[Word]) -> str | None:
    """Why a builtin must be asked about although it names no command to run."""
    if name == "fc":
        lists = any(
            w.text.startswith("-") and "l" in w.text and "e" not in w.text and "s" not in w.text
            for w in args
        )
        return None if lists else "fc runs commands from the history or an editor"
    if name == "set":
        i = 0
        while i < len(args):
            text = args[i].text
            if text in ("--", "-") or text[:1] not in ("-", "+"):
                break
            if text.startswith(("--", "++")):  # a shell's own long options (`bash --norc`)
                i += 1
                continue
            letters = text[1:]
            if text[0] == "-" and ("k" in letters or "H" in letters):
                return "set -k / -H changes how later commands are read"
            if "o" in letters and i + 1 < len(args):
                i += 1
                if text[0] == "-" and args[i].text in ("keyword", "histexpand"):
                    return f"set -o {args[i].text} changes how later commands are read"
            i += 1
        return None
    return None

"""Programs the analysis does not know, which may run their arguments as a command.

`setarch x86_64 curl …`, `capsh -- -c '…'`, `ld-linux.so /usr/bin/curl …`, `chpst -u x
curl …`: wrapper tables can never list every program that runs another. For a program
with no rule of its own, each tail of its arguments that starts with a plain word is a
command it *may* run (a deny or ask rule matching one makes the unit ask); a tail that
starts with a shell, and the script after a `-c`, are analysed as commands (floored).
"""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.argv import names
from askgate.policy.shell.programs import FOREIGN_SHELLS, SHELLS
from askgate.policy.shell.words import Word

MAX_TAILS = 6
# Programs that only look names up: `which curl` runs nothing.
LOOKUPS = names("which type man info whatis apropos whereis tldr help hash pinfo")
_COMMAND_NAME = lazy_compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")
_SCRIPT_SYNTAX = lazy_compile(r"[\s;&|<>$`()]")


class Tails:
    """What an unknown program's arguments may run."""

    __slots__ = ("forms", "scripts", "shell")

    def __init__(self) -> None:
        self.forms: list[str] = []
        self.shell: int | None = None  # index in argv where a shell command starts
        self.scripts: list[Word] = []  # `-c SCRIPT` values


def tails(argv: Sequence[Word]) -> Tails:
    found = Tails()
    head = argv[0].text.rsplit("/", 1)[-1]
    if head in LOOKUPS:
        return found
    count = 0
    for index in range(1, len(argv)):
        word = argv[index]
        text = word.text
        if not word.static:
            continue
        if text in ("-c", "--command") and index + 1 < len(argv):
            script = argv[index + 1]
            if _SCRIPT_SYNTAX.search(script.text):
                found.scripts.append(script)
            continue
        if text.startswith("-") or count >= MAX_TAILS:
            continue
        name = text.rsplit("/", 1)[-1] if "/" in text else text
        if not _COMMAND_NAME.match(name):
            continue
        count += 1
        rest = " ".join(w.text for w in argv[index + 1 :])
        form = f"{name} {rest}" if rest else name
        found.forms.append(form)
        if name != text:
            found.forms.append(f"{text} {rest}" if rest else text)
        if found.shell is None and (name in SHELLS or name in FOREIGN_SHELLS):
            found.shell = index
    return found

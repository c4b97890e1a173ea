"""Does a sed script run commands or touch other files? (GNU sed's `e`, `r`, `w` …)

A small reader of sed's command syntax rather than a pattern search, so that
addresses (`0~1e`, `/x/I e`, `/a/,+1e`) and attached options (`-e'e cmd'`,
`--expression=…`) cannot hide an `e`. Anything it cannot read counts as running
commands: the unit is asked about, never allowed by mistake.
"""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.words import Word

_PLAIN = frozenset("=dDgGhHnNpPxzF")  # commands without arguments
_NUMBERED = frozenset("qQlLv")  # an optional number (or version) follows
_LABELLED = frozenset(":bTt")
_TEXT = frozenset("aic")
_S_FLAGS = frozenset("gpiImM0123456789")


def sed_scripts(args: Sequence[Word]) -> list[str]:
    """The script texts of `sed args`: -e/--expression values, else the first operand."""
    result = scan(
        _unabbreviated(args),
        "efl",
        names("--expression --file --line-length"),
        permute=True,
        optional_value=names("-i --in-place"),
    )
    scripts = [w.text for w in result.values("-e", "--expression")]
    if scripts or result.values("-f", "--file"):
        return scripts  # with -f, the program is a file the analyser does not read
    return [result.operands[0].text] if result.operands else []


# GNU sed's long options: getopt takes any unambiguous prefix (`--expr=1e id`).
_SED_LONG = (
    "--expression", "--file", "--follow-symlinks", "--in-place", "--line-length",
    "--null-data", "--zero-terminated", "--quiet", "--silent", "--regexp-extended",
    "--separate", "--sandbox", "--unbuffered", "--debug", "--posix", "--binary", "--help",
    "--version",
)  # fmt: skip


def _unabbreviated(args: Sequence[Word]) -> list[Word]:
    """`--expr=x` as `--expression=x`: the long options sed would take a prefix for."""
    out = list(args)
    for index, word in enumerate(out):
        text = word.text
        if not text.startswith("--") or len(text) < 3:
            continue
        name, eq, value = text.partition("=")
        if name in _SED_LONG:
            continue
        matches = [option for option in _SED_LONG if option.startswith(name)]
        if len(matches) == 1:
            out[index] = Word(matches[0] + eq + value, word.source, word.dynamic)
    return out


def runs_commands(script: str) -> bool:
    """True when the script may run a command (`e`, `s///e`), writes outside the working
    directory or cannot be read; the files its `r`, `R`, `w`, `W` and `s///w` commands
    name are in script_files()."""
    return script_files(script)[0]


def script_files(script: str) -> tuple[bool, list[str], list[str]]:
    """(runs commands or unreadable, files read, files written) of one sed script. A file
    name runs to the end of the line, as GNU sed reads it (`1r a;p` reads `a;p`)."""
    reader = _Reader(script)
    try:
        return reader.run(), reader.reads, reader.writes
    except (IndexError, ValueError):
        return True, [], []  # ran off the end where sed needs more: unreadable, fail closed


def sed_files(args: Sequence[Word]) -> tuple[list[str], list[str]]:
    """The files read and written by the scripts of `sed args` (none under --sandbox)."""
    if any(w.text == "--sandbox" for w in args):
        return [], []
    reads: list[str] = []
    writes: list[str] = []
    for script in sed_scripts(args):
        _, read, written = script_files(script)
        reads.extend(read)
        writes.extend(written)
    return reads, writes


def _local(name: str) -> bool:
    """A file sed's `w` may write without a question once the write rules allow it: sed's
    own /dev/stdout and /dev/stderr, or a name below the working directory (a write
    elsewhere, `w /etc/passwd`, stays a question whatever the rules say, as before)."""
    if name in ("/dev/stdout", "/dev/stderr"):
        return True
    return not name.startswith(("/", "~")) and ".." not in name.split("/")


_UNSAFE, _NEXT, _TAIL = "unsafe", "next", "tail"  # what a command leaves to run()


class _Reader:
    __slots__ = ("i", "reads", "s", "writes")

    def __init__(self, script: str) -> None:
        self.s = script
        self.i = 0
        self.reads: list[str] = []
        self.writes: list[str] = []

    def filename(self) -> str | None:
        """The file name after r, R, w, W or s///w, to the end of the line (None: none,
        or one with a backslash, which the reader does not model)."""
        self.blanks()
        end = self.s.find("\n", self.i)
        end = len(self.s) if end < 0 else end
        name = self.s[self.i : end]
        self.i = end
        return name if name and "\\" not in name else None

    def blanks(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def delimited(self, delimiter: str, regex: bool = False) -> None:
        """Skip to just past the next unescaped delimiter (in a regex, not one in `[…]`)."""
        s = self.s
        while s[self.i] != delimiter:
            if regex and s[self.i] == "[":
                self.bracket()
            else:
                self.i += 2 if s[self.i] == "\\" else 1
        self.i += 1

    def bracket(self) -> None:
        """Skip a bracket expression: `[^]a/[:alpha:]]` is one item, `/` and all."""
        s = self.s
        self.i += 1
        if s[self.i] == "^":
            self.i += 1
        if s[self.i] == "]":
            self.i += 1
        while s[self.i] != "]":
            if s[self.i] == "[" and s[self.i + 1] in ".:=":
                close = s[self.i + 1] + "]"
                self.i = s.index(close, self.i + 2) + 2  # ValueError: unreadable
            else:
                self.i += 1
        self.i += 1

    def address(self, second: bool) -> None:
        s = self.s
        c = s[self.i] if self.i < len(s) else ""
        if c.isdigit() or (second and c in "+~"):
            self.i += 1
            while self.i < len(s) and (s[self.i].isdigit() or s[self.i] == "~"):
                self.i += 1
        elif c == "$":
            self.i += 1
        elif c in ("/", "\\"):
            if c == "\\":
                self.i += 1
                c = s[self.i]
            self.i += 1
            self.delimited(c, regex=True)
            while self.i < len(s) and s[self.i] in "IM":
                self.i += 1

    def run(self) -> bool:
        s = self.s
        n = len(s)
        while True:
            while self.i < n and s[self.i] in " \t\n;":
                self.i += 1
            if self.i >= n:
                return False
            self.addresses()
            if self.i >= n:
                return True  # an address with no command: not sed as we know it
            command = s[self.i]
            self.i += 1
            outcome = self.command(command)
            if outcome == _UNSAFE:
                return True
            if outcome == _NEXT:
                continue
            self.blanks()
            if self.i < n and s[self.i] not in ";\n}#":
                return True  # trailing text sed would read differently

    def addresses(self) -> None:
        """Skip `ADDR`, `ADDR,ADDR` and any `!` before a command."""
        s = self.s
        n = len(s)
        self.address(False)
        self.blanks()
        if self.i < n and s[self.i] == ",":
            self.i += 1
            self.blanks()
            self.address(True)
        self.blanks()
        while self.i < n and s[self.i] == "!":
            self.i += 1
            self.blanks()

    def command(self, command: str) -> str:
        """Read one command's arguments: _UNSAFE, _NEXT (nothing may follow it on the line
        to check) or _TAIL (check what follows)."""
        s = self.s
        n = len(s)
        if command in "{}":
            return _NEXT
        if command == "#" or command in _TEXT:
            self.line(continued=command != "#")
        elif command in _LABELLED:
            while self.i < n and s[self.i] not in ";\n":
                self.i += 1
        elif command in _NUMBERED:
            self.blanks()
            while self.i < n and (s[self.i].isdigit() or s[self.i] == "."):
                self.i += 1
        elif command in ("s", "y"):
            return self.substitution(command)
        elif command in "rRwW":
            name = self.filename()
            if name is None:
                return _UNSAFE
            if command in "rR":
                self.reads.append(name)
                return _NEXT
            return self.written(name)
        elif command not in _PLAIN:
            return _UNSAFE  # e, or something unknown
        return _TAIL

    def substitution(self, command: str) -> str:
        """`s/RE/TEXT/FLAGS` (its `e` and `w FILE` flags) or `y/A/B/`."""
        s = self.s
        n = len(s)
        delimiter = s[self.i]
        if delimiter in "\n\\":
            return _UNSAFE
        self.i += 1
        self.delimited(delimiter, regex=command == "s")
        self.delimited(delimiter)
        if command == "s":
            while self.i < n and s[self.i] in _S_FLAGS:
                self.i += 1
            if self.i < n and s[self.i] == "e":
                return _UNSAFE
            if self.i < n and s[self.i] == "w":
                self.i += 1
                name = self.filename()
                return _UNSAFE if name is None else self.written(name)
        return _TAIL

    def written(self, name: str) -> str:
        self.writes.append(name)
        return _NEXT if _local(name) else _UNSAFE

    def line(self, continued: bool) -> None:
        """Skip the rest of the line (a/i/c text continues after a backslash-newline)."""
        s = self.s
        while self.i < len(s) and s[self.i] != "\n":
            self.i += 2 if continued and s[self.i] == "\\" else 1

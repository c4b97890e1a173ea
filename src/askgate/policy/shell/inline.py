"""Code given on the command line, and programs with a command language of their own.

Interpreters (`perl -e`, `python -c`, `node -e`, `ruby -e`, `php -r`) and awk programs
are not parsed: askgate looks for what matters to the policy. A quoted string literal in
the code that names a path is an operand of unknown role (read, and a write that can
only tighten); perl's and ruby's file operands after the code are reads (writes with
`-i`); calls that start programs (`system`, backticks, `qx`, `subprocess`,
`child_process` …) or evaluate built strings floor the unit to ask.

Programs whose input is a command language that can reach a shell (`sqlite3` dot
commands, `ed`, `ex`, `dc`, `psql`, `mysql`, `sftp`, `gnuplot`, vim and emacs in batch
mode, `sed -f -`, `make -f -`, `awk -f -`) floor when the script comes from standard
input or holds a shell escape.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.jqprogram import JQ_NAMES, jq_floor
from askgate.policy.shell.words import Word

# Interpreter -> (options whose value is code, option letters taking a value).
_CODE_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "perl": (("-e", "-E"), "eEIMmxlC0dDi"),
    "ruby": (("-e",), "erICEFxKTW"),
    "python": (("-c",), "cmWXQ"),
    "node": (("-e", "-p", "--eval", "--print"), "erC"),
    "php": (("-r", "-R", "-B", "-E", "-F"), "rdcfBERFz"),
}
_PYTHON = lazy_compile(r"^(?:python|pypy)[0-9.]*$")
_NODE = ("node", "nodejs", "bun", "deno")

# Calls that start another program, or evaluate a string as code (which may then).
_RUNS = {
    "perl": lazy_compile(
        r"\bsystem\b|\bexec\b|`|\bqx\b|\bopen\d?\s*\(?[^;]*(?:\|\s*['\"]|['\"][^'\"]*\|)|"
        r"\beval\b|\bfork\b|\bpipe\b|\bIPC::|\bdo\s*['\"]|\brequire\b|\bsyscall\b|\b(?:sym)?link\b"
    ),
    "ruby": lazy_compile(
        r"\bsystem\b|\bexec\b|`|%x|\bspawn\b|\bpopen|\bOpen3\b|\beval\b|\bfork\b|"
        r"\bsyscall\b|\binstance_eval\b|\bsend\b|\bKernel\b|\bopen\s*\(\s*['\"]\||\b(?:sym)?link\b"
    ),
    "python": lazy_compile(
        r"\bsubprocess\b|\bos\s*\.\s*(?:system|popen|exec|spawn|posix_spawn|fork)|\bpty\b|"
        r"\bexec\s*\(|\beval\s*\(|__import__|\bimportlib\b|\bgetattr\b|\bctypes\b|"
        r"\bcompile\s*\(|\bcommands\b|\bmultiprocessing\b|\bplatform\s*\.\s*popen|"
        r"\bfrom\s+os\s+import\b|\brunpy\b|\bcode\s*\.\s*interact|\b(?:sym)?link(?:_to)?\b"
    ),
    "node": lazy_compile(
        r"child_process|\bexec\w*\s*\(|\bspawn\w*\s*\(|\beval\s*\(|\bFunction\s*\(|"
        r"process\s*\.\s*binding|\bimport\s*\(|\brequire\s*\(\s*[^'\"]|\bvm\b|\bworker_threads\b|"
        r"\bDeno\s*\.\s*(?:run|Command)|\bBun\s*\.\s*(?:spawn|\$)|\b(?:sym)?link(?:Sync)?\b"
    ),
    "php": lazy_compile(
        r"\b(?:system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec|eval|assert|"
        r"create_function|call_user_func\w*|mail|putenv|dl|symlink|link)\s*\(|`|\$\w+\s*\("
    ),
}
# Calls that open, list or copy files: with a name built at run time (`open('.e'+'nv')`,
# `open(f)` for each `f` of `os.listdir('.')`, `Path.home()/…`) the file is not seen.
_FILE_CALLS = {
    "python": lazy_compile(
        r"\b(?:open|Path|PurePath|PosixPath|listdir|scandir|walk|glob|iglob|rglob|iterdir|"
        r"copyfile|copy2?|copytree|move|expanduser|chdir|loadtxt|genfromtxt|read_csv)\s*\(|"
        r"\.home\s*\(|\bfileinput\b"
    ),
    "node": lazy_compile(
        r"\b(?:readFileSync|readFile|createReadStream|openSync|open|readdirSync|readdir|"
        r"opendirSync|opendir|copyFileSync|copyFile|cpSync|cp|readTextFile|readTextFileSync|"
        r"file|chdir)\s*\(|\bhomedir\s*\("
    ),
    "perl": lazy_compile(
        r"\b(?:sysopen|opendir|readdir|glob|chdir|copy)\s*\(?|<[^<>;\s]*\*[^<>;]*>"
    ),
    "ruby": lazy_compile(
        r"\b(?:File|IO)\s*\.\s*(?:read|open|readlines|foreach|binread|new|copy_stream)\b\s*\(?|"
        r"\bDir\b|\bPathname\b|\bFileUtils\b|\bchdir\b"
    ),
    "php": lazy_compile(
        r"\b(?:file_get_contents|fopen|file|readfile|glob|scandir|opendir|copy|highlight_file|"
        r"show_source|parse_ini_file|chdir|SplFileObject)\s*\("
    ),
}
# A call whose first argument is one plain literal (`open('x.txt')`, `open("a", "w")`).
_LITERAL_ARGUMENT = lazy_compile(r"""\s*[rRbBuU]{0,2}(['"])[^'"\n\\]*\1\s*[,)]""")
# ruby without parentheses: `File.read "x"` (then the end of the call or of the line).
_RUBY_BARE_LITERAL = lazy_compile(r"""(['"])[^'"\n\\]*\1[ \t]*(?:[,;)}\n]|$)""")


def _ruby_literal_argument(program: str, end: int, parenthesised: bool) -> bool:
    """The call's first argument is one plain literal: no `#{…}` (interpolated at run
    time) and no leading `|` (`IO.read("|cmd")` runs cmd)."""
    pattern = _LITERAL_ARGUMENT if parenthesised else _RUBY_BARE_LITERAL
    found = pattern.match(program, end)
    if found is None:
        return False
    literal = found.group(0)
    return "#{" not in literal and not literal.lstrip("rRbBuU'\" \t").startswith("|")


# perl's `open F, …` / `open(my $f, '<', …)`: the arguments after the handle.
_PERL_OPEN = lazy_compile(r"\bopen\s*\(?\s*(?:my\s+)?[$\w]+\s*,([^;]*)")
_PERL_LITERALS = lazy_compile(r"""'[^'\n]*'|"[^"$@\n]*"|[\s,()]""")


def _names_files_at_run_time(key: str, program: str) -> bool:
    """A call in the code that opens, lists or copies a file it names at run time."""
    pattern = _FILE_CALLS.get(key)
    if pattern is None:
        return False
    for match in pattern.finditer(program):
        text = match.group(0)
        if key == "ruby" and text.startswith(("File", "IO")):
            # `File.read("README.md")`, `File.read 'x'`: a literal name is decided as a read.
            if _ruby_literal_argument(program, match.end(), text.endswith("(")):
                continue
            return True
        if not text.rstrip().endswith("(") or key in ("perl", "ruby"):
            return True  # a listing (`Dir[…]`, `<*.e*>`, `glob`), `Path.home`, `fileinput`
        if _LITERAL_ARGUMENT.match(program, match.end()) is None:
            return True
    if key == "perl":
        for match in _PERL_OPEN.finditer(program):
            if _PERL_LITERALS.sub("", match.group(1)):
                return True
    return False


# Quoted string literals (no escapes spanning quotes needed: we only want path-looking ones).
_LITERAL = lazy_compile(r"'([^'\n]{1,4096})'|\"([^\"\n]{1,4096})\"")
_AWK_WRITE = lazy_compile(r">>?\s*\"([^\"\n]+)\"")


def interpreter_key(name: str) -> str | None:
    if _PYTHON.match(name):
        return "python"
    if name in _NODE:
        return "node"
    return name if name in _CODE_OPTIONS else None


class InlineCode:
    """What the inline code of one interpreter command means for the policy."""

    __slots__ = ("floor", "operands", "reads", "writes")

    def __init__(self) -> None:
        self.operands: list[str] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.floor: str | None = None


def inline_code(name: str, args: Sequence[Word]) -> InlineCode | None:
    """The code given to `name` with -e/-c/-r and its file operands; None without code."""
    key = interpreter_key(name)
    if key is None:
        return None
    code_options, valued = _CODE_OPTIONS[key]
    code: list[str] = []
    operands: list[Word] = []
    in_place = False
    suffix = ""
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if text == "--":
            operands.extend(args[index:])
            break
        if code and key in ("python", "node", "php") and not text.startswith("-"):
            operands.extend(args[index - 1 :])  # the program's own arguments
            break
        if text in code_options:
            if index < len(args):
                code.append(args[index].text)
                index += 1
            continue
        if text.startswith("--"):
            option, eq, value = text.partition("=")
            if eq and option in code_options:
                code.append(value)  # `node --eval=CODE`
            continue
        if text.startswith("-") and len(text) > 1:
            # A cluster: `-pi.bak -e`, `-pe1`, `-lne 'code'`.
            letters = text[1:]
            for position, letter in enumerate(letters):
                if letter == "i" and key in ("perl", "ruby"):
                    in_place = True
                    suffix = letters[position + 1 :]
                    break  # -i takes the rest of the cluster as its suffix
                if "-" + letter in code_options:
                    rest = letters[position + 1 :]
                    if rest:
                        code.append(rest)
                    elif index < len(args):
                        code.append(args[index].text)
                        index += 1
                    break
                if letter in valued:
                    if position + 1 == len(letters) and index < len(args):
                        index += 1
                    break
            continue
        if not code:
            return None  # a script file: the unit is decided as before
        operands.append(word)
    if not code:
        return None
    result = InlineCode()
    program = "\n".join(code)
    if _RUNS[key].search(program):
        result.floor = f"the {name} code can run other programs, evaluate strings or make links"
    if result.floor is None and _names_files_at_run_time(key, program):
        result.floor = f"the {name} code opens or lists files it names at run time"
    for match in _LITERAL.finditer(program):
        literal = _open_mode(match.group(1) or match.group(2) or "")
        if _names_path(literal):
            result.operands.append(literal)
    for word in operands:
        if not word.static:
            continue
        if key in ("perl", "ruby"):
            (result.writes if in_place else result.reads).append(word.text)
            if in_place and suffix:
                result.writes.append(backup_name(key, word.text, suffix))
        else:
            result.operands.append(word.text)
    return result


def backup_name(key: str, path: str, suffix: str) -> str:
    """Where `perl -iSUFFIX` keeps the original of `path`: each `*` in the suffix is the
    file's name (`-i'.git/hooks/*'` copies `pre-commit` into `.git/hooks/`); without one,
    the suffix is appended (`-irc` on `.env` writes `.envrc`). ruby only appends."""
    if key == "perl" and "*" in suffix:
        return suffix.replace("*", path)
    return path + suffix


def awk_paths(program: str) -> tuple[list[str], list[str]]:
    """(operands, writes) of an awk program: path literals, `> "file"` targets."""
    writes = [m.group(1) for m in _AWK_WRITE.finditer(program)]
    operands = [
        literal
        for m in _LITERAL.finditer(program)
        if (literal := _open_mode(m.group(1) or m.group(2) or "")) and _names_path(literal)
    ]
    return [o for o in operands if o not in writes], writes


def _open_mode(literal: str) -> str:
    """perl's two-argument open: `">/etc/hosts"`, `"+< f"`, `">> f"` name f."""
    stripped = literal.lstrip("+<>& \t")
    return stripped.rstrip() if stripped != literal else literal


def _names_path(literal: str) -> bool:
    """A literal that may name a file: `/…`, `~…`, `./…`, or a dotfile-like `.env`."""
    if " " in literal or len(literal) > 1024:
        return False
    # A bare name (`'hosts'`) counts too: the engine checks it only if it exists.
    return "/" in literal or literal.startswith(("~", ".")) or bool(_BARE.match(literal))


_BARE = lazy_compile(r"^[\w][\w.+-]{0,127}$")


# --- command languages -------------------------------------------------------------------

_INTERACTIVE = frozenset({"ed", "red", "ex", "dc", "sftp", "ftp", "gnuplot", "psql", "mysql",
                          "mariadb", "sqlite3", "sqlite", "duckdb", "bc", "jshell"})  # fmt: skip
_ALWAYS = frozenset({"ed", "red", "ex", "dc"})  # their input is commands, `!` runs a shell
# sqlite3 dot-commands that run programs or touch files, and SQL functions that do.
_SQLITE_ESCAPE = lazy_compile(
    r"(?:^|[\n;])\s*\.(?:shell|system|output|once|import|read|load|open|save|backup|restore|"
    r"cd|log|excel|clone|archive|ar|trace|iotrace|testcase|www|sha3sum|dbinfo\s+\S)|"
    r"\b(?:edit|readfile|writefile|load_extension|fts3_tokenizer|lsdir)\s*\(|"
    # SQL that opens or writes another database file (`vacuum into '/etc/x'`, `attach`),
    # and duckdb's `copy … to`, `install`/`load` of extensions.
    r"\battach\b|\bvacuum\b[^;]*\binto\b|\bcopy\b[^;]*\bto\b|\b(?:install|load)\s+['\"\w]",
    re.I,
)
_ESCAPE = {
    "sqlite3": _SQLITE_ESCAPE,
    "sqlite": _SQLITE_ESCAPE,
    "duckdb": _SQLITE_ESCAPE,
    "psql": lazy_compile(r"\\!|\\o\s*\||\\copy|\\g\s*\||\\i|\\w|\\setenv|\\gexec"),
    "mysql": lazy_compile(r"\\!|\bsystem\b|\\\.|\bsource\b|\btee\b|\bpager\b", re.I),
    "mariadb": lazy_compile(r"\\!|\bsystem\b|\\\.|\bsource\b|\btee\b|\bpager\b", re.I),
    "gnuplot": lazy_compile(r"\bsystem\b|!|`|\bload\b|\bshell\b|\bset\s+(?:output|print)"),
    "sftp": lazy_compile(r"!"),
    "ftp": lazy_compile(r"!"),
    "bc": lazy_compile(r"$^"),
    "jshell": lazy_compile(r"\bRuntime\b|\bProcessBuilder\b|/open"),
}
_BATCH_EDITOR = {
    "vim": ("-e", "-E", "-es", "-Es", "-s", "--headless", "-u", "-S", "-c", "--cmd", "-x"),
    "emacs": ("--batch", "-batch", "--script", "-l", "--load", "--eval", "-f", "--funcall",
              "-x", "-u", "--user"),
}  # fmt: skip
_VIMS = ("vim", "vi", "nvim", "view", "vimdiff", "gvim", "rvim")
_SCRIPT_FROM_STDIN = {  # program -> options whose value `-` (or /dev/stdin) is the script
    "expect": ("-f",),
    "sed": ("-f", "--file"),
    "gsed": ("-f", "--file"),
    "make": ("-f", "--file", "--makefile"),
    "gmake": ("-f", "--file", "--makefile"),
    "awk": ("-f", "--file"),
    "gawk": ("-f", "--file"),
    "mawk": ("-f",),
    "nawk": ("-f",),
    "jq": ("-f", "--from-file"),
    "gojq": ("-f", "--from-file"),
    "jaq": ("-f", "--from-file"),
    "yq": ("-f", "--from-file"),
}
_STDIN_NAMES = ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


def command_language_floor(name: str, args: Sequence[Word], stdin: bool) -> str | None:
    """Why this command's own command language may run a program, or None.

    `stdin`: its standard input is a pipe, heredoc, here-string or file.
    """
    if name in JQ_NAMES:
        reason = jq_floor(name, args)
        if reason:
            return reason
    if stdin and _reads_commands_from_stdin(name, args):
        return f"{name} reads commands from its standard input, which may run programs"
    if name in _INTERACTIVE:
        if name in _ALWAYS:
            return f"{name} reads commands, which can run shell commands (`!`)"
        pattern = _ESCAPE[name]
        if any(w.text == "-cmd" or w.text == "-init" for w in args):
            return f"{name} -cmd/-init runs {name} commands, which can run programs"
        if any(not w.static for w in args) and name.startswith("sqlite"):
            return f"{name} commands built at run time"
        if any(pattern.search(w.text) for w in args[1:] if not w.text.startswith("-")) or (
            name in ("sqlite3", "sqlite", "duckdb") and args and pattern.search(args[0].text)
        ):
            return f"a {name} command that can run programs or touch other files"
        if stdin and name != "bc":
            return f"{name} reads its commands from standard input"
        return None
    editor = "vim" if name in _VIMS else name if name in _BATCH_EDITOR else None
    if editor is not None:
        options = _BATCH_EDITOR[editor]
        for word in args:
            if (
                word.text in options
                or word.text.startswith(("-c", "--cmd", "--eval"))
                or (editor == "vim" and word.text.startswith("+") and not word.text[1:].isdigit())
            ):
                return f"{name} {word.text} runs editor commands, which can run programs"
        if stdin and editor == "vim" and any(w.text in ("-", "-s") for w in args):
            return f"{name} reads commands from standard input"
        return None
    script_options = _SCRIPT_FROM_STDIN.get(name)
    if script_options is not None:
        for index, word in enumerate(args):
            text = word.text
            value: str | None = None
            if text in script_options and index + 1 < len(args):
                value = args[index + 1].text
            elif text.startswith("--") and "=" in text and text.split("=", 1)[0] in script_options:
                value = text.split("=", 1)[1]
            elif len(text) > 2 and text[:2] in script_options and not text.startswith("--"):
                value = text[2:]
            if value in _STDIN_NAMES:
                return f"{name} {text} takes its script from standard input"
    return None


COMMAND_LANGUAGE_NAMES = frozenset(
    {
        *_INTERACTIVE,
        *_VIMS,
        *_BATCH_EDITOR,
        *_SCRIPT_FROM_STDIN,
        *_CODE_OPTIONS,
        *_NODE,
        "gdb",
        "lldb",
        "pdb",
        "script",
        "ninja",
        "irb",
        "ghci",
        "R",
        "julia",
    }
)


# Debuggers, REPLs and build tools that take commands from standard input (or a file
# given as `-`), each with the option words that make it do so (empty: always).
_STDIN_LANGUAGES: dict[str, tuple[str, ...]] = {
    "gdb": (), "lldb": (), "pdb": (), "script": (), "ninja": (), "node": ("-i", "inspect"),
    "nodejs": ("-i", "inspect"), "irb": (), "ghci": (), "R": (), "julia": ("-i",),
}  # fmt: skip


def _reads_commands_from_stdin(name: str, args: Sequence[Word]) -> bool:
    texts = [w.text for w in args]
    if _PYTHON.match(name):
        return any(t == "-i" or (t.startswith("-") and not t.startswith("--") and "i" in t[1:])
                   for t in texts[:1]) or "pdb" in texts[:2] or "-i" in texts  # fmt: skip
    options = _STDIN_LANGUAGES.get(name)
    if options is None:
        return False
    return not options or any(t in options for t in texts)

"""Commands that run other commands: seen through, re-parsed, or floored to ask.

`peel(argv)` looks at argv[0] and, when it is a wrapper, says what it runs
(`inner`), what it runs as shell source (`scripts`), which other commands it
starts (`extra`, e.g. `find -exec`), whether it forces an ask (`floor`), and which
paths and directory it touches itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.launchers import LAUNCHERS
from askgate.policy.shell.peeling import Handler, Peel
from askgate.policy.shell.peeling import joined as _joined
from askgate.policy.shell.peeling import kept as _kept
from askgate.policy.shell.peeling import simple as _simple
from askgate.policy.shell.programs import FOREIGN_SHELLS, SHELLS, program_name, scan_shell
from askgate.policy.shell.runners import ssh_option_runs
from askgate.policy.shell.variables import builtin_floor
from askgate.policy.shell.words import Word, synthetic

_ASSIGNMENT = lazy_compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NO_NAMES: frozenset[str] = frozenset()


# -- transparent wrappers ---------------------------------------------------------


def _env(args: list[Word]) -> Peel:
    words = list(args)
    cleared = False
    while words and words[0].text == "-":
        words = words[1:]
        cleared = True
    result = scan(
        words,
        "uCS",
        names("--unset --chdir --split-string"),
        short_flags="i0v",
        long_flags=names("--ignore-environment --null --debug --list-signal-handling"),
        optional_value=names("--block-signal --default-signal --ignore-signal"),
    )
    rest = result.operands
    while rest and rest[0].text == "-":
        rest = rest[1:]
    peel = Peel()
    peel.option_words = list(result.option_words)
    if result.unknown:
        peel.add_floor(f"unrecognised option {result.unknown[0]} for env")
    peel.cwd = result.values("-C", "--chdir")
    unset = [w.text for w in result.values("-u", "--unset")]
    if cleared or result.has("-i", "--ignore-environment"):
        unset.append("PATH")
    while rest and _ASSIGNMENT.match(rest[0].text):
        peel.assigned.append(rest[0].text.split("=", 1)[0])
        peel.settings.append(rest[0])
        peel.option_words.append(rest[0])
        rest = rest[1:]
    split = result.values("-S", "--split-string")
    if split:
        peel.scripts.append((_joined([*split, *rest]), "env -S"))
        peel.add_floor("env -S splits a string into a command")
        return peel
    peel.inner = rest
    if "PATH" in unset and rest and program_name(rest[0]) in SHELLS:
        # bash without PATH searches the current directory too (its default ends in `.`).
        peel.add_floor("a shell started without PATH also runs programs from the current directory")
    return peel


def _timeout(args: list[Word]) -> Peel:
    result = scan(
        args,
        "sk",
        names("--signal --kill-after"),
        short_flags="v",
        long_flags=names("--preserve-status --foreground --verbose"),
    )
    peel = Peel(result.operands[1:])  # the first operand is the duration
    peel.option_words = result.option_words + result.operands[:1]
    if result.unknown:
        peel.add_floor(f"unrecognised option {result.unknown[0]} for timeout")
    return peel


_nice_options = _simple("n", "--adjustment")


def _nice(args: list[Word]) -> Peel:
    if args and re.fullmatch(r"-\d+", args[0].text):
        args = args[1:]  # nice -5 cmd
    return _nice_options(args) or Peel()


def _command(args: list[Word]) -> Peel:
    result = scan(args, short_flags="pvV")
    if result.has("-v", "-V"):
        return _kept()  # only looks a name up
    peel = Peel(result.operands)
    if result.unknown:
        peel.add_floor(f"unrecognised option {result.unknown[0]} for command")
    return peel


def _time(args: list[Word]) -> Peel:
    result = scan(
        args,
        "fo",
        names("--format --output"),
        short_flags="pavq",
        long_flags=names("--portability --append --verbose --quiet"),
    )
    peel = Peel(result.operands)
    peel.writes = [w.text for w in result.values("-o", "--output")]
    if result.unknown:
        peel.add_floor(f"unrecognised option {result.unknown[0]} for time")
    return peel


def _busybox(args: list[Word]) -> Peel | None:
    if not args or args[0].text.startswith("-"):
        return None
    return Peel(args)


# -- privilege and opaque wrappers: seen through for denies, floored to ask ---------

_SUDO_LONG = names(
    "--close-from --chdir --group --host --prompt --chroot --role --command-timeout --type "
    "--other-user --user"
)


def _sudo(args: list[Word]) -> Peel:
    result = scan(args, "CDghpRrTtUu", _SUDO_LONG, optional_value=names("--preserve-env"))
    peel = Peel(result.operands, "sudo runs the command with elevated privileges")
    peel.option_words = result.option_words
    while peel.inner and _ASSIGNMENT.match(peel.inner[0].text):
        # sudo [VAR=value …] command: the environment it passes, not the command
        peel.assigned.append(peel.inner[0].text.split("=", 1)[0])
        peel.option_words.append(peel.inner.pop(0))
    peel.cwd = result.values("-D", "--chdir")
    if result.has("-e", "--edit"):
        peel.inner = []
        peel.keep = True
        peel.writes = [w.text for w in result.operands]
    return peel


def _sudoedit(args: list[Word]) -> Peel:
    peel = _kept("sudoedit edits files with elevated privileges")
    peel.writes = [w.text for w in scan(args, "CDghpRrTtUu", permute=True).operands]
    return peel


def _xargs(args: list[Word]) -> Peel:
    """xargs as a wrapper on its own: its standard input is not known (see xargs_peel)."""
    return xargs_peel(args, None, stdin=False)


# What xargs would split differently from whitespace, or a producer whose output is not
# its words as written (`printf '.e%sv' n`, `echo -e '\x2e…'`, an expansion).
_NOT_PLAIN_NAMES = lazy_compile(r"[%\\'\"$`]")
MAX_XARGS_NAMES = 64
# `printf '%s\n' a b` prints its operands one per line (the format is kept as one more
# name: `echo '%s\n' a` prints it).
_PRINTF_NAMES = lazy_compile(r"^%s(?:\\n)?(?=\s|$)")


def xargs_peel(args: list[Word], literal: str | None, stdin: bool) -> Peel:
    """`… | xargs CMD`: with a literal producer (`echo a b`, `printf '%s\n' a b`, a heredoc:
    `literal` is what it prints), the names are CMD's operands (`echo .env | xargs cat` is
    `cat .env`; with `-I R`, one command per name). From anything else (`stdin`: a pipe
    from another program or a file; `-a FILE`) they are unknown: a command that only
    reads them asks when a read or write deny/ask rule exists (Unit.unknown_names),
    any other command asks. With no standard input given at all, it asks."""
    result = scan(
        args,
        "aEdILnPs",
        names("--arg-file --delimiter --max-args --max-procs --max-chars --process-slot-var"),
        optional_value=names("-e -i -l --eof --replace --max-lines"),
        short_flags="0prtxo",
        long_flags=names("--null --interactive --no-run-if-empty --verbose --exit --open-tty"),
    )
    inner = result.operands or [synthetic("echo")]
    files = result.values("-a", "--arg-file")
    plain = (
        literal is not None
        and not files
        and not result.unknown
        and not result.has("-0", "--null", "-d", "--delimiter")
        and not _NOT_PLAIN_NAMES.search(_PRINTF_NAMES.sub("", literal, count=1))
        and len(literal.split()) <= MAX_XARGS_NAMES
    )
    replace = result.values("-I") or [
        Word(value.text if value is not None else "{}", "")
        for option, value in result.options
        if option in ("-i", "--replace")
    ]
    if plain and literal is not None:
        found = [Word(name, name) for name in literal.split()]
        if replace:
            marker = replace[0].text or "{}"
            peel = Peel()
            for name in found:
                argv = [Word(w.text.replace(marker, name.text), w.source) for w in inner]
                peel.extra.append((argv, "xargs"))
            peel.keep = not found
        else:
            peel = Peel([*inner, *found])
    elif not stdin and not files:
        peel = Peel(inner, "xargs reads its arguments from a standard input nobody has seen")
    elif _reads_only(inner) and not replace:
        # `find . | xargs grep -l x`, `xargs cat < list`: the command only reads the files,
        # whose names nobody has seen.
        peel = Peel(inner)
        peel.recursive = ["."]
        peel.unknown_names = (
            f"xargs hands `{inner[0].text}` file names nobody has seen (from a file or "
            "another command's output): a read or write rule could apply to any of them"
        )
    else:
        peel = Peel(inner, "xargs runs a command with arguments only known at run time")
    peel.reads = [w.text for w in files]
    peel.option_words = result.option_words
    return peel


# Programs that only read their file operands (as xargs' command): with these options.
_READ_ONLY = names(
    "grep egrep fgrep rg cat head tail wc ls file stat du md5sum sha1sum sha256sum "
    "sha512sum basename dirname realpath readlink echo printf"
)
_CHECKERS = {"ruff": ("check", "format"), "mypy": (), "eslint": (), "black": (), "flake8": (),
             "pylint": (), "prettier": ()}  # fmt: skip
_WRITING_OPTIONS = ("--fix", "--write", "-w", "--in-place", "-i", "-o", "--output")


def _reads_only(argv: list[Word]) -> bool:
    """A command that only reads the files given to it (so xargs may feed it any)."""
    if not argv or not all(w.static for w in argv):
        return False
    name = argv[0].text
    texts = [w.text for w in argv[1:]]
    if any(t.startswith(_WRITING_OPTIONS) for t in texts):
        return False
    if name in _READ_ONLY:
        return True
    checker = _CHECKERS.get(name)
    if checker is None:
        return False
    if name == "ruff":
        return (bool(texts) and texts[0] == "check") or texts[:2] == ["format", "--check"]
    if name in ("black", "prettier"):
        return "--check" in texts
    return True


_FIND_EXEC = names("-exec -execdir -ok -okdir")


def _find(args: list[Word]) -> Peel:
    peel = _kept()
    i, n = 0, len(args)
    follows = False  # -H/-L/-follow: links are followed, out of the starting points
    while i < n and args[i].text in ("-H", "-L", "-P"):
        follows = args[i].text != "-P"
        i += 1
    while i < n and (args[i].text == "-D" or args[i].text.startswith("-O")):
        i += 2 if args[i].text == "-D" else 1
    starts: list[str] = []
    while i < n and not args[i].text.startswith(("-", "(", "!", ")", ",")):
        starts.append(args[i].text)
        i += 1
    peel.reads.extend(starts)  # starting points
    follows = follows or any(w.text == "-follow" for w in args[i:])
    while i < n:
        text = args[i].text
        if text in _FIND_EXEC:
            j = i + 1
            while j < n and args[j].text not in (";", "+"):
                j += 1
            if j > i + 1:
                peel.extra.append((list(args[i + 1 : j]), f"find {text}"))
            peel.add_floor(f"find {text} runs a command for every match")
            i = j + 1
            continue
        if text == "-delete" and follows:
            peel.add_floor("find -delete with links followed removes files outside its paths")
        elif text == "-delete":
            # `rm -r` of its starting points: the write rules decide every one of them
            # (recursive_writes.py), with what lies below.
            for start in starts or ["."]:
                peel.writes.append(start)
                peel.recursive_writes.append(start)
        elif text in ("-fprint", "-fprint0", "-fls", "-fprintf") and i + 1 < n:
            peel.writes.append(args[i + 1].text)
            i += 1
        elif text == "-files0-from" and i + 1 < n:
            peel.reads.append(args[i + 1].text)
            i += 1
        i += 1
    return peel


def _fd(args: list[Word]) -> Peel:
    peel = _kept()
    i, n = 0, len(args)
    while i < n:
        text = args[i].text
        if text in ("-x", "--exec", "-X", "--exec-batch"):
            j = i + 1
            while j < n and args[j].text != ";":
                j += 1
            if j > i + 1:
                peel.extra.append((list(args[i + 1 : j]), f"fd {text}"))
            peel.add_floor(f"fd {text} runs a command for every match")
            i = j
        i += 1
    return peel


def _parallel(args: list[Word]) -> Peel:
    result = scan(
        args,
        "jSaIdnNLCEPl",
        names(
            "--jobs --sshlogin --arg-file --replace --delimiter --colsep --joblog --results "
            "--tmpdir --env --tagstring --halt --timeout --eof --max-procs --basefile --workdir "
            "--sshloginfile"
        ),
    )
    operands = result.operands
    split = next((i for i, w in enumerate(operands) if w.text.startswith(":::")), len(operands))
    command = operands[:split]
    peel = Peel((), "parallel runs commands with arguments only known at run time")
    peel.option_words = result.option_words
    if command:
        peel.scripts.append((_joined(command), "parallel"))
    else:
        peel.keep = True  # the arguments themselves are the commands
        for word in operands[split:]:
            if not word.text.startswith(":::"):
                peel.scripts.append((word, "parallel"))
    return peel


def _watch(args: list[Word]) -> Peel:
    result = scan(
        args, "nq", names("--interval --equexit"), optional_value=names("-d --differences")
    )
    peel = Peel((), "watch runs its command repeatedly")
    if result.has("-x", "--exec"):
        peel.inner = result.operands
    elif result.operands:
        peel.scripts.append((_joined(result.operands), "watch"))
    return peel


def _flock(args: list[Word]) -> Peel:
    result = scan(args, "wEc", names("--timeout --wait --conflict-exit-code --command"))
    peel = Peel((), "flock runs a command under a lock")
    operands = result.operands
    if operands and not operands[0].text.isdigit():
        peel.writes.append(operands[0].text)  # the lock file
    scripts = result.values("-c", "--command")
    if len(operands) > 2 and operands[1].text in ("-c", "--command"):
        scripts.append(operands[2])  # flock FILE -c 'command'
    if scripts:
        peel.scripts.append((scripts[0], "flock -c"))
    else:
        peel.inner = operands[1:]
    return peel


def _ionice(args: list[Word]) -> Peel:
    result = scan(args, "cnpPu", names("--class --classdata --pid --pgid --uid"))
    if result.has("-p", "-P", "-u", "--pid", "--pgid", "--uid"):
        return _kept("ionice changes the priority of running processes")
    return Peel(result.operands, "ionice runs a command with another I/O priority")


def _chroot(args: list[Word]) -> Peel:
    result = scan(args, "", names("--userspec --groups"))
    peel = Peel(result.operands[1:], "chroot runs a command in another root directory")
    peel.reads = [w.text for w in result.operands[:1]]
    peel.keep = not peel.inner
    return peel


def _su(args: list[Word]) -> Peel:
    result = scan(
        args,
        "cCgGsw",
        names("--command --session-command --group --supp-group --shell --whitelist-environment"),
        permute=True,
    )
    peel = _kept("su runs a command as another user")
    for script in result.values("-c", "--command", "-C", "--session-command"):
        peel.scripts.append((script, "su -c"))
    return peel


def _ssh(args: list[Word]) -> Peel:
    result = scan(args, "BbcDEeFIiJLlmOoPpQRSWw")
    peel = _kept()
    peel.reads = [w.text for w in result.values("-F", "-i")]
    peel.writes = [w.text for w in result.values("-E")]
    for value in result.values("-o"):
        if ssh_option_runs(value.text):
            peel.add_floor(f"ssh option {value.text.split('=')[0]} runs a local command")
    if result.has("-F"):
        peel.add_floor("ssh -F reads a config that can run local commands")
    if result.has("-I"):
        peel.add_floor("ssh -I loads a PKCS#11 library")
    remote = result.operands[1:]
    if remote:
        peel.scripts.append((_joined(remote), "ssh"))
        peel.add_floor("ssh runs a command on another machine")
    return peel


def _script(args: list[Word]) -> Peel | None:
    result = scan(
        args,
        "cEIOBTm",
        names("--command --log-in --log-out --log-io --log-timing --echo --logging-format"),
        permute=True,
    )
    scripts = result.values("-c", "--command")
    if not scripts:
        return None
    peel = Peel((), "script runs a command in a pseudo-terminal")
    peel.scripts.append((scripts[0], "script -c"))
    peel.writes = [w.text for w in result.operands[:1]]
    return peel


def _strace(args: list[Word]) -> Peel:
    result = scan(
        args,
        "abeEIoOpPsSuUX",
        names("--output --trace --signal --attach --user --string-limit --env"),
    )
    peel = Peel(result.operands, "tracers run a command under ptrace")
    peel.writes = [w.text for w in result.values("-o", "--output")]
    peel.keep = not result.operands
    return peel


def _nsenter(args: list[Word]) -> Peel:
    result = scan(
        args,
        "tSG",
        names("--target --setuid --setgid"),
        optional_value=names("-m -u -i -n -p -U -C -T -r -w"),
    )
    return Peel(result.operands, "nsenter runs a command in other namespaces")


# -- strings run as shell source ---------------------------------------------------


def _shell(args: list[Word]) -> Peel | None:
    result = scan_shell(args)
    if result is None:
        return None
    has_c, script, _ = result
    if not has_c or script is None:
        return None  # a script file or stdin: an ordinary unit
    peel = Peel()
    peel.scripts.append((script, "bash -c"))
    reason = builtin_floor("set", args)  # bash -H / -k / -o histexpand …
    if reason:
        peel.add_floor(reason)
    if script.dynamic:
        peel.add_floor(f"the script of a shell -c is built at run time: {script.dynamic}")
    return peel


def _foreign_shell(args: list[Word]) -> Peel | None:
    peel = _shell(args)
    if peel is not None:
        peel.add_floor("a shell whose syntax is not analysed")
    return peel


def _eval(args: list[Word]) -> Peel:
    peel = _kept("eval runs a string as a command")
    if args:
        peel.scripts.append((_joined(args), "eval"))
    return peel


def _source(args: list[Word]) -> Peel:
    peel = _kept("source runs the commands of a file")
    peel.reads = [w.text for w in args[:1]]
    return peel


def _alias(args: list[Word]) -> Peel | None:
    definitions = [w for w in args if "=" in w.text and not w.text.startswith("-")]
    if not definitions:
        return None
    peel = _kept("an alias changes what a later command runs")
    for word in definitions:
        value = word.text.split("=", 1)[1]
        peel.scripts.append((Word(value, value, word.dynamic), "alias"))
    return peel


def _trap(args: list[Word]) -> Peel | None:
    words = [w for w in args if w.text != "--"]
    if len(words) < 2 or words[0].text in ("-l", "-p", "-"):
        return None
    peel = _kept("trap runs a string as a command later")
    peel.scripts.append((words[0], "trap"))
    return peel


WRAPPERS: dict[str, Handler] = {
    "env": _env,
    "timeout": _timeout,
    "gtimeout": _timeout,
    "nice": _nice,
    "nohup": _simple(long_flags="--help --version"),
    "command": _command,
    "builtin": lambda args: Peel(args),
    "exec": _simple("a", short_flags="cl"),
    "time": _time,
    "stdbuf": _simple("ioe", "--input --output --error"),
    "noglob": lambda args: Peel(args),
    "busybox": _busybox,
    "toybox": _busybox,
    "sudo": _sudo,
    "sudoedit": _sudoedit,
    "doas": _simple("uC", short_flags="nsL", floor="doas runs the command as another user"),
    "pkexec": _simple("", "--user", floor="pkexec runs the command as another user"),
    "run0": _simple(
        "uDg",
        "--user --chdir --group --unit --property --description --slice --nice --setenv",
        floor="run0 runs the command as another user",
    ),
    "xargs": _xargs,
    "find": _find,
    "fd": _fd,
    "fdfind": _fd,
    "parallel": _parallel,
    "watch": _watch,
    "setsid": _simple(short_flags="cfw", floor="setsid runs the command in a new session"),
    "flock": _flock,
    "ionice": _ionice,
    "chroot": _chroot,
    "su": _su,
    "runuser": _su,
    "ssh": _ssh,
    "script": _script,
    "unbuffer": _simple(short_flags="p", floor="unbuffer runs the command in a pseudo-terminal"),
    "nsenter": _nsenter,
    "strace": _strace,
    "ltrace": _strace,
    "eval": _eval,
    "source": _source,
    ".": _source,
    "trap": _trap,
    "alias": _alias,
    "coproc": lambda args: Peel(args, "coproc is not analysed precisely"),
    "caffeinate": _simple("tw", short_flags="dimsu", floor="caffeinate runs a command"),
    "chrt": _simple("T", skip_operands=1, floor="chrt runs a command with another scheduler"),
    "taskset": _simple(short_flags="acp", skip_operands=1, floor="taskset runs a command"),
}
WRAPPERS.update(dict.fromkeys(SHELLS, _shell))
WRAPPERS.update(dict.fromkeys(FOREIGN_SHELLS, _foreign_shell))
WRAPPERS.update(LAUNCHERS)


# Wrappers that pass the environment and the working directory on unchanged: a harmless
# setting before or inside them is decided by the program they run (`PYTHONPATH=src
# timeout 60 pytest`, `timeout 60 env PYTHONPATH=src pytest`).
_PASS_ENVIRONMENT = names("env timeout gtimeout nice nohup")


def final_program(argv: Sequence[Word]) -> str | None:
    """The program argv runs once env, timeout, nice and nohup are peeled off, or None
    when one of them floors, moves the working directory (`env -C`) or runs a string."""
    current = list(argv)
    for _ in range(8):
        if not current:
            return None
        name = program_name(current[0])
        if name is None or name not in _PASS_ENVIRONMENT:
            return name
        layer = peel(current)
        if layer is None or layer.floor or layer.cwd or layer.scripts or layer.extra:
            return None
        current = layer.inner
    return None


def peel(argv: Sequence[Word]) -> Peel | None:
    """One layer of wrapping around argv, or None when argv[0] is not a wrapper."""
    if not argv:
        return None
    name = program_name(argv[0])
    handler = WRAPPERS.get(name) if name is not None else None
    return handler(list(argv[1:])) if handler is not None else None

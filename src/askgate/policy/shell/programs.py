"""What kind of program a command name is: shells, interpreters, system paths."""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.argv import names
from askgate.policy.shell.words import Word

SYSTEM_DIRS = names(
    "/bin /usr/bin /usr/local/bin /sbin /usr/sbin /usr/local/sbin /opt/homebrew/bin "
    "/opt/homebrew/sbin"
)
SHELLS = names("sh bash zsh dash ksh mksh ash yash posh rbash newgrp")
# Shells with another syntax: re-parsed as bash so denies see them, but floored.
FOREIGN_SHELLS = names("fish csh tcsh nu elvish xonsh pwsh powershell")
INTERPRETERS = names(
    "python python2 python3 pypy pypy3 node nodejs bun deno perl ruby php lua luajit tclsh "
    "wish R Rscript julia osascript irb groovy jshell scala awk gawk"
)
_PYTHON = lazy_compile(r"^(?:python|pypy)[0-9.]*$")
_INLINE_CODE = {
    "python": ("-c",),
    "node": ("-e", "-p", "--eval", "--print"),
    "nodejs": ("-e", "-p", "--eval", "--print"),
    "bun": ("-e", "--eval", "-p", "--print"),
    "deno": ("eval",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "php": ("-r",),
    "lua": ("-e",),
    "luajit": ("-e",),
    "Rscript": ("-e",),
    "julia": ("-e", "--eval"),
    "osascript": ("-e",),
}
INLINE_INTERPRETERS = frozenset(_INLINE_CODE)
STDIN_FILES = names("- /dev/stdin /dev/fd/0 /proc/self/fd/0")

# Environment variables that make an ordinary command run other code or look elsewhere.
DANGEROUS_VARIABLES = names(
    "PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT BASH_ENV ENV IFS PS4 SHELLOPTS BASHOPTS "
    "PROMPT_COMMAND CDPATH HOME PWD OLDPWD PYTHONPATH PYTHONSTARTUP PYTHONHOME PYTHONINSPECT "
    "NODE_OPTIONS NODE_PATH PERL5OPT PERL5LIB PERLLIB RUBYOPT RUBYLIB GIT_SSH GIT_SSH_COMMAND "
    "GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_ASKPASS GIT_EXEC_PATH GIT_DIR GIT_WORK_TREE "
    "GIT_TEMPLATE_DIR GIT_PROXY_COMMAND PAGER EDITOR VISUAL MANPAGER LESSOPEN LESSCLOSE BROWSER "
    "SSH_ASKPASS SUDO_ASKPASS TAR_OPTIONS GREP_OPTIONS MAKEFLAGS RUSTC_WRAPPER "
    "CARGO_BUILD_RUSTC_WRAPPER npm_config_script_shell JAVA_TOOL_OPTIONS _JAVA_OPTIONS ZDOTDIR "
    "BASH_LOADABLES_PATH GCONV_PATH HOSTALIASES "
    # Programs and configuration files that tools run or load (red team 2026-11-29).
    "SHELL FCEDIT GIT_SEQUENCE_EDITOR GIT_COMMON_DIR GIT_ALLOW_PROTOCOL SUDO_EDITOR "
    "SYSTEMD_EDITOR SYSTEMD_PAGER KUBE_EDITOR GH_EDITOR GH_PAGER GH_BROWSER MANOPT LESS "
    "LESSKEY LESSKEYIN LESSKEY_CONTENT VIMINIT GVIMINIT EXINIT MYVIMRC RSYNC_RSH "
    "SIMPLE_BACKUP_SUFFIX VERSION_CONTROL "
    "RSYNC_CONNECT_PROG CVS_RSH ZIPOPT MAKEFILES MFLAGS GOFLAGS RUSTC RUSTDOC "
    "RUSTC_WORKSPACE_WRAPPER PERL5DB PERLDB_OPTS PYTHONUSERBASE PYTHONBREAKPOINT "
    "JDK_JAVA_OPTIONS MAVEN_OPTS GRADLE_OPTS DOTNET_STARTUP_HOOKS PHPRC PHP_INI_SCAN_DIR "
    "LUA_PATH LUA_CPATH R_PROFILE R_PROFILE_USER R_ENVIRON R_ENVIRON_USER BUNDLE_GEMFILE "
    "KUBECONFIG AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE XDG_CONFIG_HOME FZF_DEFAULT_COMMAND "
    "PYTEST_ADDOPTS PYTEST_PLUGINS"
)
_DANGEROUS_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG", "BASH_FUNC_", "LUA_INIT")
_DANGEROUS_PATTERN = lazy_compile(r"^CARGO_TARGET_\w*_(?:RUNNER|LINKER)$|^npm_config_", re.I)


# Settings of listed variables that cannot change what runs (docs/bash.md "Harmless
# settings"): name -> (the static value, full match; the programs it is harmless before,
# full match, or None: any). A pager of `cat` or none runs nothing new; a PYTHONPATH of
# directories below the working directory adds nothing Python or pytest would not import
# from there anyway. Seen through env, timeout, nice and nohup (not through a wrapper
# that moves the working directory). Examples (command, harmless) are checked by the tests.
HARMLESS_SETTINGS: dict[str, tuple[str, str | None]] = {
    **dict.fromkeys(
        ("PAGER", "GIT_PAGER", "MANPAGER", "GH_PAGER", "SYSTEMD_PAGER"),
        (r"(?:/usr/bin/|/bin/)?cat|", None),
    ),
    "PYTHONPATH": (
        r"(?:(?:\./)?(?:\.|[\w+-][\w.+-]*(?:/[\w+-][\w.+-]*)*/?))"
        r"(?::(?:\./)?(?:\.|[\w+-][\w.+-]*(?:/[\w+-][\w.+-]*)*/?))*",
        r"python[0-9.]*|pytest|py\.test",
    ),
}
HARMLESS_EXAMPLES: tuple[tuple[str, bool], ...] = (
    ("GIT_PAGER=cat git log --oneline -3", True),
    ("PAGER= git diff", True),
    ("PAGER=less git diff", False),
    ("GIT_PAGER='sh -c id' git log", False),
    ("GIT_PAGER=$X git log", False),
    ("PYTHONPATH=src python -m app", True),
    ("PYTHONPATH=src:. pytest -q", True),
    ("PYTHONPATH=/tmp/evil pytest -q", False),
    ("PYTHONPATH=../other python -m app", False),
    ("PYTHONPATH=src pip list", False),
    ("PYTHONPATH=~/x python -m app", False),
    # Through env, timeout, nice and nohup the program they reach decides.
    ("PYTHONPATH=src timeout 60 pytest", True),
    ("timeout 60 env PYTHONPATH=src pytest", True),
    ("nohup nice -n 5 env GIT_PAGER=cat git log", True),
    ("timeout 5 env LD_PRELOAD=./x.so ls", False),
    ("timeout 5 env PYTHONPATH=src pip list", False),
    ("env PYTHONPATH=src timeout 5 bash -c pytest", False),
    ("env -C /tmp PYTHONPATH=src pytest", False),
    ("PYTHONPATH=src env -C /tmp pytest", False),
    ("env PYTHONPATH=$X pytest", False),
)


def harmless_setting(name: str, value: str, static: bool, program: str | None) -> bool:
    """Whether `name=value` before `program` is in HARMLESS_SETTINGS."""
    entry = HARMLESS_SETTINGS.get(name)
    if entry is None or not static:
        return False
    values, programs = entry
    if not re.fullmatch(values, value):
        return False
    return programs is None or (program is not None and re.fullmatch(programs, program) is not None)


def dangerous_variable(name: str) -> bool:
    return (
        name in DANGEROUS_VARIABLES
        or name.startswith(_DANGEROUS_PREFIXES)
        or (name[:1] in "CNcn" and _DANGEROUS_PATTERN.match(name) is not None)
    )


def program_name(word: Word) -> str | None:
    """The name a program is recognised by: a bare static name, or one in a system dir.

    `./timeout` is someone's script, not timeout(1): it is never seen through.
    """
    if word.dynamic is not None:
        return None
    text = word.text
    if "/" not in text:
        return text
    directory, _, name = text.rpartition("/")
    return name if (directory or "/") in SYSTEM_DIRS else None


def is_interpreter(name: str) -> bool:
    return name in INTERPRETERS or bool(_PYTHON.match(name))


def scan_shell(args: Sequence[Word]) -> tuple[bool, Word | None, bool] | None:
    """A shell's arguments: (has -c, the script or script-file operand, reads stdin).

    None when an option cannot be read (built at run time).
    """
    has_c = stdin = False
    i, n = 0, len(args)
    while i < n:
        text = args[i].text
        if args[i].dynamic is not None and text.startswith(("-", "+")):
            return None
        if text in ("--", "-"):
            i += 1
            break
        if text in ("--rcfile", "--init-file"):
            i += 2
            continue
        if text.startswith("--"):
            i += 1
            continue
        if len(text) > 1 and text[0] in "-+":
            letters = text[1:]
            if text[0] == "-":
                has_c = has_c or "c" in letters
                stdin = stdin or "s" in letters
            if letters[-1] in "oO":
                i += 1  # -o pipefail, +O extglob
            i += 1
            continue
        break
    script = args[i] if i < n else None
    if script is None and not has_c:
        stdin = True
    return has_c, script, stdin


def reads_script_from_stdin(argv: Sequence[Word]) -> bool:
    """A shell or interpreter that takes its program from standard input."""
    if not argv:
        return False
    name = program_name(argv[0])
    if name is None:
        return False
    args = argv[1:]
    if name in SHELLS or name in FOREIGN_SHELLS:
        result = scan_shell(args)
        if result is None:
            return False
        _, script, stdin = result
        return stdin or (script is not None and script.text in STDIN_FILES)
    if not is_interpreter(name):
        return False
    key = "python" if _PYTHON.match(name) else name
    inline = _INLINE_CODE.get(key, ())
    for word in args:
        text = word.text
        if text in inline or any(text.startswith(o) and len(o) == 2 for o in inline):
            return False
        if key == "python" and text.startswith("-m"):
            return False
        if not text.startswith("-") or text == "-":
            return text in STDIN_FILES
    return True


def interpreter_context(name: str, argv: Sequence[Word]) -> str | None:
    """`python -c`, `node -e` …: recorded as the unit's context."""
    key = "python" if _PYTHON.match(name) else name
    for option in _INLINE_CODE.get(key, ()):
        for word in argv[1:]:
            if word.text == option or (len(option) == 2 and word.text.startswith(option)):
                return f"{name} {option}"
    return None

"""Path normalisation for policy checks: `~`/`$HOME` expansion, lexical folding, symlinks.

Every function treats its input as hostile: a NUL byte, a lone surrogate or an absurd
length is a `ValueError` with a one-line message (the gate turns it into *ask*), never a
crash and never a silently wrong path. Only `resolve` and `inside_roots` touch the
filesystem (to follow symlinks), and `home_directory`/`expand_user` may read the user
database (`~user`, a missing $HOME); `normalize` and `fold_lexically` are purely lexical.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Mapping, Sequence

import msgspec

# Longest input we even try to fold; far above PATH_MAX so a real path never hits it,
# low enough that a hostile megabyte of `a/../` cannot cost much.
MAX_INPUT_LENGTH = 65_536
# Linux PATH_MAX: the kernel refuses longer paths, so nothing longer can be opened.
MAX_PATH_LENGTH = 4096

# Device files a command may use freely: writing to them touches nothing outside.
SAFE_DEVICE_PATHS: frozenset[str] = frozenset(
    {"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty"}
)
_SAFE_FD_PATH = re.compile(r"/dev/fd/[0-9]{1,9}")

_VARIABLE_PREFIX = re.compile(r"\$(?:\{(HOME|PWD)\}|(HOME|PWD)(?![A-Za-z0-9_]))")


class PathForms(msgspec.Struct, frozen=True):
    """A path as written (lexically normalised) and with its symlinks resolved."""

    lexical: str
    resolved: str

    @property
    def forms(self) -> tuple[str, ...]:
        """The distinct forms, lexical first."""
        if self.lexical == self.resolved:
            return (self.lexical,)
        return (self.lexical, self.resolved)


def check_path_text(path: str) -> None:
    """Raise ValueError if `path` is not a string a filesystem could hold."""
    if not isinstance(path, str):
        raise ValueError(f"path must be a string, not {type(path).__name__}")
    if "\x00" in path:
        raise ValueError("path contains a NUL byte")
    if len(path) > MAX_INPUT_LENGTH:
        raise ValueError(f"path is longer than {MAX_INPUT_LENGTH} characters")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("path contains invalid characters (lone surrogate)") from None


def home_directory(env: Mapping[str, str] | None = None) -> str:
    """`$HOME` from `env`; with the real environment, fall back to the password database.

    An explicit `env` without HOME is an error rather than a silent guess, so tests never
    reach the real home directory.
    """
    if env is None:
        home = os.environ.get("HOME")
        if not home:
            try:
                home = pwd.getpwuid(os.getuid()).pw_dir
            except (KeyError, OSError):
                home = None
    else:
        home = env.get("HOME")
    if not home:
        raise ValueError("HOME is not set, cannot expand '~' or '$HOME'")
    check_path_text(home)
    if not home.startswith("/"):
        raise ValueError(f"HOME is not an absolute path: {home!r}")
    return home


def expand_user(path: str, env: Mapping[str, str] | None = None, *, cwd: str | None = None) -> str:
    """Expand a leading `~`, `~/`, `~user`, `$HOME`, `${HOME}` and (given `cwd`) `$PWD`, `~+`.

    Only a leading occurrence is expanded, as the shell would for a path word. `$PWD`
    without a `cwd` is left alone: the gate's own working directory says nothing about
    the agent's. `~user` for an unknown user stays literal, as in bash.
    """
    check_path_text(path)
    if path == "~" or path.startswith("~/"):
        return home_directory(env) + path[1:]
    if path.startswith("~"):
        name, slash, rest = path[1:].partition("/")
        if name in ("+", "-"):
            # `~+` is $PWD and `~-` is $OLDPWD in bash; the latter is unknowable here.
            if name == "-" or cwd is None:
                raise ValueError(f"cannot expand '~{name}' in {path!r}")
            check_path_text(cwd)
            return cwd + slash + rest
        try:
            home = pwd.getpwnam(name).pw_dir
        except (KeyError, OSError, ValueError):
            return path
        return home + slash + rest
    match = _VARIABLE_PREFIX.match(path)
    if match is None:
        return path
    variable = match.group(1) or match.group(2)
    rest = path[match.end() :]
    if variable == "HOME":
        return home_directory(env) + rest
    if cwd is None:
        return path
    check_path_text(cwd)
    return cwd + rest


def fold_lexically(path: str) -> str:
    """Fold `.`, `..` and repeated slashes of an absolute path; `..` at `/` stays at `/`."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)


def absolute(path: str, cwd: str, env: Mapping[str, str] | None = None) -> str:
    """`path` with `~`/`$HOME`/`$PWD` expanded and made absolute against `cwd`, `..` kept.

    The form to pass on as a working directory (after a `cd`): folding `link/..` here
    would lose where a physical cd lands; `resolve` computes both forms from it.
    """
    return _absolute(path, cwd, env)


def _absolute(path: str, cwd: str, env: Mapping[str, str] | None) -> str:
    """`path` expanded and made absolute against `cwd`, with nothing folded yet."""
    check_path_text(path)
    check_path_text(cwd)
    if not cwd.startswith("/"):
        raise ValueError(f"working directory is not absolute: {cwd!r}")
    expanded = expand_user(path, env, cwd=cwd)
    if not expanded:
        raise ValueError("path is empty")
    return expanded if expanded.startswith("/") else cwd + "/" + expanded


def normalize(path: str, cwd: str, env: Mapping[str, str] | None = None) -> str:
    """Absolute, `~`/`$HOME`/`$PWD` expanded, `.`/`..`/`//` folded lexically.

    Never touches the filesystem. `cwd` must be absolute.
    """
    folded = fold_lexically(_absolute(path, cwd, env))
    if len(folded) > MAX_PATH_LENGTH:
        raise ValueError(f"path is longer than {MAX_PATH_LENGTH} characters")
    return folded


def _realpath(path: str) -> str:
    # Non-strict realpath keeps a missing tail and leaves a symlink loop unresolved
    # instead of raising; anything else it throws means we cannot vouch for the path.
    # It walks the path component by component, so a `..` after a symlink climbs out
    # of the link's target, as the kernel does.
    try:
        resolved = os.path.realpath(path)
    except (OSError, RuntimeError, ValueError) as error:
        raise ValueError(f"cannot resolve symlinks in {path!r}: {error}") from None
    return fold_lexically(resolved)


def resolve(path: str, cwd: str, env: Mapping[str, str] | None = None) -> PathForms:
    """The lexical form (`normalize`) and the form the kernel would open.

    The resolved form comes from the path as written, not from the folded one: the
    kernel resolves `proj/link/..` to the parent of the link's *target*, so folding
    `link/..` away first would check a different file than the one opened. A missing
    tail is kept as written.
    """
    absolute = _absolute(path, cwd, env)
    lexical = fold_lexically(absolute)
    if len(lexical) > MAX_PATH_LENGTH:
        raise ValueError(f"path is longer than {MAX_PATH_LENGTH} characters")
    return PathForms(lexical=lexical, resolved=_realpath(absolute))


def is_inside(path: str, root: str) -> bool:
    """True when `path` is `root` or below it, compared segment by segment.

    Both must be absolute (they are folded lexically first): `/a/bc` is not inside `/a/b`.
    """
    check_path_text(path)
    check_path_text(root)
    if not (path.startswith("/") and root.startswith("/")):
        raise ValueError("is_inside needs absolute paths")
    path, root = fold_lexically(path), fold_lexically(root)
    if root == "/":
        return True
    return path == root or path.startswith(root + "/")


def is_safe_device(path: str) -> bool:
    """`/dev/null`, the standard streams, the terminal and `/dev/fd/N`."""
    return path in SAFE_DEVICE_PATHS or _SAFE_FD_PATH.fullmatch(path) is not None


def inside_roots(root: str, extra_directories: Sequence[str] = ()) -> tuple[str, ...]:
    """The project root, its added directories, and each one's symlink-resolved form."""
    roots: list[str] = []
    for directory in (root, *extra_directories):
        check_path_text(directory)
        if not directory.startswith("/"):
            raise ValueError(f"project directory is not absolute: {directory!r}")
        for form in (fold_lexically(directory), _realpath(directory)):
            if form not in roots:
                roots.append(form)
    return tuple(roots)


# What the project root becomes when the working directory gives none that is safe: a
# directory that does not exist, so nothing is "inside the project" and a relative rule
# pattern (`./**`) matches nothing.
NO_PROJECT_ROOT = "/nonexistent/askgate-no-project"


def bounded_project_root(root: str, cwd: str, home: str | None) -> str:
    """`root` unless it is `/`, the home directory or one of its ancestors (a session
    started in `~`, or a dotfiles repository in `~`, must not make every home file
    "inside the project"); then the working directory under the same condition, else
    NO_PROJECT_ROOT."""
    start = fold_lexically(cwd if cwd.startswith("/") else os.path.join(os.getcwd(), cwd))
    for candidate in (root, start):
        if not _too_wide(candidate, home):
            return candidate
    return NO_PROJECT_ROOT


def _too_wide(directory: str, home: str | None) -> bool:
    forms = {fold_lexically(directory), _realpath(directory)}  # each resolved once: per call
    if "/" in forms:
        return True
    if not home:
        return False
    homes = {fold_lexically(home), _realpath(home)}
    return any(is_inside(h, d) for h in homes for d in forms)


def find_project_root(cwd: str) -> str:
    """The nearest ancestor of `cwd` holding `.git` (directory or file), else `cwd`.

    Here rather than in `config` so the daemon can find the root without the file
    parser; `config` re-exports it."""
    check_path_text(cwd)
    start = fold_lexically(cwd if cwd.startswith("/") else os.path.join(os.getcwd(), cwd))
    directory = start
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return start
        directory = parent

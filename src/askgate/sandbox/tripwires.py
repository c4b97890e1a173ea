"""Tripwires: protected files that did not exist when the command started.

A missing protected file whose placeholder would be seen by ordinary work (`.envrc`,
`.npmrc`, `.gitattributes`, `.git/commondir` — git lists a placeholder as untracked and
`git add -A` commits it; an empty `commondir` stops git altogether) is watched instead of
held: once the command is over — under bubblewrap every process of it is gone by then
(its PID namespace ended) — whatever appeared at such a name is moved aside to
`NAME.askgate-blocked[-N]`, never run by anything, and one line says so. Its parent
directory is pinned (`plan.pinned_ancestors`), so the name cannot have been reached
through a renamed directory either.

A run of `askgate sandbox` (the CLI) arms its tripwires in askgate's state directory
(hidden inside every sandbox) before bwrap starts, as `armed/PID-START.json`, and removes
the record once it has disarmed them itself. When the CLI is killed (SIGKILL, an OOM
kill) bwrap dies with it (`--die-with-parent`) and the record stays: the next askgate
process's sweep (`sweep_armed`) finds its process gone and moves aside what appeared at
those names while the run lasted — as the sweep does for a hook-prepared run
(`placeholders._disarm_interrupted`).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from askgate.policy.model import Surface
from askgate.sandbox.planentry import (
    CLOCK_SLACK_S,
    SUFFIX,
    PlanEntry,
    TreeWatch,
    outside_env,
    symlinks_on_the_way,
)
from askgate.sandbox.planentry import move_aside as _move_aside
from askgate.sandbox.procstat import process_start

if TYPE_CHECKING:
    from askgate.sandbox.planentry import _Source

ARMED = "armed"


class Armed(msgspec.Struct, frozen=True, kw_only=True):
    """The tripwires of one running `askgate sandbox`, for a sweep after it was killed."""

    pid: int
    start: str  # the process's start time (`/proc/PID/stat` field 22): PID reuse
    started: float  # time.time() when armed
    tripwires: tuple[PlanEntry, ...]
    # The directories watched for protected names made below the roots (treewatch.py),
    # and their change times when the run started.
    watch: TreeWatch | None = None
    recorded: bytes = b""


def _link_intact(entry: PlanEntry) -> bool:
    """A link tripwire still stands: a symlink with its text, or one to the same file."""
    if not os.path.islink(entry.path):
        return False
    with contextlib.suppress(OSError):
        if os.readlink(entry.path) == entry.link:
            return True
        return os.path.samefile(entry.path, os.path.join(os.path.dirname(entry.path), entry.link))
    return False


def _new_matches(entry: PlanEntry) -> list[str]:
    """A glob tripwire's matches made since the plan (`*.pth` in a user site directory)."""
    name_glob = entry.pattern.rsplit("/", 1)[-1]
    since = entry.since - CLOCK_SLACK_S
    # A symlink made during the run on the way (`ln -s ../../stash site-packages`) brings
    # in files made earlier: then every match is the command's.
    linked = _link_made_on_the_way(entry.path, since)
    found: list[str] = []
    with contextlib.suppress(OSError), os.scandir(entry.path) as children:
        for child in children:
            if fnmatch.fnmatchcase(child.name, name_glob) and not child.name.endswith(SUFFIX):
                with contextlib.suppress(OSError):
                    if linked or child.stat(follow_symlinks=False).st_ctime >= since:
                        found.append(child.path)
    return found


def _link_made_on_the_way(path: str, since: float) -> bool:
    for link in symlinks_on_the_way(path):
        with contextlib.suppress(OSError):
            if os.lstat(link).st_ctime >= since:
                return True
    return False


def _is_sprung(entry: PlanEntry) -> bool:
    if entry.kind == "glob":
        return bool(_new_matches(entry))
    if entry.kind == "index":
        return bool(_planted_gitlink_configs(entry))
    if entry.link:
        return not _link_intact(entry)
    return os.path.lexists(entry.path)


def sprung(tripwires: Sequence[PlanEntry]) -> list[PlanEntry]:
    return [entry for entry in tripwires if _is_sprung(entry)]


def disarm(tripwires: Sequence[PlanEntry]) -> list[str]:
    """Move aside what the command created at a tripwire (and put a replaced link back);
    one line for each."""
    lines: list[str] = []
    # The index last: its check runs git in the project, which must not read a planted
    # `.git/commondir` or `config.worktree` (tripwires of their own, moved aside first).
    ordered = [e for e in tripwires if e.kind != "index"]
    ordered += [e for e in tripwires if e.kind == "index"]
    for entry in ordered:
        if entry.kind != "index" and not _is_sprung(entry):
            continue
        if entry.link:
            lines.append(_restore_link(entry))
            continue
        if entry.kind == "index":
            for path in _planted_gitlink_configs(entry):
                target, error = _move_aside(path)
                done = f"moved {path} to {target}" if target else f"removed {path} ({error})"
                lines.append(f"{done}: {entry.why}")
            continue
        if entry.kind == "glob":
            for path in _new_matches(entry):
                target, error = _move_aside(path)
                done = f"moved {path} to {target}" if target else f"removed {path} ({error})"
                lines.append(f"{done}: the command made it; {entry.why}")
            continue
        target, error = _move_aside(entry.path)
        if target is None:
            lines.append(f"removed {entry.path} the command created ({error}); {entry.why}")
            continue
        lines.append(f"moved {entry.path} the command created to {target}: {entry.why}")
    return lines


def _restore_link(entry: PlanEntry) -> str:
    moved = ""
    if os.path.lexists(entry.path):
        target, error = _move_aside(entry.path)
        moved = f"; what stood there moved to {target}" if target else f" (removed: {error})"
    try:
        os.symlink(entry.link, entry.path)
    except OSError as error:
        return f"could not put back the symlink {entry.path} -> {entry.link}{moved}: {error}"
    link = f"{entry.path} -> {entry.link}"
    return f"put back the symlink {link} the command replaced{moved}: {entry.why}"


def shell_test(
    tripwires: Sequence[PlanEntry],
    *,
    unchanged: str | None = None,
    watched: str | None = None,
    index: str | None = None,
) -> str | None:
    """A bash condition true when any tripwire sprung, or None: builtins, and askgate's
    static `unchanged` (unchanged.py) on `watched` (the change times of the watched
    directories and the glob tripwires' directories) and on `index` (the project
    index's). Change times, not `[ -nt ]`: a command can set a modification time back
    (`touch -d`), never a change time. Without `unchanged` (not built here) those parts
    always start the tail step."""
    import shlex

    tests: list[str] = []
    plain: list[str] = []

    def changed_since(listing: str | None) -> str:
        if unchanged is None or listing is None:
            return "true"
        return f"! {shlex.quote(unchanged)} {shlex.quote(listing)}"

    for entry in tripwires:
        path = shlex.quote(entry.path)
        if entry.kind == "glob":
            continue  # its directory is in `watched`
        if entry.kind == "index":  # the index changed (or appeared) since the plan
            tests.append(_has_gitlinks(changed_since(index), entry.named, entry.path))
        elif entry.link and os.path.exists(entry.path):  # no longer a link to the same file
            target = shlex.quote(os.path.join(os.path.dirname(entry.path), entry.link))
            tests.append(f"! {{ [ -L {path} ] && [ {path} -ef {target} ]; }}")
        elif entry.link:  # a dangling link: no longer one (re-pointed at a file, replaced)
            tests.append(f"! {{ [ -L {path} ] && ! [ -e {path} ]; }}")
        else:
            plain.append(f"-e {path} -o -L {path}")
    if watched is not None:
        tests.insert(0, changed_since(watched))
    if plain:
        # One `[` for every plain name (each is absolute, so no operand reads as an
        # operator): half the wrapper's tail cost of a `[ ] || [ ]` chain.
        tests.insert(0, f"[ {' -o '.join(plain)} ]")
    return " || ".join(tests) if tests else None


def _has_gitlinks(changed: str, worktree: str, index_path: str) -> str:
    """The index test: changed since the plan, and (one `git ls-files`, by its absolute
    path: never a `git` the command could have put on PATH) holding a gitlink — so a
    `git add` in a repository without submodules does not start the tail step."""
    import shlex
    import shutil

    from askgate.sandbox.gitconfig import GIT_PATH

    git = shutil.which("git", path=GIT_PATH)
    if git is None:
        return changed
    listing = (
        f"{shlex.quote(git)} -C {shlex.quote(worktree)} -c core.fsmonitor=false "
        "ls-files --stage 2>/dev/null"
    )
    # A listing that fails (an index the command broke) starts the tail too, which then
    # treats every repository in the project as a possible gitlink.
    # An index that is not a regular file (a FIFO would hang git; a symlink names
    # another index) starts the tail without a listing.
    index = shlex.quote(index_path)
    return (
        f"{{ {changed} && {{ ! [ -f {index} ] || [ -L {index} ] || "
        f"! askgate_index=$({listing}) || "
        f"[[ $'\\n'\"$askgate_index\" == *$'\\n160000 '* ]]; }}; }}"
    )


def _process_start(pid: int) -> str | None:
    return process_start(pid, zombie_is_gone=True)


def arm(
    state_dir: str,
    tripwires: Sequence[PlanEntry],
    watch: TreeWatch | None = None,
    recorded: bytes = b"",
) -> str | None:
    """Record this process's tripwires (and watched directories) before its sandbox
    starts; the record's path (to pass to `unarm`), or None when there is nothing to
    watch. Raises OSError when the record cannot be written (the caller refuses: an
    unrecorded tripwire could outlive a kill)."""
    if not tripwires and watch is None:
        return None
    me = os.getpid()
    directory = os.path.join(state_dir, ARMED)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    record = Armed(
        pid=me,
        start=_process_start(me) or "",
        started=time.time(),
        tripwires=tuple(tripwires),
        watch=watch,
        recorded=recorded,
    )
    path = os.path.join(directory, f"{me}-{record.start}.json")
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as handle:
        handle.write(msgspec.json.encode(record))
    os.replace(temporary, path)
    return path


def unarm(path: str | None) -> None:
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


def sweep_armed(state_dir: str) -> list[str]:
    """Disarm the tripwires of every `askgate sandbox` run that died before it could (its
    process is gone, so is its sandbox): what was made at them since the run was armed
    is moved aside. One line for each."""
    directory = os.path.join(state_dir, ARMED)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    lines: list[str] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, "rb") as handle:
                record = msgspec.json.decode(handle.read(), type=Armed)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            if name.endswith(".tmp") and _process_start(_pid_of(name)) is not None:
                continue  # being written by a live run
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        if record.start and _process_start(record.pid) == record.start:
            continue  # still running: it disarms its own
        # A link is put back if replaced; a glob's matches are checked against its time.
        made = [e for e in record.tripwires if e.link or e.kind in ("glob", "index")]
        for entry in record.tripwires:
            if entry in made:
                continue
            with contextlib.suppress(OSError):
                if os.lstat(entry.path).st_ctime >= record.started - CLOCK_SLACK_S:
                    made.append(entry)
        lines += disarm(made)
        from askgate.sandbox.treewatch import disarm_watch

        lines += disarm_watch(record.watch, record.recorded, record.started)
        unarm(path)
    return lines


def _pid_of(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else 0


# --- glob tripwires: directories a program scans when it starts ---------------------------

_PYTHON = re.compile(r"python3\.\d+")
# Modules python imports from the user site directory at every start (site.py).
STARTUP_MODULES = frozenset({"usercustomize.py", "sitecustomize.py"})
_EXECUTABLE_DIRS = ("/usr/bin", "/usr/local/bin", "/bin")
_VERSIONS: dict[tuple[str, int], set[str]] = {}


def user_site_directories(env: Mapping[str, str]) -> list[str]:
    """`~/.local/lib/python3.N/site-packages` (or under `$PYTHONUSERBASE`) for every
    python3.N installed in the system directories or with a user lib directory already:
    each python of this user runs the `.pth` files there at start, existing or not."""
    base = env.get("PYTHONUSERBASE") or os.path.join(env.get("HOME", ""), ".local")
    if not base.startswith("/"):
        return []
    versions: set[str] = set()
    for directory in (*_EXECUTABLE_DIRS, os.path.join(base, "lib")):
        try:
            info = os.stat(directory)
        except OSError:
            continue
        # Remembered only for a directory no command can change (root's, not writable by
        # others): the user's own lib directory is listed every time (its mtime can be
        # set back).
        fixed = info.st_uid == 0 and not info.st_mode & 0o022 and os.getuid() != 0
        key = (directory, info.st_mtime_ns)
        names = _VERSIONS.get(key) if fixed else None
        if names is None:
            with contextlib.suppress(OSError):
                names = {name for name in os.listdir(directory) if _PYTHON.fullmatch(name)}
            _VERSIONS[key] = names = names or set()
        versions |= names
    # Every python3.N a user could run, installed where we look or not (pyenv, uv, conda
    # keep theirs elsewhere): a directory that does not exist costs nothing to watch.
    versions |= {f"python3.{minor}" for minor in range(6, 21)}
    return [os.path.join(base, "lib", version, "site-packages") for version in sorted(versions)]


def startup_globs(
    sources: Sequence[_Source],
    roots: Sequence[str],
    env: Mapping[str, str],
    blocked: Callable[[Surface, str], bool],
) -> list[PlanEntry]:
    """Glob tripwires for the anywhere-patterns with a name glob (`**/*.pth`) in the
    directories a program scans at start (the user site directories): a match made there
    while the command runs — where no mask can be placed for a name not known yet — is
    moved aside after it, before any python outside starts. The prepared wrapper checks
    the deepest existing directory on the way (`named`) for a change, with a builtin."""
    globs = [
        source
        for source in sources
        if source.pattern.startswith("**/")
        and "/" not in source.pattern[3:]
        and (set(source.pattern[3:]) & set("*?") or source.pattern[3:] in STARTUP_MODULES)
    ]
    if not globs:
        return []
    now = time.time()
    entries: list[PlanEntry] = []
    for directory in user_site_directories(env):
        real = os.path.realpath(directory)
        if not any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots):
            continue  # read-only inside: nothing can appear there
        watched = real
        while not os.path.isdir(watched) and watched != "/":
            watched = os.path.dirname(watched)
        for source in globs:
            probe = os.path.join(real, source.pattern[3:].replace("*", "x").replace("?", "x"))
            if source.rule and not blocked(Surface.WRITE, probe):
                continue
            why = f"{source.why} (python runs what appears here at every start)"
            entries.append(
                PlanEntry(
                    path=real,
                    named=watched,
                    kind="glob",
                    why=why,
                    pattern=source.pattern,
                    since=now,
                )
            )
    return entries


# --- gitlinks: the index names a repository git outside recurses into ---------------------


def index_tripwire(git_dir: str, worktree: str, roots: Sequence[str]) -> PlanEntry | None:
    """The project's index (writable for ordinary work): after a run that changed it, a
    gitlink to a repository whose configuration runs programs (`core.fsmonitor`, which a
    `git status` outside runs when it recurses into the gitlink) gets that configuration
    moved aside — when the configuration changed during the run, or lies outside the
    project's `.git/modules` (where a submodule's own configuration lives)."""
    if not any(git_dir == root or git_dir.startswith(root.rstrip("/") + "/") for root in roots):
        return None  # read-only inside: nothing can be staged
    why = (
        "git: a gitlink in the index names a repository whose configuration runs programs "
        "(git status outside would run them)"
    )
    return PlanEntry(
        path=os.path.join(git_dir, "index"),
        named=worktree,
        kind="index",
        why=why,
        since=time.time(),
        roots=tuple(os.path.realpath(root) for root in roots),
    )


def _planted_gitlink_configs(entry: PlanEntry) -> list[str]:
    """The configurations, reached through the index's gitlinks as git reaches them, that
    run programs and that the command could have planted: changed during the run, or
    inside the project but outside `.git/modules` (where a submodule's own lives). A
    file outside the project that did not change is never touched: the command could
    not have written it (a `gitdir:` may name any directory)."""
    from askgate.sandbox.gitconfig import gitlinks, runs_programs

    since = entry.since - CLOCK_SLACK_S
    try:
        # lstat and ctime: a command can set the index's mtime back (`touch -d`), or put
        # a symlink to an index from an earlier run in its place; neither hides this.
        info = os.lstat(entry.path)
    except OSError:
        return []
    regular = stat.S_ISREG(info.st_mode)
    if regular and info.st_ctime < since:
        return []  # the index did not change during the run
    worktree = entry.named
    project = os.path.realpath(worktree)
    modules = os.path.realpath(os.path.join(os.path.dirname(entry.path), "modules"))
    env = outside_env()
    found: list[str] = []
    # A FIFO or a link in the index's place is not listed (it could hang git, or show
    # another index): every repository in the project counts, as when git fails.
    listed = gitlinks(worktree, env) if regular else None
    if listed is None:
        listed = _repositories_below(worktree)
    for relative in listed:
        for config in _configs_git_reads(os.path.join(worktree, relative, ".git")):
            try:
                changed = os.lstat(config).st_ctime >= since
            except OSError:
                continue
            inside = config.startswith(project + "/")
            in_modules = config.startswith(modules + "/")
            writable = any(config.startswith(root.rstrip("/") + "/") for root in entry.roots)
            if not writable or not (changed or (inside and not in_modules)):
                continue  # read-only inside: the command cannot have written it
            if runs_programs(config, env):
                found.append(config)
    return found


def _configs_git_reads(dot_git: str) -> list[str]:
    """The configuration files git reads for a repository whose `.git` is `dot_git` (a
    directory, a symlink to one, or a `gitdir:` file), as git resolves them: its own
    `config` and `config.worktree`, and the `config` of the directory its `commondir`
    names. Symlinks resolved."""
    from askgate.sandbox.planentry import gitdir_of_link

    if os.path.isdir(dot_git):  # a symlink to a directory too: git follows it
        git_dir: str | None = dot_git
    else:
        git_dir = gitdir_of_link(dot_git)
    if git_dir is None:
        return []
    git_dir = os.path.realpath(git_dir)
    found = [os.path.join(git_dir, "config"), os.path.join(git_dir, "config.worktree")]
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as handle:
            common = handle.read(4096).decode("utf-8", "surrogateescape").strip()
    except OSError:
        common = ""
    if common:
        found.append(os.path.join(os.path.realpath(os.path.join(git_dir, common)), "config"))
    return list(dict.fromkeys(found))


def _repositories_below(worktree: str) -> list[str]:
    """Every nested repository (a `.git` directory or file) below the worktree, relative
    to it: what a gitlink could name when the index cannot be listed."""
    from askgate.sandbox.expand import expand

    found = expand("**/.git", [worktree], max_visited=1_000_000, deadline=time.monotonic() + 30)
    top = os.path.join(worktree, ".git")
    return [os.path.relpath(os.path.dirname(p), worktree) for p in found.paths if p != top]

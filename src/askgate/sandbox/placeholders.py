"""Placeholders for protected paths that do not exist yet, shared safely between sandboxes.

A mount needs something to mount on: for a protected path that does not exist yet
(`.git/hooks`, `.askgate/`, a write-denied directory, a hidden `~/.aws`) askgate creates
an empty directory (or file; `{}` for an agent's JSON settings) at its first missing
component and binds it read-only (or masks it), so nothing can be created there.
Placeholders are removed after the command — but never while another sandbox still uses
one: removing a mount point on the host detaches that sandbox's mount and its protection
with it. So every run records the placeholders it uses in a registry, under an exclusive
lock, in askgate's own data directory (hidden inside every sandbox, so a sandboxed
command can neither read nor forge records, plans or the files below):

    $XDG_DATA_HOME/askgate/sandbox/lock          flock(2) held while the registry changes
    $XDG_DATA_HOME/askgate/sandbox/runs/PID-START.json   placeholders one live run uses
    $XDG_DATA_HOME/askgate/sandbox/empty-ro      the empty read-only file bound over hidden files
    $XDG_DATA_HOME/askgate/sandbox/seccomp-ARCH.bpf      the seccomp filter (`seccomp.py`)
    $XDG_DATA_HOME/askgate/sandbox/scope-exec-HASH       the Landlock scope helper (`scope_exec.py`)
    $XDG_DATA_HOME/askgate/sandbox/tee-HASH              the wrapper's static tee (`static_tee.py`)

A record whose process is gone (PID and start time no longer match) is stale: its
placeholders are removed once no live run uses them. A placeholder is removed only if it
is still the same inode and still empty.

A hook that emits a prepared wrapper (`prepared.py`) records its run as a directory
instead, since no askgate process lives while the command runs:

    runs/w-ID/record     the placeholders the run uses (written by the hook)
    runs/w-ID/status     created exclusively by whoever claims the run: the wrapper just
                         before bwrap (which then appends its --json-status-fd documents:
                         `"child-pid"` once the sandbox exists, `"exit-code"` once the
                         command ran), or a sweep revoking a run that never started
    runs/w-ID/stderr     the command's stderr (tee), read only after a failure
    runs/w-ID/plan.json  the plan, for the one-line explanation after a failure

A prepared run is over when it succeeded (`"exit-code": 0`), when its sandbox process
(`"child-pid"`) is gone, when a sweep claimed it unstarted (older than `UNSTARTED_S`; the
wrapper's own claim then fails and it runs the command the long way), or when it is
older than `STALE_S` without a sandbox. A failed run is cleaned up by its own tail step,
or by a sweep after `FINISHED_S`. Every askgate process that touches the registry sweeps
the runs that are over and removes the placeholders no live run uses.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

import msgspec

from askgate.sandbox.plan import HELD, JSON_PLACEHOLDER, PlanEntry
from askgate.sandbox.procstat import process_start


class SandboxSetupError(Exception):
    """The sandbox cannot be prepared; the message is one line."""


class Placeholder(msgspec.Struct, frozen=True):
    path: str
    is_dir: bool
    device: int
    inode: int
    held: str = ""  # a redirect placeholder: `path` is a symlink to this (plan.py)


class _Record(msgspec.Struct):
    pid: int
    start: str
    placeholders: list[Placeholder]


class _RunRecord(msgspec.Struct):
    placeholders: list[Placeholder]


RUN_PREFIX = "w-"
UNSTARTED_S = 120.0  # a prepared wrapper not run yet (a late one runs the long way)
FINISHED_S = 30.0  # a failed run whose own tail step (a Python start) did not clean it
STALE_S = 3600.0  # claimed, but bwrap never reported a sandbox (killed before it)
REVOKED = b"revoked by a sweep before it started\n"


class PreparedRun(msgspec.Struct, frozen=True):
    """The files of one hook-prepared run (all absolute, in the state directory)."""

    directory: str

    @property
    def record(self) -> str:
        return os.path.join(self.directory, "record")

    @property
    def status(self) -> str:
        return os.path.join(self.directory, "status")

    @property
    def stderr(self) -> str:
        return os.path.join(self.directory, "stderr")

    @property
    def plan(self) -> str:
        return os.path.join(self.directory, "plan.json")

    @property
    def watched(self) -> str:
        """The watched directories' change times (treewatch.py), for `unchanged`."""
        return os.path.join(self.directory, "watched")

    @property
    def index(self) -> str:
        """The project index's change time, the same way (tripwires.index_tripwire)."""
        return os.path.join(self.directory, "index")


def _status_field(status_text: bytes, field: str) -> int | None:
    for line in status_text.splitlines():
        with contextlib.suppress(msgspec.DecodeError):
            document = msgspec.json.decode(line)
            if isinstance(document, dict) and isinstance(document.get(field), int):
                return int(document[field])
    return None


def exit_code_of(status_text: bytes) -> int | None:
    """The command's exit code from bwrap's JSON status documents (None: it never ran)."""
    return _status_field(status_text, "exit-code")


def _age(path: str, now: float) -> float:
    try:
        return now - os.stat(path).st_mtime
    except OSError:
        return float("inf")


def _claim(run: PreparedRun) -> bool:
    """Create the status file exclusively, as the wrapper's `set -C` redirection does."""
    try:
        fd = os.open(run.status, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return False
    except OSError:
        return True  # the directory is gone or unusable: no wrapper can claim it either
    with contextlib.suppress(OSError):
        os.write(fd, REVOKED)
    os.close(fd)
    return True


def run_is_over(run: PreparedRun, now: float) -> bool:
    """Can this run's placeholders go? Claims it when it never started and is old enough."""
    try:
        with open(run.status, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        return _age(run.record, now) >= UNSTARTED_S and _claim(run)
    except OSError:
        return False
    code = exit_code_of(text)
    if code == 0 or text == REVOKED:
        return True
    if code is not None:
        return _age(run.status, now) > FINISHED_S  # its tail step may be reading it
    pid = _status_field(text, "child-pid")
    # The wrapper's own shell: while it lives, its tail step may come; once it is gone
    # (killed with its process group by an agent's timeout) nothing of the run is left.
    wrapper = _status_field(text, "wrapper-pid")
    wrapper_gone = wrapper is not None and not _alive(wrapper)
    if pid is None:  # between the claim and bwrap's clone
        return wrapper_gone or _age(run.status, now) > STALE_S
    # The sandbox's first process: while it lives, its mounts do. (A reused PID only
    # keeps the placeholders longer.) Fresh: a failed setup whose tail step is coming.
    if _alive(pid):
        return False
    return wrapper_gone or _age(run.status, now) > FINISHED_S


def _alive(pid: int) -> bool:
    """Does process `pid` exist and not only as a zombie (an exited sandbox whose parent
    died is reparented and may stay a zombie a while: its mounts are gone already)?"""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def _disarm_interrupted(run: PreparedRun) -> None:
    """The tripwires of a prepared run whose tail step never ran (the agent's timeout or
    Ctrl-C killed the wrapper's process group; an OOM kill): what the command made at
    them is moved aside now, by the sweep of the next askgate process. Only what was
    made while the run lasted: before bwrap's final status when there is one (a run that
    exited but whose wrapper died before its own `[ -e NAME ]` check), else after bwrap
    started (a run killed mid-way: its processes are gone, since the run is over)."""
    from askgate.sandbox.tripwires import disarm

    try:
        with open(run.status, "rb") as handle:
            text = handle.read()
        started = os.stat(run.status).st_mtime
        with open(run.plan, "rb") as handle:
            plan = msgspec.json.decode(handle.read())
    except (OSError, msgspec.DecodeError):
        return  # never claimed, or no plan: nothing of the command's can be there
    if text == REVOKED or not isinstance(plan, dict):
        return
    finished = exit_code_of(text) is not None
    entries = []
    for item in plan.get("tripwires") or ():
        with contextlib.suppress(msgspec.ValidationError, TypeError):
            entries.append(msgspec.convert(item, type=PlanEntry))
    made = []
    for entry in entries:
        if entry.link or entry.kind in ("glob", "index"):  # checked by their own rules
            made.append(entry)
            continue
        try:
            changed = os.lstat(entry.path).st_ctime
        except OSError:
            continue
        if (changed <= started) if finished else (changed >= started - 1.0):
            made.append(entry)
    disarm(made)
    from askgate.sandbox.treewatch import disarm_watch, read_snapshot, watch_of

    watch = watch_of(plan.get("watch"))
    if watch is not None:
        recorded, since = read_snapshot(run.watched)
        disarm_watch(watch, recorded, since, started if finished else None)


def state_directory(env: Mapping[str, str]) -> str:
    from askgate.policy.trust import trust_store_path

    return os.path.join(os.path.dirname(trust_store_path(env)), "sandbox")


def _process_start(pid: int) -> str | None:
    return process_start(pid)


class Registry:
    """The lock, the run records and the shared empty file under one state directory."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.runs = os.path.join(directory, "runs")
        self.empty_file = os.path.join(directory, "empty-ro")
        self.held = os.path.join(directory, HELD)  # plan.holding_directory
        try:
            os.makedirs(self.runs, mode=0o700, exist_ok=True)
        except OSError as error:
            raise SandboxSetupError(f"cannot create {self.runs}: {error.strerror}") from None
        me = os.getpid()
        self.record_path = os.path.join(self.runs, f"{me}-{_process_start(me)}.json")
        self.mine: list[Placeholder] = []

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        try:
            fd = os.open(os.path.join(self.directory, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as error:
            raise SandboxSetupError(f"cannot open the sandbox lock: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def ensure_empty_file(self) -> str:
        """The empty read-only file masks bind over hidden files (re-made if tampered): a
        hidden file reads as empty, so `grep -r` and `git status` go on past it."""
        try:
            info = os.lstat(self.empty_file)
            if stat.S_ISREG(info.st_mode) and info.st_size == 0 and info.st_mode & 0o777 == 0o444:
                return self.empty_file
            os.unlink(self.empty_file)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise SandboxSetupError(f"cannot check {self.empty_file}: {error.strerror}") from None
        try:
            fd = os.open(self.empty_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0)
            os.fchmod(fd, 0o444)
            os.close(fd)
        except OSError as error:
            raise SandboxSetupError(f"cannot create {self.empty_file}: {error.strerror}") from None
        return self.empty_file

    def ensure_seccomp_file(self) -> str | None:
        """The seccomp filter for this architecture as a file bwrap reads through a
        descriptor (None: no filter is built here). Re-made when its bytes differ."""
        from askgate.sandbox.seccomp import program

        code = program()
        if code is None:
            return None
        import hashlib

        path = os.path.join(self.directory, f"seccomp-{hashlib.sha256(code).hexdigest()[:16]}.bpf")
        try:
            with open(path, "rb") as handle:
                if handle.read() == code:
                    return path
        except OSError:
            pass
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            with open(temporary, "wb") as handle:
                handle.write(code)
            os.replace(temporary, path)
        except OSError as error:
            raise SandboxSetupError(f"cannot write {path}: {error.strerror}") from None
        return path

    def ensure_scope_helper(self) -> str | None:
        """The Landlock scope helper (`scope_exec.py`) as an executable in the registry's
        directory, or None where none is built or it does not run here (a noexec mount,
        a kernel without Landlock ABI 6)."""
        import subprocess

        from askgate.sandbox.scope_exec import program

        def works(path: str) -> bool:
            done = subprocess.run([path, "/bin/true"], capture_output=True, timeout=10)
            return done.returncode == 0

        return self._ensure_program("scope-exec", program(), works)

    def ensure_static_tee(self) -> str | None:
        """The static tee (`static_tee.py`) as an executable, or None (not built here, or
        it does not run): the wrapper then uses coreutils' tee."""
        import subprocess

        from askgate.sandbox.static_tee import program

        def works(path: str) -> bool:
            copy = f"{path}.probe.{os.getpid()}"
            try:
                done = subprocess.run(
                    [path, copy], input=b"probe\0", capture_output=True, timeout=10
                )
                with open(copy, "rb") as handle:
                    return done.returncode == 0 and done.stdout == handle.read() == b"probe\0"
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(copy)

        return self._ensure_program("tee", program(), works)

    def ensure_unchanged_check(self) -> str | None:
        """The ctime check (`unchanged.py`: `unchanged LISTFILE`, exit 0 iff no listed
        path changed) as an executable, or None (not built here, or it does not run)."""
        import struct
        import subprocess
        import tempfile

        from askgate.sandbox.unchanged import program, snapshot

        def works(path: str) -> bool:
            # Exits that do not hang on the clock's tick: an exact record, a path that
            # appeared, a ctime one nanosecond off.
            probe = tempfile.mkdtemp(prefix=".unchanged-probe.", dir=self.directory)
            try:
                watched, appears = os.path.join(probe, "watched"), os.path.join(probe, "new")
                os.mkdir(watched)
                exact = snapshot([watched, appears], recent_ns=0)
                ctime_ns = os.lstat(watched).st_ctime_ns + 1
                off = struct.pack("<qq", *divmod(ctime_ns, 10**9)) + exact[16:]  # 1st record
                statuses = []
                for data, make in ((exact, False), (off, False), (exact, True)):
                    if make:
                        with open(appears, "wb"):
                            pass
                    listed = os.path.join(probe, "list")
                    with open(listed, "wb") as handle:
                        handle.write(data)
                    done = subprocess.run([path, listed], capture_output=True, timeout=10)
                    statuses.append(done.returncode)
                return statuses == [0, 1, 1]
            finally:
                shutil.rmtree(probe, ignore_errors=True)

        return self._ensure_program("unchanged", program(), works)

    def _ensure_program(
        self, name: str, code: bytes | None, works: Callable[[str], bool]
    ) -> str | None:
        """A static program of askgate's own (machine code built in Python) as
        `NAME-HASH` (mode 0500) in the registry's directory, hidden inside every sandbox;
        run once through `works` when (re)made, remembered by `NAME-HASH.works`."""
        import hashlib
        import subprocess

        if code is None:
            return None
        path = os.path.join(self.directory, f"{name}-{hashlib.sha256(code).hexdigest()[:16]}")
        marker = f"{path}.works"
        try:
            with open(path, "rb") as handle:
                same = handle.read() == code
            if same and os.stat(path).st_mode & 0o777 == 0o500 and os.path.exists(marker):
                return path
        except OSError:
            pass
        temporary = f"{path}.{os.getpid()}.tmp"
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(code)
            os.chmod(temporary, 0o500)
            os.replace(temporary, path)
            if not works(path):
                return None
            with open(marker, "w"):
                pass
        except (OSError, subprocess.SubprocessError):
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return None
        return path

    def _records(self) -> dict[str, _Record]:
        found: dict[str, _Record] = {}
        for name in os.listdir(self.runs):
            if name.startswith(RUN_PREFIX):
                continue  # a prepared run (a directory): `_prepared_runs`
            path = os.path.join(self.runs, name)
            try:
                with open(path, "rb") as handle:
                    found[path] = msgspec.json.decode(handle.read(), type=_Record)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                with contextlib.suppress(OSError):
                    os.unlink(path)
        return found

    def _live_uses(self, *, exclude: str | None = None) -> set[tuple[str, int, int]]:
        """Placeholders used by live runs; stale records are dropped (and their
        placeholders removed when no live run needs them)."""
        live: set[tuple[str, int, int]] = set()
        stale: list[tuple[str, _Record]] = []
        for path, record in self._records().items():
            if path == exclude:
                continue
            if _process_start(record.pid) == record.start:
                live |= {(p.path, p.device, p.inode) for p in record.placeholders}
            else:
                stale.append((path, record))
        stale_runs: list[tuple[str, list[Placeholder]]] = []
        for directory, placeholders, alive in self._prepared_runs(exclude=exclude):
            if alive:
                live |= {(p.path, p.device, p.inode) for p in placeholders}
            else:
                stale_runs.append((directory, placeholders))
        for path, record in stale:
            _remove_unused(record.placeholders, live)
            with contextlib.suppress(OSError):
                os.unlink(path)
        for directory, placeholders in stale_runs:
            _disarm_interrupted(PreparedRun(directory))  # before anything else goes
            _remove_unused(placeholders, live)
            shutil.rmtree(directory, ignore_errors=True)
        return live

    def _prepared_runs(self, *, exclude: str | None) -> list[tuple[str, list[Placeholder], bool]]:
        """(directory, placeholders, alive) of each prepared run."""
        now = time.time()
        found: list[tuple[str, list[Placeholder], bool]] = []
        for name in os.listdir(self.runs):
            directory = os.path.join(self.runs, name)
            if not name.startswith(RUN_PREFIX) or directory == exclude:
                continue
            run = PreparedRun(directory)
            placeholders = _record_placeholders(run)
            found.append((directory, placeholders, not run_is_over(run, now)))
        return found

    def prepare_run(self, holes: Sequence[PlanEntry]) -> PreparedRun:
        """A new run directory whose ticket records the placeholders its holes need (made
        or shared now). The caller writes the plan; the wrapper does the rest."""
        with self.locked():
            live = self._live_uses()
            by_path = {path: (device, inode) for path, device, inode in live}
            import secrets  # only here: a hook preparing a run needs it, the CLI does not

            run = PreparedRun(os.path.join(self.runs, RUN_PREFIX + secrets.token_hex(8)))
            try:
                os.mkdir(run.directory, 0o700)
            except OSError as error:
                why = error.strerror
                raise SandboxSetupError(f"cannot create {run.directory}: {why}") from None
            made: list[Placeholder] = []
            try:
                for hole in holes:
                    if hole.placeholder is None or any(p.path == hole.placeholder for p in made):
                        continue
                    made.append(_make_or_share(hole, by_path, made, self.held))
                temporary = run.record + ".tmp"
                with open(temporary, "wb") as handle:
                    handle.write(msgspec.json.encode(_RunRecord(made)))
                os.replace(temporary, run.record)
            except (SandboxSetupError, OSError) as error:
                _remove_unused(made, live)
                shutil.rmtree(run.directory, ignore_errors=True)
                if isinstance(error, SandboxSetupError):
                    raise
                raise SandboxSetupError(f"cannot record placeholders: {error.strerror}") from None
            return run

    def finish_run(self, run: PreparedRun) -> None:
        """Clean up a run whose bwrap has exited (its own tail step), or that was never
        handed out: remove its placeholders nobody else uses, and the run."""
        with self.locked():
            placeholders = _record_placeholders(run)
            _claim(run)  # one that was never handed out cannot start any more
            live = self._live_uses(exclude=run.directory)
            _remove_unused(placeholders, live)
            shutil.rmtree(run.directory, ignore_errors=True)

    def sweep(self) -> None:
        """Clean up after every run that is over (`askgate sandbox --cleanup`)."""
        from askgate.sandbox.tripwires import sweep_armed

        with self.locked():
            sweep_armed(self.directory)  # an `askgate sandbox` killed before its own
            self._live_uses()

    def acquire(self, holes: Sequence[PlanEntry]) -> None:
        """Create (or share) the placeholder of every missing hole and record them."""
        with self.locked():
            live = self._live_uses(exclude=self.record_path)
            by_path = {path: (device, inode) for path, device, inode in live}
            for hole in holes:
                if hole.placeholder is None or any(p.path == hole.placeholder for p in self.mine):
                    continue
                self.mine.append(_make_or_share(hole, by_path, self.mine, self.held))
            self._write_record()

    def release(self) -> None:
        """Drop this run's record; remove its placeholders no other live run uses."""
        with self.locked():
            with contextlib.suppress(OSError):
                os.unlink(self.record_path)
            live = self._live_uses(exclude=self.record_path)
            _remove_unused(self.mine, live)
            self.mine = []

    def _write_record(self) -> None:
        me = os.getpid()
        record = _Record(pid=me, start=_process_start(me) or "", placeholders=self.mine)
        temporary = self.record_path + ".tmp"
        try:
            with open(temporary, "wb") as handle:
                handle.write(msgspec.json.encode(record))
            os.replace(temporary, self.record_path)
        except OSError as error:
            raise SandboxSetupError(f"cannot record placeholders: {error.strerror}") from None


def _record_placeholders(run: PreparedRun) -> list[Placeholder]:
    try:
        with open(run.record, "rb") as handle:
            return msgspec.json.decode(handle.read(), type=_RunRecord).placeholders
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return []  # never completed: nothing of its own to keep


def _make_parents(directory: str, known: Mapping[str, tuple[int, int]]) -> list[Placeholder]:
    missing: list[str] = []
    while not os.path.lexists(directory) and directory != "/":
        missing.append(directory)
        directory = os.path.dirname(directory)
    made: list[Placeholder] = []
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
            info = os.lstat(path)
        except OSError as error:
            raise SandboxSetupError(f"cannot create {path}: {error.strerror}") from None
        made.append(Placeholder(path, True, info.st_dev, info.st_ino))
    return made


def _make_or_share(
    hole: PlanEntry,
    known: Mapping[str, tuple[int, int]],
    made: list[Placeholder],
    held_dir: str | None = None,
) -> Placeholder:
    path = hole.placeholder
    assert path is not None
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise SandboxSetupError(f"cannot check {path}: {error.strerror}") from None
    if info is not None:
        identity = known.get(path)
        if identity == (info.st_dev, info.st_ino):
            held = _shared_held(path, info, held_dir)
            is_dir = os.path.isdir(held) if held else stat.S_ISDIR(info.st_mode)
            return Placeholder(path, is_dir, info.st_dev, info.st_ino, held=held)
        raise SandboxSetupError(f"{path} appeared while the sandbox was being prepared")
    # A directory for an intermediate component or a whole tree; a file for a leaf file
    # (`{}` for JSON: an agent reading its settings meanwhile must be able to parse it).
    as_dir = path != hole.path or hole.pattern.endswith("/**")
    if hole.redirect:
        if held_dir is None:
            raise SandboxSetupError(f"no holding directory for the placeholder {path}")
        return _make_redirect(path, as_dir, held_dir)
    parent = os.path.dirname(path)
    if not os.path.lexists(parent):
        # Another run's placeholder the plan stood on was swept meanwhile: stand on our
        # own instead (recorded, and removed when empty, like every placeholder).
        made.extend(_make_parents(parent, known))
    try:
        if as_dir:
            os.mkdir(path, 0o700)
        else:
            # Writable by the user *outside* (the mount keeps it read-only inside): a
            # tool that writes its settings or credentials meanwhile must not fail.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                if path.endswith(".json"):
                    os.write(fd, JSON_PLACEHOLDER)
            finally:
                os.close(fd)
        info = os.lstat(path)
    except OSError as error:
        raise SandboxSetupError(f"cannot create the placeholder {path}: {error.strerror}") from None
    return Placeholder(path, as_dir, info.st_dev, info.st_ino)


def _make_redirect(path: str, as_dir: bool, held_dir: str) -> Placeholder:
    """A redirect placeholder: `path` (in a directory the sandbox cannot write) becomes a
    symlink to a fresh directory or empty file in the holding directory, which every
    sandbox hides. What the user makes there meanwhile (`aws configure` writes
    ~/.aws/credentials) lands in the holding directory: hidden inside, without a mount.
    Put back where it was made once no live run uses the placeholder."""
    import secrets

    name = f"{secrets.token_hex(6)}-{os.path.basename(path)}"
    held = os.path.join(held_dir, name)
    try:
        os.makedirs(held_dir, mode=0o700, exist_ok=True)
        if as_dir:
            os.mkdir(held, 0o700)
        else:
            os.close(os.open(held, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except OSError as error:
        raise SandboxSetupError(f"cannot create {held}: {error.strerror}") from None
    try:
        os.symlink(held, path)
        info = os.lstat(path)
    except OSError as error:
        _remove_held(held)
        raise SandboxSetupError(f"cannot create the placeholder {path}: {error.strerror}") from None
    return Placeholder(path, as_dir, info.st_dev, info.st_ino, held=held)


def _shared_held(path: str, info: os.stat_result, held_dir: str | None) -> str:
    """The holding place a live run's redirect placeholder points to ("" for a mount
    placeholder): a run that shares it puts it back as well, when it is the last."""
    if not stat.S_ISLNK(info.st_mode) or held_dir is None:
        return ""
    with contextlib.suppress(OSError):
        target = os.readlink(path)
        if os.path.dirname(target) == held_dir:
            return target
    return ""


def _empty(path: str) -> bool:
    """Missing, an empty directory or an empty file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        try:
            return not os.listdir(path)
        except OSError:
            return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _remove_held(held: str) -> None:
    with contextlib.suppress(OSError):
        if os.path.isdir(held) and not os.path.islink(held):
            os.rmdir(held)  # fails (and keeps it) if anything is inside
        elif _empty(held):
            os.unlink(held)


def _exchange(first: str, second: str) -> bool:
    """renameat2(RENAME_EXCHANGE): swap two names atomically (False where unavailable)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange)
    return bool(done == 0)


def _put_back(placeholder: Placeholder) -> None:
    """A redirect placeholder no live run uses: the symlink goes; what the user made in
    its holding place meanwhile goes where they made it (swapped in atomically)."""
    held = placeholder.held
    try:
        info = os.lstat(placeholder.path)
        ours = stat.S_ISLNK(info.st_mode) and (info.st_dev, info.st_ino) == (
            placeholder.device,
            placeholder.inode,
        )
    except OSError:
        ours = False
    if not ours:
        _remove_held(held)  # the name was replaced meanwhile: keep only what is not empty
        return
    if _empty(held):
        with contextlib.suppress(OSError):
            os.unlink(placeholder.path)
        _remove_held(held)
        if not _empty(held) and not os.path.lexists(placeholder.path):
            with contextlib.suppress(OSError):
                os.rename(held, placeholder.path)  # written through a descriptor meanwhile
        return
    if _exchange(held, placeholder.path):
        with contextlib.suppress(OSError):
            os.unlink(held)  # the symlink, now at the holding place
        return
    with contextlib.suppress(OSError):
        os.unlink(placeholder.path)
        if not os.path.lexists(placeholder.path):
            os.rename(held, placeholder.path)


def _remove_unused(placeholders: Sequence[Placeholder], live: set[tuple[str, int, int]]) -> None:
    # Deepest first: a placeholder made to stand another one on is emptied before it goes.
    for placeholder in sorted(placeholders, key=lambda p: p.path.count("/"), reverse=True):
        if (placeholder.path, placeholder.device, placeholder.inode) in live:
            continue
        if placeholder.held:
            _put_back(placeholder)
            continue
        try:
            info = os.lstat(placeholder.path)
        except OSError:
            continue
        if (info.st_dev, info.st_ino) != (placeholder.device, placeholder.inode):
            continue  # someone else's path now
        with contextlib.suppress(OSError):
            if placeholder.is_dir:
                os.rmdir(placeholder.path)  # fails (and keeps it) if anything is inside
            elif info.st_size == 0 or _still_placeholder_json(placeholder.path, info.st_size):
                os.unlink(placeholder.path)


def _still_placeholder_json(path: str, size: int) -> bool:
    if size != len(JSON_PLACEHOLDER):
        return False
    with open(path, "rb") as handle:
        return handle.read() == JSON_PLACEHOLDER


def ensure_control_plane(env: Mapping[str, str]) -> None:
    """Create askgate's state and runtime directories (0700) when missing, so the masks
    that hide them have something to stand on and a sandboxed command cannot create them
    first (a fake daemon socket in a runtime directory it made)."""
    from askgate import locations

    places = [locations.daemon_socket_dir(env)]
    with contextlib.suppress(ValueError):
        places.append(locations.state_dir(env))
    for place in places:
        with contextlib.suppress(OSError):
            os.makedirs(place, mode=0o700, exist_ok=True)

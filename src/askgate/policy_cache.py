"""The compiled-policy cache of one-shot hook processes.

A hook process without a resident daemon decides one call and exits, so reading, parsing
and merging every policy file (the user file, the project file and its trust, the managed
file, the built-in rule files and profiles: tomllib, hashlib, json and the parser's
imports) is paid again on every tool call. `load_policy` keeps the merged result in the
user's state directory and reuses it while nothing it was built from changed.

What an entry is checked against, on every load:

* the key: the cache format, askgate's version, a stamp of the policy package's code
  (path, size, mtime_ns, inode of each module), the user id, the project root and its
  real path, the agent and the `--config` files (and the cwd when one of those is
  relative);
* every environment variable the loader looked up, with its value (or its absence); a
  loader that read the whole environment ties the entry to all of it;
* every file the loader opened and every directory it listed, recorded while it ran
  (a `sys.addaudithook` hook sees each `open`, `os.listdir` and `os.scandir`): for a file,
  its lstat and stat (type, mode, owner, size, mtime_ns, ctime_ns, inode) and its exact
  bytes; for a missing file, that it is still missing; for a directory, its listing.
  Comparing the bytes makes a rewrite inside one timestamp tick visible too.

The entry must also be a regular file owned by this user, not writable by group or
others, in a directory with the same properties, that decodes as the typed structure
below. Anything else — corrupt, foreign, loosely permitted, stale, or any error at all —
means the policy is loaded from the files as if there were no cache, and the entry is
rewritten. A cache is never a reason to allow: it only ever holds what the same load
produced, and it is written only when that load had no errors.

The daemon does not use this: it keeps policies in memory and revalidates them per
request (askgate.daemon). Layout: `$XDG_STATE_HOME/askgate/policy-cache/<name>.msgpack`,
files 0600 in a 0700 directory, which askgate's built-in rules keep agents from writing.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import msgspec

from askgate import locations
from askgate.policy.model import Action, Origin, Rule
from askgate.policy.sandbox_table import SandboxSettings
from askgate.private_files import read_private, write_private

if TYPE_CHECKING:
    from askgate.policy.config import LoadedPolicy
    from askgate.policy.engine import Policy

FORMAT = 1
CACHE_DIR_NAME = "policy-cache"
# "off" turns off the one-shot hook's on-disk caches: this one and askgate.regex_cache.
ENV_SWITCH = "ASKGATE_HOOK_CACHE"
# An input larger than this is not copied into an entry: such a load is not cached.
MAX_INPUT_BYTES = 1024 * 1024
MAX_ENTRY_BYTES = 16 * 1024 * 1024
_NAMED_FROM = 5  # index in the key of the project root (see _key)

# What this process did, for tests and diagnostics: entries used, loads from the files,
# entries written.
counts = {"hit": 0, "loaded": 0, "written": 0}


class Snapshot(msgspec.Struct, frozen=True, kw_only=True):
    """The part of a `LoadedPolicy` that `Policy.from_loaded` reads, with the errors as
    their messages (which is all the policy keeps of them)."""

    rules: tuple[Rule, ...]
    builtin_rules: tuple[Rule, ...]
    project_root: str
    default: Action
    default_origin: Origin
    yolo: bool
    infrastructure_read_paths: tuple[str, ...]
    extra_directories: tuple[str, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    fatal_errors: tuple[str, ...]
    sandbox: SandboxSettings


class FileInput(msgspec.Struct, frozen=True, array_like=True):
    """A file the loader opened: None fields mean it did not exist (or was not regular,
    for `content`)."""

    path: str
    link: tuple[int, ...] | None  # lstat
    target: tuple[int, ...] | None  # stat (follows symlinks)
    content: bytes | None


class DirectoryInput(msgspec.Struct, frozen=True, array_like=True):
    path: str
    names: tuple[str, ...] | None  # sorted; None: could not be listed


class Entry(msgspec.Struct, frozen=True, kw_only=True):
    key: tuple[str, ...]
    environment: tuple[tuple[str, str | None], ...]
    whole_environment: bool
    files: tuple[FileInput, ...]
    directories: tuple[DirectoryInput, ...]
    policy: Snapshot


# --- recording what a load reads ----------------------------------------------------------


class _Recorder:
    def __init__(self) -> None:
        self.files: dict[str, None] = {}
        self.directories: dict[str, None] = {}
        self.failed = False


_RECORDING: _Recorder | None = None
_HOOK_INSTALLED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    recorder = _RECORDING
    if recorder is None:
        return
    try:
        if event == "open":
            target = recorder.files
        elif event in ("os.listdir", "os.scandir"):
            target = recorder.directories
        else:
            return
        path = args[0] if args else None
        if path is None and event != "open":
            path = "."  # os.listdir() lists the working directory
        if isinstance(path, os.PathLike):
            path = os.fspath(path)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            # A descriptor (os.fdopen of a file already recorded by its os.open, or a
            # directory listed by descriptor): nothing new to record, unless a listing.
            if event != "open":
                recorder.failed = True
            return
        target[os.path.abspath(path)] = None
    except BaseException:  # an audit hook must not fail the operation it watches
        recorder.failed = True


class _RecordingEnvironment(Mapping[str, str]):
    """The loader's environment, noting every variable looked up (and whether it
    enumerated them all)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self.read: dict[str, str | None] = {}
        self.whole = False

    def _look(self, key: str) -> str | None:
        value = self._env.get(key)
        self.read[key] = value
        return value

    def __getitem__(self, key: str) -> str:
        value = self._look(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._look(key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._look(key) is not None

    def __iter__(self) -> Iterator[str]:
        self.whole = True
        return iter(self._env)

    def __len__(self) -> int:
        self.whole = True
        return len(self._env)


# --- the inputs as they are now -----------------------------------------------------------


def _stat_tuple(result: os.stat_result) -> tuple[int, ...]:
    return (
        result.st_mode,
        result.st_uid,
        result.st_gid,
        result.st_size,
        result.st_mtime_ns,
        result.st_ctime_ns,
        result.st_dev,
        result.st_ino,
    )


def _file_now(path: str) -> FileInput:
    """Raises OSError when the file cannot be examined (which is never cached)."""
    try:
        link: tuple[int, ...] | None = _stat_tuple(os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        link = None
    try:
        target: tuple[int, ...] | None = _stat_tuple(os.stat(path))
    except (FileNotFoundError, NotADirectoryError):
        target = None
    content = None
    if target is not None and stat.S_ISREG(target[0]):
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(descriptor, "rb") as handle:
            content = handle.read(MAX_INPUT_BYTES + 1)
        if len(content) > MAX_INPUT_BYTES:
            raise OSError(f"{path}: too large to cache")
    return FileInput(path, link, target, content)


def _directory_now(path: str) -> DirectoryInput:
    try:
        return DirectoryInput(path, tuple(sorted(os.listdir(path))))
    except OSError:
        return DirectoryInput(path, None)


def _code_stamp() -> str:
    """The policy package's modules (and this one) as installed: an upgrade or an edit
    of the loader changes it, even without a new version number."""
    import askgate.policy

    parts: list[str] = []
    folders = [os.path.dirname(os.path.abspath(askgate.policy.__file__))]
    for folder in folders:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                found = entry.stat()
                parts.append(f"{entry.path}:{found.st_size}:{found.st_mtime_ns}:{found.st_ino}")
    here = os.stat(__file__)
    parts.append(f"{__file__}:{here.st_size}:{here.st_mtime_ns}:{here.st_ino}")
    return "|".join(parts)


def _key(cwd: str, config_files: Sequence[str], agent: str | None) -> tuple[str, ...]:
    from askgate.policy.paths import (
        NO_PROJECT_ROOT,
        bounded_project_root,
        find_project_root,
        home_directory,
    )

    # The root the policy is built for, as config.project_root_of finds it (never ~ or /).
    try:
        home: str | None = home_directory()
    except ValueError:
        home = None
    try:
        root = bounded_project_root(find_project_root(cwd), cwd, home)
    except ValueError:
        root = NO_PROJECT_ROOT
    relative = any(not name.startswith("/") for name in config_files)
    return (  # the parts from _NAMED_FROM on name the file (_entry_path)
        f"format {FORMAT}",
        # The package's version (looked up, not imported: `askgate` re-exports the gate,
        # which sits above this module).
        str(getattr(sys.modules.get("askgate"), "__version__", "")),
        sys.version,
        _code_stamp(),
        str(os.geteuid()),
        root,
        os.path.realpath(root),
        cwd if relative else "",
        "" if agent is None else "agent " + agent,
        *config_files,
    )


# --- the cache file -----------------------------------------------------------------------


def cache_dir(env: Mapping[str, str]) -> str:
    return os.path.join(locations.state_dir(env), CACHE_DIR_NAME)


def _entry_path(env: Mapping[str, str], key: tuple[str, ...]) -> str:
    """One file per (project root, cwd when it matters, agent, config files): FNV-1a of
    those parts of the key. A collision only means the two evict each other's entry,
    since the whole key is stored in the entry and compared."""
    digest = 0xCBF29CE484222325
    for byte in "\x00".join(key[_NAMED_FROM:]).encode("utf-8", "surrogatepass"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(cache_dir(env), f"{digest:016x}.msgpack")


def _read_entry(path: str) -> Entry | None:
    """The entry at `path` when it is ours alone (askgate.private_files) and well-formed."""
    data = read_private(path, MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        return msgspec.msgpack.decode(data, type=Entry)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _write_entry(path: str, entry: Entry) -> None:
    write_private(path, msgspec.msgpack.encode(entry))


def _still_valid(entry: Entry, key: tuple[str, ...], env: Mapping[str, str]) -> bool:
    if entry.key != key:
        return False
    if entry.whole_environment:
        if dict(entry.environment) != dict(env):
            return False
    elif any(env.get(name) != value for name, value in entry.environment):
        return False
    try:
        for file in entry.files:
            if _file_now(file.path) != file:
                return False
    except OSError:
        return False
    return all(_directory_now(d.path) == d for d in entry.directories)


# --- loading ------------------------------------------------------------------------------


def snapshot_of(loaded: LoadedPolicy) -> Snapshot:
    return Snapshot(
        rules=loaded.rules,
        builtin_rules=loaded.builtin_rules,
        project_root=loaded.project_root,
        default=loaded.default,
        default_origin=loaded.default_origin,
        yolo=loaded.yolo,
        infrastructure_read_paths=loaded.infrastructure_read_paths,
        extra_directories=loaded.extra_directories,
        errors=tuple(str(e) for e in loaded.errors),
        warnings=loaded.warnings,
        fatal_errors=tuple(str(e) for e in loaded.fatal_errors),
        sandbox=loaded.sandbox,
    )


def enabled(env: Mapping[str, str]) -> bool:
    return env.get(ENV_SWITCH, "").lower() not in ("off", "0", "no", "false")


def load_policy(
    cwd: str,
    config_files: Sequence[str],
    agent: str | None,
    env: Mapping[str, str],
) -> Policy:
    """`Policy.load(cwd, config_files=…, agent=…, env=env)`, from the cache when a valid
    entry exists. The same policy either way (tests/test_policy_cache.py)."""
    from askgate.policy.engine import Policy

    if not enabled(env):
        return Policy.load(cwd, config_files=config_files, agent=agent, env=env)
    key: tuple[str, ...] = ()
    path = ""
    try:
        key = _key(cwd, config_files, agent)
        path = _entry_path(env, key)
        entry = _read_entry(path)
        if entry is not None and _still_valid(entry, key, env):
            counts["hit"] += 1
            # Duck-typed: a Snapshot has every attribute `from_loaded` reads.
            snapshot = cast("LoadedPolicy", entry.policy)
        else:
            snapshot = None
    except Exception:  # a cache that cannot be read is no cache: the files decide
        key, path, snapshot = (), "", None
    if snapshot is not None:
        return Policy.from_loaded(snapshot, env=env)
    loaded, entry = _load_and_record(cwd, config_files, agent, env, key)
    counts["loaded"] += 1
    if entry is not None and path:
        # A failed write only means no cache this time: the policy is the one just loaded.
        with contextlib.suppress(OSError, ValueError, msgspec.EncodeError):
            _write_entry(path, entry)
            counts["written"] += 1
    return Policy.from_loaded(loaded, env=env)


def _load_and_record(
    cwd: str,
    config_files: Sequence[str],
    agent: str | None,
    env: Mapping[str, str],
    key: tuple[str, ...],
) -> tuple[LoadedPolicy, Entry | None]:
    """The policy loaded from the files, and its cache entry (None: not cacheable).

    The loader's reads cannot be seen, only which files it opened, so the inputs are
    examined after it ran and the load is repeated: the entry is kept only when the
    second load gives the same policy and the inputs examined before and after it are
    identical, i.e. the cached policy is the one those exact inputs give."""
    loaded, recorder, recording_env = _recorded_load(cwd, config_files, agent, env)
    if not key or recorder.failed or loaded.errors:
        return loaded, None
    try:
        files = tuple(_file_now(path) for path in recorder.files)
        directories = tuple(_directory_now(path) for path in recorder.directories)
        again, second, _ = _recorded_load(cwd, config_files, agent, env)
        if second.failed or again != loaded or not second.files.keys() <= recorder.files.keys():
            return loaded, None
        if tuple(_file_now(path) for path in recorder.files) != files:
            return loaded, None
        if tuple(_directory_now(path) for path in recorder.directories) != directories:
            return loaded, None
    except OSError:
        return loaded, None
    environment: tuple[tuple[str, str | None], ...]
    if recording_env.whole:
        environment = tuple(sorted(env.items()))
    else:
        environment = tuple(sorted(recording_env.read.items()))
    entry = Entry(
        key=key,
        environment=environment,
        whole_environment=recording_env.whole,
        files=files,
        directories=directories,
        policy=snapshot_of(loaded),
    )
    return loaded, entry


def _recorded_load(
    cwd: str, config_files: Sequence[str], agent: str | None, env: Mapping[str, str]
) -> tuple[LoadedPolicy, _Recorder, _RecordingEnvironment]:
    global _RECORDING, _HOOK_INSTALLED

    # Everything the loader may import, imported before recording: an import opens
    # files and lists directories that are code, not policy.
    import askgate.policy.builtin  # noqa: F401
    from askgate.policy.config import load_policy as load_files

    recorder = _Recorder()
    recording_env = _RecordingEnvironment(env)
    if not _HOOK_INSTALLED:
        sys.addaudithook(_audit)
        _HOOK_INSTALLED = True
    previous, _RECORDING = _RECORDING, recorder
    try:
        loaded = load_files(cwd, config_files=config_files, agent=agent, env=recording_env)
    finally:
        _RECORDING = previous
    # The shipped rule files and the profile catalog are read once per process and kept
    # (askgate.policy.builtin, shipped): a process that loaded before did not read them
    # now, so they are inputs whatever this load opened.
    from askgate.policy import shipped

    recorder.directories.update(dict.fromkeys((shipped.RULES_DIR, shipped.PROFILES_DIR)))
    recorder.files.update(dict.fromkeys(shipped.builtin_rule_paths()))
    return loaded, recorder, recording_env

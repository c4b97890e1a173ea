"""The Landlock fallback (no user namespaces, e.g. in a container), through ctypes.

Landlock only *adds* rights beneath directories; it cannot punch a hole in a tree it
grants. So "everything readable except `~/.ssh`" becomes read rules on every directory
beside `~/.ssh` and beside each of its ancestors — and those ancestors themselves get no
rule: files directly inside them become unreadable and nothing can be created there
("lost" directories). Whole-directory rules only: a rule on a file would attach to its
inode, and an inode shared with a hidden file (a hard link) would then be readable under
every name (sandboxes.md §4).

What that means here:

* a hidden path whose directory lies inside a writable root (`proj/.env`) cannot be
  expressed without breaking that directory: **refused**, with the reason;
* a write hole inside a writable root always makes the root itself lost (no creating
  files in the project): in `required` mode the sandbox is **refused**; otherwise the
  holes are dropped, with a warning for each;
* tripwires need no rule: the runner checks them after the command, as with bubblewrap
  (what was planted at one is moved aside), so they add no warning;
* `network = "off"` blocks TCP (Landlock ABI 4+); UDP and Unix sockets are not covered:
  refused in `required` mode, a warning otherwise;
* signals and abstract Unix sockets are scoped to the sandbox (ABI 6+), and Landlock's
  ptrace rule keeps `/proc/<parent>/root` and `/proc/<parent>/fd` out of reach.

The ruleset is built in the parent; the child (`restrict_in_child`, used as
`preexec_fn`) starts a new session (no controlling terminal: TIOCSTI cannot type into
the user's), drops every capability, sets no_new_privs, installs the seccomp filter
(`seccomp.py`) and restricts itself before bash starts. Root is refused by the runner:
Landlock confines paths, not privilege.
"""

from __future__ import annotations

import ctypes
import os
import stat
from collections.abc import Sequence

import msgspec

from askgate.policy.paths import is_inside
from askgate.sandbox.plan import SandboxPlan

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
READ_RIGHTS = EXECUTE | READ_FILE | READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


class LandlockError(Exception):
    """Landlock cannot be set up; the message is one line."""


class LandlockPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Directory rules for one plan, and what could not be expressed."""

    read: tuple[str, ...]
    write: tuple[str, ...]
    refusals: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    block_tcp: bool = False


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The running kernel's Landlock ABI, 0 when Landlock is absent or disabled."""
    try:
        libc = _libc()
    except OSError:
        return 0
    result = libc.syscall(
        ctypes.c_long(SYS_CREATE_RULESET),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(CREATE_RULESET_VERSION),
    )
    return int(result) if result > 0 else 0


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def split_tree(root: str, exclusions: Sequence[str]) -> tuple[list[str], list[str]]:
    """(directories to grant, directories lost) so that the grants cover `root` minus
    every exclusion. A lost directory is an ancestor of an exclusion: no rule covers it."""
    inside = [path for path in exclusions if is_inside(path, root)]
    if not inside:
        return [root], []
    if root in inside:
        return [], []
    grants: list[str] = []
    lost = [root]
    try:
        entries = list(os.scandir(root))
    except OSError:
        return [], lost
    for entry in entries:
        try:
            if not stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode):
                continue  # files directly in a lost directory stay out (no file rules)
        except OSError:
            continue
        more, more_lost = split_tree(entry.path, inside)
        grants += more
        lost += more_lost
    return grants, lost


def landlock_plan(plan: SandboxPlan, abi: int) -> LandlockPlan:
    """The directory rules for `plan`, or the reasons it cannot be enforced."""
    from askgate.sandbox.plan import CONTAINER_SOCKET, DAEMON_SOCKET, SCRATCH_SOCKET

    refusals: list[str] = []
    warnings: list[str] = []
    writable_dirs = [entry.path for entry in plan.writable if entry.kind == "dir"]
    hidden: list[str] = []
    for entry in plan.read_denies:
        if entry.why in (CONTAINER_SOCKET, SCRATCH_SOCKET):
            continue  # no Unix socket can be made under Landlock (seccomp): nothing to hide
        if entry.why == DAEMON_SOCKET and any(is_inside(entry.path, r) for r in writable_dirs):
            # Landlock cannot hide it inside a writable directory (/tmp/askgate-UID):
            # reachable, but the daemon changes nothing without its control token, which
            # lives in the (hidden) state directory.
            warnings.append(f"Landlock cannot hide the daemon socket directory {entry.path}")
            continue
        hidden.append(entry.path)
    roots = [
        entry.path
        for entry in plan.writable
        if entry.kind == "dir" and not any(is_inside(entry.path, h) for h in hidden)
    ]
    read, read_lost = split_tree("/", hidden)
    for directory in read_lost:
        if any(is_inside(directory, root) for root in roots):
            covered = ", ".join(h for h in hidden if is_inside(h, directory))[:300]
            refusals.append(
                f"Landlock cannot hide {covered} without making {directory} unreadable and "
                "unwritable (it is inside a writable directory); bubblewrap can"
            )
    if read_lost:
        shown = ", ".join(sorted(set(read_lost))[:5])
        warnings.append(f"Landlock: files directly in {shown} are unreadable in the sandbox")
    # Tripwires need no mount: they are checked after the run (runner.py), as under
    # bubblewrap. Only the write holes cannot be expressed.
    holes = [entry for entry in plan.write_holes if any(is_inside(entry.path, r) for r in roots)]
    for hole in holes:
        text = (
            f"Landlock cannot keep {hole.path} read-only inside a writable directory ({hole.why})"
        )
        (refusals if plan.mode == "required" else warnings).append(text)
    write: list[str] = []
    for root in roots:
        grants, _ = split_tree(root, hidden)
        write += grants
    write += [path for path in ("/dev",) if path not in write]
    block_tcp = not plan.network
    if block_tcp:
        text = "Landlock blocks TCP only when network is off (UDP and Unix sockets pass)"
        if abi < 4:
            text = "this kernel's Landlock cannot block the network (ABI < 4)"
        (refusals if plan.mode == "required" else warnings).append(text)
    return LandlockPlan(
        read=tuple(read),
        write=tuple(write),
        refusals=tuple(refusals),
        warnings=tuple(warnings),
        block_tcp=block_tcp and abi >= 4,
    )


def create_ruleset(rules: LandlockPlan, abi: int) -> int:
    """A ruleset fd holding `rules` (close it after the child started)."""
    if abi < 1:
        raise LandlockError("Landlock is not available in this kernel")
    libc = _libc()
    handled = fs_rights(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP if rules.block_tcp else 0
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    fd = libc.syscall(
        ctypes.c_long(SYS_CREATE_RULESET),
        ctypes.byref(attr),
        ctypes.c_size_t(size),
        ctypes.c_uint32(0),
    )
    if fd < 0:
        raise LandlockError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    try:
        for paths, rights in ((rules.read, READ_RIGHTS), (rules.write, handled)):
            for path in paths:
                _add_rule(libc, int(fd), path, rights & handled)
    except BaseException:
        os.close(int(fd))
        raise
    return int(fd)


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        target = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_DIRECTORY)
    except OSError:
        return  # gone or not a directory now: no rule, so no access (fail closed)
    try:
        attr = _PathBeneathAttr(rights, target)
        result = libc.syscall(
            ctypes.c_long(SYS_ADD_RULE),
            ctypes.c_int(ruleset),
            ctypes.c_int(RULE_PATH_BENEATH),
            ctypes.byref(attr),
            ctypes.c_uint32(0),
        )
        if result < 0:
            error = os.strerror(ctypes.get_errno())
            raise LandlockError(f"landlock_add_rule({path}) failed: {error}")
    finally:
        os.close(target)


def restrict_in_child(ruleset: int, seccomp_filter: bytes | None = None) -> None:
    """New session, no capabilities, no_new_privs, the seccomp filter, then `ruleset` on
    this process (run in the child)."""
    libc = _libc()
    os.setsid()
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0:
        raise LandlockError("prctl(PR_CAP_AMBIENT_CLEAR_ALL) failed")
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise LandlockError("capset (dropping every capability) failed")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if seccomp_filter:
        buffer = ctypes.create_string_buffer(seccomp_filter, len(seccomp_filter))
        program = _SockFprog(len(seccomp_filter) // 8, ctypes.addressof(buffer))
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
            raise LandlockError("prctl(PR_SET_SECCOMP) failed")
    result = libc.syscall(
        ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
    )
    if result != 0:
        raise LandlockError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")


SCOPE_ABI = 6  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET and LANDLOCK_SCOPE_SIGNAL


def scope_ruleset(abi: int) -> int:
    """A ruleset that handles no filesystem or network access and only *scopes* the
    process: no connecting to an abstract Unix socket, no signal to a process, made
    outside its domain. Put on bubblewrap before it execs (`restrict_scope_in_child`)
    when the command shares the host's network namespace (`network = "on"`), where the
    host's abstract sockets (X11 `@/tmp/.X11-unix/X0`, D-Bus, dev servers) live.
    Handling no filesystem access leaves bwrap's mounts allowed."""
    if abi < SCOPE_ABI:
        raise LandlockError(f"this kernel's Landlock cannot scope abstract sockets (ABI {abi})")
    libc = _libc()
    attr = _RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL)
    fd = libc.syscall(
        ctypes.c_long(SYS_CREATE_RULESET),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
        ctypes.c_uint32(0),
    )
    if fd < 0:
        raise LandlockError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    return int(fd)


def restrict_scope_in_child(ruleset: int) -> None:
    """no_new_privs, then the scope-only `ruleset` on this process (bwrap's, in the
    child before exec; bwrap is not setuid where askgate uses it: user namespaces)."""
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    result = libc.syscall(
        ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
    )
    if result != 0:
        raise LandlockError(f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}")


def verify_enforced(abi: int) -> bool:
    """Fork a child that restricts itself to nothing readable and must then fail to read a
    file: True only when the kernel really enforces the ruleset."""
    if abi < 1:
        return False
    import tempfile

    with tempfile.NamedTemporaryFile() as probe:
        try:
            ruleset = create_ruleset(LandlockPlan(read=(), write=()), abi)
        except LandlockError:
            return False
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                restrict_in_child(ruleset)
                try:
                    with open(probe.name, "rb"):
                        pass
                except PermissionError:
                    code = 0
            except BaseException:
                code = 1
            os._exit(code)
        os.close(ruleset)
        _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0

"""Did any of a list of paths change (by ctime)? A static program for the prepared wrapper.

After the command, the prepared wrapper must know cheaply whether the directories (and
the few files) it watches changed during the run: only then does it start the Python
tail step. `[ ref -nt DIR ]` compares mtimes, which the sandboxed command can set back
(`touch -d 2000-01-01 DIR`). A ctime cannot be set from userspace: every change to an
inode (an entry made, removed or renamed in a directory, a chmod, a write, a utime)
stamps it with the kernel's clock. bash has no test for ctime, so this is one more tiny
static x86_64 program (built with `struct`, as scope_exec.py and static_tee.py are),
kept in askgate's data directory, hidden in every sandbox.

The list (`snapshot` writes it, the program and `changed` read it) is a concatenation
of records, nothing before, between or after them:

    struct.pack("<qq", ctime_sec, ctime_nsec) + os.fsencode(path) + b"\\0"

`path` is absolute and holds no NUL. A path that did not exist when recorded (lstat
failed with ENOENT or ENOTDIR) has sec = nsec = -1 (`MISSING`); one whose state could
not be read (any other error) or was too recent to trust (below) has sec = nsec = -2
(`UNKNOWN`): no real ctime has a negative nanosecond part, so it always reads as
changed. An empty list is valid (nothing watched: unchanged).

`unchanged LISTFILE` exits 0 iff every record matches its path's current state, by
`newfstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW)` (a symlink is itself watched,
never its target):

- the path exists: its (st_ctim.tv_sec, st_ctim.tv_nsec) equals the record's;
- it fails with ENOENT or ENOTDIR: the record says MISSING;
- any other error: changed.

It exits 1 when a path changed, 2 on any failure (wrong argument count, the list cannot
be opened, fstat'ed or mmap'ed, a record truncated or without its NUL) and dies by
SIGBUS if the list is truncated while it reads it: the wrapper treats every nonzero
status as "changed", so failures fail closed. `changed(data)` is the same test in
Python, naming the paths (the tail step uses it).

A ctime only separates two changes made in different ticks of the clock that stamps
them. Kernels before 6.13 (and filesystems without multigrain timestamps) stamp with
the coarse clock (a jiffy, up to 10 ms); some filesystems keep whole seconds. A path
changed just before the snapshot could be changed again during the run in the same tick
and keep the same ctime. So `snapshot` waits, when a path changed within the current
tick, until the coarse clock (`CLOCK_REALTIME_COARSE`) has passed its ctime (at most a
tick; past `MAX_SETTLE_S` the records are UNKNOWN), and records as UNKNOWN a ctime in
whole seconds less than `recent_ns` (2 s) old: the wrapper then runs the tail step,
which costs time, never a missed change.

Built for x86_64 only; elsewhere `program()` is None.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import time
from collections.abc import Sequence

from askgate.sandbox.scope_exec import _elf
from askgate.sandbox.static_tee import _Asm

MISSING = (-1, -1)
UNKNOWN = (-2, -2)
RECENT_NS = 2_000_000_000
EXIT_CHANGED = 1
EXIT_FAILED = 2
_HEADER = struct.Struct("<qq")
_ABSENT = (errno.ENOENT, errno.ENOTDIR)
_NS = 1_000_000_000


def _state(path: bytes) -> tuple[int, int] | None:
    """(sec, nsec) of the path's ctime, MISSING, or None when it cannot be read."""
    try:
        ctime_ns = os.lstat(path).st_ctime_ns
    except OSError as error:
        return MISSING if error.errno in _ABSENT else None
    sec, nsec = divmod(ctime_ns, _NS)
    return sec, nsec


def snapshot(paths: Sequence[str], *, recent_ns: int = RECENT_NS, settle: bool = True) -> bytes:
    """The list for `paths` now (see the module docstring).

    `settle` (the default): a ctime with a sub-second part is recorded as it is, and the
    snapshot returns only once the kernel's coarse clock has passed the newest one (at
    most a tick, only when a path changed within the current tick), so any later change
    gets a later stamp; a ctime in whole seconds within `recent_ns` of the clock (a
    filesystem that keeps seconds) is UNKNOWN. Without `settle`, every ctime within
    `recent_ns` is UNKNOWN."""
    encoded_paths = []
    for path in paths:
        encoded = os.fsencode(path)
        if not encoded.startswith(b"/") or b"\0" in encoded:
            raise ValueError(f"not an absolute path without NUL: {path!r}")
        encoded_paths.append(encoded)
    states = [_state(encoded) for encoded in encoded_paths]
    # The clock is read after the lstats: a stamp they saw cannot be later than `now`.
    now = time.time_ns()
    newest = 0
    for index, state in enumerate(states):
        if state is None:
            states[index] = UNKNOWN
        elif state != MISSING:
            stamp = state[0] * _NS + state[1]
            recent = stamp > now - recent_ns
            if recent and (not settle or state[1] == 0):
                states[index] = UNKNOWN
            elif recent:
                newest = max(newest, stamp)
    if newest and not _settled(newest):
        states = [UNKNOWN if s not in (MISSING, UNKNOWN) else s for s in states]
    out = bytearray()
    for encoded, state in zip(encoded_paths, states, strict=True):
        assert state is not None
        out += _HEADER.pack(*state) + encoded + b"\0"
    return bytes(out)


COARSE_CLOCK = 5  # CLOCK_REALTIME_COARSE (Linux): the clock inode times come from
MAX_SETTLE_S = 0.1


def _settled(newest: int) -> bool:
    """Wait until the coarse clock is past `newest` (then no later change can be stamped
    the same); False if it is not within MAX_SETTLE_S (the records cannot be trusted)."""
    deadline = time.monotonic() + MAX_SETTLE_S
    while True:
        try:
            coarse = time.clock_gettime_ns(COARSE_CLOCK)
        except OSError:
            return False
        if coarse > newest:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.0005)  # a fraction of a tick: this is a wait for the clock itself


def records(data: bytes) -> list[tuple[tuple[int, int], bytes]]:
    """The list's records as ((sec, nsec), path); ValueError if it is malformed."""
    found: list[tuple[tuple[int, int], bytes]] = []
    offset = 0
    while offset < len(data):
        if len(data) - offset < _HEADER.size:
            raise ValueError(f"record at {offset} truncated")
        end = data.find(b"\0", offset + _HEADER.size)
        if end < 0:
            raise ValueError(f"record at {offset} has no NUL")
        sec, nsec = _HEADER.unpack_from(data, offset)
        found.append(((sec, nsec), data[offset + _HEADER.size : end]))
        offset = end + 1
    return found


def changed(data: bytes) -> list[str]:
    """The paths of the list whose state now differs from the recorded one (what the
    program's exit 1 means); ValueError if the list is malformed."""
    differ: list[str] = []
    for recorded, path in records(data):
        state = _state(path)
        if state is None or state != recorded:
            differ.append(os.fsdecode(path))
    return differ


_SYS = {"open": 2, "fstat": 5, "mmap": 9, "newfstatat": 262, "exit_group": 231}
_O_RDONLY_CLOEXEC = 0o2000000
_AT_FDCWD = -100
_AT_SYMLINK_NOFOLLOW = 0x100
_STAT_SIZE = 144  # struct stat on x86_64
_ST_SIZE, _ST_CTIM_SEC, _ST_CTIM_NSEC = 48, 104, 112


def _mov_eax(number: int) -> bytes:
    return b"\xb8" + struct.pack("<I", number)


def _x86_64_code() -> bytes:
    """Registers: r12 the list's fd, r13 its size, rbx the record read, r14 the list's
    end, r15 the next record; the struct stat is at rsp."""
    syscall = b"\x0f\x05"
    test_rax = b"\x48\x85\xc0"
    asm = _Asm()
    asm.emit(b"\x48\x83\x3c\x24\x02")  # cmp qword [rsp], 2 (argc)
    asm.jump("ne", "fail")
    # open(argv[1], O_RDONLY | O_CLOEXEC)
    asm.emit(b"\x48\x8b\x7c\x24\x10")  # mov rdi, [rsp + 16]
    asm.emit(b"\xbe" + struct.pack("<I", _O_RDONLY_CLOEXEC))  # mov esi, flags
    asm.emit(b"\x31\xd2")  # xor edx, edx
    asm.emit(_mov_eax(_SYS["open"]), syscall, test_rax)
    asm.jump("s", "fail")
    asm.emit(b"\x49\x89\xc4")  # mov r12, rax
    asm.emit(b"\x48\x81\xec" + struct.pack("<I", _STAT_SIZE))  # sub rsp, 144
    # fstat(fd, rsp): the size
    asm.emit(b"\x4c\x89\xe7")  # mov rdi, r12
    asm.emit(b"\x48\x89\xe6")  # mov rsi, rsp
    asm.emit(_mov_eax(_SYS["fstat"]), syscall, test_rax)
    asm.jump("ne", "fail")
    asm.emit(b"\x4c\x8b\x6c\x24" + bytes([_ST_SIZE]))  # mov r13, [rsp + 48]
    asm.emit(b"\x4d\x85\xed")  # test r13, r13
    asm.jump("e", "unchanged")  # an empty list (mmap would refuse a length of 0)
    # mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0)
    asm.emit(b"\x31\xff")  # xor edi, edi
    asm.emit(b"\x4c\x89\xee")  # mov rsi, r13
    asm.emit(b"\xba\x01\x00\x00\x00")  # mov edx, 1 (PROT_READ)
    asm.emit(b"\x41\xba\x02\x00\x00\x00")  # mov r10d, 2 (MAP_PRIVATE)
    asm.emit(b"\x4d\x89\xe0")  # mov r8, r12
    asm.emit(b"\x45\x31\xc9")  # xor r9d, r9d
    asm.emit(_mov_eax(_SYS["mmap"]), syscall, test_rax)
    asm.jump("s", "fail")  # -4095..-1; a user-space address is never negative
    asm.emit(b"\x48\x89\xc3")  # mov rbx, rax
    asm.emit(b"\x49\x89\xc6")  # mov r14, rax
    asm.emit(b"\x4d\x01\xee")  # add r14, r13
    asm.label("record")
    asm.emit(b"\x4c\x39\xf3")  # cmp rbx, r14
    asm.jump("e", "unchanged")  # every record matched
    asm.emit(b"\x4c\x89\xf1")  # mov rcx, r14
    asm.emit(b"\x48\x29\xd9")  # sub rcx, rbx (bytes left)
    asm.emit(b"\x48\x83\xf9\x11")  # cmp rcx, 17 (header + at least the NUL)
    asm.jump("b", "fail")
    # The path's NUL: repne scasb over the rest (the direction flag is clear at start).
    asm.emit(b"\x48\x83\xe9\x10")  # sub rcx, 16
    asm.emit(b"\x48\x8d\x7b\x10")  # lea rdi, [rbx + 16]
    asm.emit(b"\x31\xc0")  # xor eax, eax
    asm.emit(b"\xf2\xae")  # repne scasb
    asm.jump("ne", "fail")  # no NUL before the end
    asm.emit(b"\x49\x89\xff")  # mov r15, rdi (just past the NUL: the next record)
    # newfstatat(AT_FDCWD, path, rsp, AT_SYMLINK_NOFOLLOW)
    asm.emit(b"\x48\xc7\xc7" + struct.pack("<i", _AT_FDCWD))  # mov rdi, -100
    asm.emit(b"\x48\x8d\x73\x10")  # lea rsi, [rbx + 16]
    asm.emit(b"\x48\x89\xe2")  # mov rdx, rsp
    asm.emit(b"\x41\xba" + struct.pack("<I", _AT_SYMLINK_NOFOLLOW))  # mov r10d, 0x100
    asm.emit(_mov_eax(_SYS["newfstatat"]), syscall, test_rax)
    asm.jump("ne", "stat_error")
    asm.emit(b"\x48\x8b\x44\x24" + bytes([_ST_CTIM_SEC]))  # mov rax, [rsp + 104]
    asm.emit(b"\x48\x3b\x03")  # cmp rax, [rbx]
    asm.jump("ne", "changed")
    asm.emit(b"\x48\x8b\x44\x24" + bytes([_ST_CTIM_NSEC]))  # mov rax, [rsp + 112]
    asm.emit(b"\x48\x3b\x43\x08")  # cmp rax, [rbx + 8]
    asm.jump("ne", "changed")
    asm.label("next")
    asm.emit(b"\x4c\x89\xfb")  # mov rbx, r15
    asm.jump("jmp", "record")
    asm.label("stat_error")
    asm.emit(b"\x48\x83\xf8" + struct.pack("<b", -errno.ENOENT))  # cmp rax, -ENOENT
    asm.jump("e", "missing")
    asm.emit(b"\x48\x83\xf8" + struct.pack("<b", -errno.ENOTDIR))  # cmp rax, -ENOTDIR
    asm.jump("ne", "changed")  # any other error: not known to be unchanged
    asm.label("missing")  # absent now: unchanged only if it was absent then
    asm.emit(b"\x48\x83\x3b\xff")  # cmp qword [rbx], -1
    asm.jump("ne", "changed")
    asm.emit(b"\x48\x83\x7b\x08\xff")  # cmp qword [rbx + 8], -1
    asm.jump("ne", "changed")
    asm.jump("jmp", "next")
    asm.label("unchanged")
    asm.emit(b"\x31\xff", _mov_eax(_SYS["exit_group"]), syscall)  # exit_group(0)
    asm.label("changed")
    asm.emit(b"\xbf" + struct.pack("<I", EXIT_CHANGED), _mov_eax(_SYS["exit_group"]), syscall)
    asm.label("fail")
    asm.emit(b"\xbf" + struct.pack("<I", EXIT_FAILED), _mov_eax(_SYS["exit_group"]), syscall)
    return asm.assemble()


def program(machine: str | None = None) -> bytes | None:
    """`unchanged LISTFILE` for this host's architecture, or None where none is built."""
    if (machine or platform.machine()).lower() in ("x86_64", "amd64"):
        return _elf(_x86_64_code(), 0x3E)
    return None

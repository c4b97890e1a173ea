"""A seccomp filter for sandboxed commands, as classic BPF built with `struct` (no
libseccomp): bubblewrap loads it with `--seccomp FD`; the Landlock fallback installs it
itself with `prctl(PR_SET_SECCOMP)`.

What it refuses (EPERM, or ENOSYS where a fallback exists):

* `ioctl(fd, TIOCSTI)` and `ioctl(fd, TIOCLINUX)`: typing into the user's terminal (a
  command that pushes `rm -rf ~\\n` into the tty's input queue runs it outside every
  sandbox, as the user, once the agent exits). Only the low 32 bits of the request are
  compared, as the kernel's tty layer does (`unsigned int cmd`).
* `unshare` and `clone` with any `CLONE_NEW*` flag, and `setns`: new namespaces are how a
  process without capabilities gets some back (a user namespace of its own, then mounts
  over the masks). `clone3` passes its flags in memory a filter cannot read: ENOSYS, and
  the C library falls back to `clone`, which is checked.
* with `unix_sockets=False` (the Landlock fallback, which cannot hide a socket: Landlock
  does not govern `connect()`, and abstract sockets have no path at all), `socket()` of
  the `AF_UNIX` family (and the i386 `socketcall(SYS_SOCKET, …)` multiplexer): no new
  Unix socket, so neither the ssh-agent in a hidden `~/.ssh` nor the daemon's socket nor
  a host abstract socket can be reached. `socketpair()` stays allowed (it reaches nothing).
* every syscall of another ABI than the ones listed (x32 on x86_64): ENOSYS, so the
  numbers above cannot be dodged. The 32-bit compat ABIs (i386, arm) get their own table.

Built only for x86_64 and aarch64 hosts; elsewhere `program()` returns None (no filter,
and `askgate sandbox --plan` says so).
"""

from __future__ import annotations

import errno
import platform
import struct
from collections.abc import Sequence

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
_OFFSET_NR, _OFFSET_ARCH = 0, 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # seccomp_data.args[index], low word (little-endian)


TIOCSTI, TIOCLINUX = 0x5412, 0x541C
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (+ NEWTIME for unshare:
# in clone's flags that bit is part of the exit signal).
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
CLONE_NAMESPACES |= 0x20000000 | 0x40000000
UNSHARE_NAMESPACES = CLONE_NAMESPACES | 0x00000080
X32_BIT = 0x40000000


AF_UNIX = 1
SYS_SOCKET = 1  # socketcall's first argument for socket()


class _Abi:
    def __init__(
        self,
        arch: int,
        *,
        ioctl: int,
        clone: int,
        unshare: int,
        setns: int,
        clone3: int,
        socket: int,
        socketcall: int | None = None,
    ) -> None:
        self.arch, self.ioctl, self.clone, self.unshare = arch, ioctl, clone, unshare
        self.setns, self.clone3 = setns, clone3
        self.socket, self.socketcall = socket, socketcall


_X86_64 = _Abi(0xC000003E, ioctl=16, clone=56, unshare=272, setns=308, clone3=435, socket=41)
_I386 = _Abi(
    0x40000003, ioctl=54, clone=120, unshare=310, setns=346, clone3=435, socket=359,
    socketcall=102,
)  # fmt: skip
_AARCH64 = _Abi(0xC00000B7, ioctl=29, clone=220, unshare=97, setns=268, clone3=435, socket=198)
_ARM = _Abi(
    0x40000028, ioctl=54, clone=120, unshare=337, setns=375, clone3=435, socket=281,
    socketcall=102,
)  # fmt: skip
HOST_ABIS: dict[str, tuple[_Abi, ...]] = {
    "x86_64": (_X86_64, _I386),
    "amd64": (_X86_64, _I386),
    "aarch64": (_AARCH64, _ARM),
    "arm64": (_AARCH64, _ARM),
}


class _Assembler:
    """Instructions with symbolic jump targets, resolved to BPF's relative offsets."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((code, jt, jf, k))

    def ret(self, value: int) -> None:
        self.op(_RET_K, value)

    def bytes(self) -> bytes:
        out = bytearray()
        for index, (code, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                if isinstance(target, str):
                    delta = self.labels[target] - index - 1
                    if not 0 <= delta <= 255:
                        raise ValueError(f"jump to {target} out of range")
                    offsets.append(delta)
                else:
                    offsets.append(target)
            out += struct.pack("<HBBI", code, offsets[0], offsets[1], k)
        return bytes(out)


def build(abis: Sequence[_Abi], *, unix_sockets: bool = True) -> bytes:
    """The filter program for these ABIs (the first is the host's native one);
    `unix_sockets=False` also refuses new `AF_UNIX` sockets."""
    eperm, enosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    asm = _Assembler()
    asm.op(_LD_W_ABS, _OFFSET_ARCH)
    for index, abi in enumerate(abis):
        asm.op(_JEQ_K, abi.arch, f"abi{index}", 0)
    asm.ret(enosys)  # an ABI this filter does not know: nothing runs through it
    for index, abi in enumerate(abis):
        tag = f"abi{index}"
        asm.label(tag)
        asm.op(_LD_W_ABS, _OFFSET_NR)
        if abi is _X86_64:
            asm.op(_JGE_K, X32_BIT, "enosys", 0)
        asm.op(_JEQ_K, abi.ioctl, f"{tag}.ioctl", 0)
        asm.op(_JEQ_K, abi.clone, f"{tag}.clone", 0)
        asm.op(_JEQ_K, abi.unshare, f"{tag}.unshare", 0)
        asm.op(_JEQ_K, abi.setns, "eperm", 0)
        asm.op(_JEQ_K, abi.clone3, "enosys", 0)
        if not unix_sockets:
            asm.op(_JEQ_K, abi.socket, f"{tag}.socket", 0)
            if abi.socketcall is not None:
                asm.op(_JEQ_K, abi.socketcall, f"{tag}.socketcall", 0)
        asm.ret(RET_ALLOW)
        if not unix_sockets:
            asm.label(f"{tag}.socket")
            asm.op(_LD_W_ABS, _arg_low(0))
            asm.op(_JEQ_K, AF_UNIX, "eperm", 0)
            asm.ret(RET_ALLOW)
            if abi.socketcall is not None:
                # socketcall(SYS_SOCKET, args): the family is in memory a filter cannot
                # read, so every socket() through the multiplexer is refused.
                asm.label(f"{tag}.socketcall")
                asm.op(_LD_W_ABS, _arg_low(0))
                asm.op(_JEQ_K, SYS_SOCKET, "eperm", 0)
                asm.ret(RET_ALLOW)
        asm.label(f"{tag}.ioctl")
        asm.op(_LD_W_ABS, _arg_low(1))
        asm.op(_JEQ_K, TIOCSTI, "eperm", 0)
        asm.op(_JEQ_K, TIOCLINUX, "eperm", 0)
        asm.ret(RET_ALLOW)
        asm.label(f"{tag}.clone")
        asm.op(_LD_W_ABS, _arg_low(0))
        asm.op(_JSET_K, CLONE_NAMESPACES, "eperm", 0)
        asm.ret(RET_ALLOW)
        asm.label(f"{tag}.unshare")
        asm.op(_LD_W_ABS, _arg_low(0))
        asm.op(_JSET_K, UNSHARE_NAMESPACES, "eperm", 0)
        asm.ret(RET_ALLOW)
    asm.label("eperm")
    asm.ret(eperm)
    asm.label("enosys")
    asm.ret(enosys)
    return asm.bytes()


def program(machine: str | None = None, *, unix_sockets: bool = True) -> bytes | None:
    """The filter for this host's architecture, or None where none is built."""
    abis = HOST_ABIS.get((machine or platform.machine()).lower())
    return build(abis, unix_sockets=unix_sockets) if abis else None

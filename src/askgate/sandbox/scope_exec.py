"""A tiny static program that puts a Landlock *scope* on itself and execs its arguments.

`askgate sandbox` (Python) scopes bubblewrap before it execs under `network = "on"`
(`runner._host_network_scope`): the command then cannot connect to an abstract Unix
socket made outside (an X server's `@/tmp/.X11-unix/X0`, a D-Bus bus, a dev server) nor
signal a process outside. The prepared wrapper a hook hands the agent starts bwrap from
bash, which cannot do that — and a Python start per command costs more than the whole
sandbox. So the wrapper execs this program instead, with bwrap's argv after it:

    scope-exec-HASH /usr/bin/bwrap --json-status-fd 3 … -- /bin/bash -c COMMAND

It is about 200 bytes of machine code in a static ELF (no libc, no dynamic loader: its
start costs one exec), built here with `struct` as the seccomp filter is, and written to
askgate's data directory, which every sandbox hides. What it does, in order:

1. `landlock_create_ruleset({handled_access_fs = 0, handled_access_net = 0,
   scoped = ABSTRACT_UNIX_SOCKET | SIGNAL})` — handles no file or network access (bwrap's
   mounts stay allowed), only the scope (Landlock ABI 6);
2. `prctl(PR_SET_NO_NEW_PRIVS, 1)`, `landlock_restrict_self(fd)`, `close(fd)`;
3. `execve(argv[1], argv + 1, envp)`.

Any failure — a kernel without ABI 6, a seccomp refusal, exec failing — exits 125 without
running anything: the wrapper's tail step then sees that bwrap never started and runs
the command the long way (`askgate sandbox`, which scopes or refuses).

Built for x86_64 only; elsewhere `program()` is None and the hook falls back to the
launcher form where the scope matters (the policy hides secrets).
"""

from __future__ import annotations

import platform
import struct

_SYS_X86_64 = {
    "landlock_create_ruleset": 444,
    "landlock_restrict_self": 446,
    "prctl": 157,
    "close": 3,
    "execve": 59,
    "exit_group": 231,
}
PR_SET_NO_NEW_PRIVS = 38
SCOPES = 0b11  # LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL
EXIT_FAILED = 125
_BASE = 0x400000
_EHDR, _PHDR = 64, 56


def _mov_eax(number: int) -> bytes:
    return b"\xb8" + struct.pack("<I", number)


def _x86_64_code() -> bytes:
    """The program text; jumps to `fail` are patched once its offset is known."""
    sys = _SYS_X86_64
    syscall = b"\x0f\x05"
    test_rax = b"\x48\x85\xc0"
    parts: list[bytes | str] = [
        # struct landlock_ruleset_attr on the stack: {fs = 0, net = 0, scoped = SCOPES}
        b"\x6a" + bytes([SCOPES]),  # push SCOPES
        b"\x6a\x00",  # push 0 (handled_access_net)
        b"\x6a\x00",  # push 0 (handled_access_fs)
        b"\x48\x89\xe7",  # mov rdi, rsp
        b"\xbe\x18\x00\x00\x00",  # mov esi, 24 (sizeof attr)
        b"\x31\xd2",  # xor edx, edx (flags)
        _mov_eax(sys["landlock_create_ruleset"]),
        syscall,
        test_rax,
        "js",  # a negative result: no ruleset
        b"\x49\x89\xc4",  # mov r12, rax (the ruleset fd)
        b"\xbf" + struct.pack("<I", PR_SET_NO_NEW_PRIVS),  # mov edi, 38
        b"\xbe\x01\x00\x00\x00",  # mov esi, 1
        b"\x31\xd2",  # xor edx, edx
        b"\x45\x31\xd2",  # xor r10d, r10d
        b"\x45\x31\xc0",  # xor r8d, r8d
        _mov_eax(sys["prctl"]),
        syscall,
        test_rax,
        "jnz",
        b"\x4c\x89\xe7",  # mov rdi, r12
        b"\x31\xf6",  # xor esi, esi (flags)
        _mov_eax(sys["landlock_restrict_self"]),
        syscall,
        test_rax,
        "jnz",
        b"\x4c\x89\xe7",  # mov rdi, r12
        _mov_eax(sys["close"]),
        syscall,
        b"\x48\x83\xc4\x18",  # add rsp, 24: back to argc
        b"\x48\x8b\x0c\x24",  # mov rcx, [rsp] (argc)
        b"\x48\x8d\x74\x24\x10",  # lea rsi, [rsp + 16] (&argv[1])
        b"\x48\x8b\x3e",  # mov rdi, [rsi] (argv[1]; NULL fails the exec)
        b"\x48\x8d\x54\xcc\x10",  # lea rdx, [rsp + rcx*8 + 16] (envp)
        _mov_eax(sys["execve"]),
        syscall,
        "fail",
        b"\xbf" + struct.pack("<I", EXIT_FAILED),  # mov edi, 125
        _mov_eax(sys["exit_group"]),
        syscall,
    ]
    # Two passes: the offset of `fail`, then the rel8 jumps to it.
    offset, fail = 0, 0
    for part in parts:
        if part == "fail":
            fail = offset
        else:
            offset += 2 if isinstance(part, str) else len(part)
    out = bytearray()
    for part in parts:
        if part == "fail":
            continue
        if isinstance(part, str):
            delta = fail - (len(out) + 2)
            if not 0 <= delta <= 127:
                raise ValueError("jump out of range")
            out += bytes([0x78 if part == "js" else 0x75, delta])
        else:
            out += part
    return bytes(out)


def _elf(code: bytes, machine: int) -> bytes:
    total = _EHDR + _PHDR + len(code)
    entry = _BASE + _EHDR + _PHDR
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, SysV
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 2, machine, 1, entry, _EHDR, 0, 0, _EHDR, _PHDR, 1, 0, 0, 0
    )
    # One PT_LOAD, read + execute, the whole file at _BASE.
    phdr = struct.pack("<IIQQQQQQ", 1, 5, 0, _BASE, _BASE, total, total, 0x1000)
    return header + phdr + code


def program(machine: str | None = None) -> bytes | None:
    """The helper for this host's architecture, or None where none is built."""
    if (machine or platform.machine()).lower() in ("x86_64", "amd64"):
        return _elf(_x86_64_code(), 0x3E)
    return None

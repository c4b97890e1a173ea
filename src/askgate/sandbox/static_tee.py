"""A static `tee FILE` for the prepared wrapper: stdin to stdout and to FILE, in machine code.

The wrapper copies the command's stderr to the agent and to the run's `stderr` file (the
one-line explanation after a failure reads it). coreutils' `tee` is a dynamically linked
program: its start (the dynamic loader, the C library's initialisation) costs about as
much CPU as the rest of the wrapper's own steps. This one is ~300 bytes of x86_64 code in
a static ELF (built with `struct`, as scope_exec.py and the seccomp filter are), kept in
askgate's data directory (hidden in every sandbox) and checked once by running it:

1. SIGPIPE ignored (a reader gone is an error return, not death: the file still gets
   everything, and bwrap's stderr never sees a broken pipe because of the copy);
2. `open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)` — exit 1 if it fails;
3. `read(0, 64 KiB)` until end of file (EINTR retried); each chunk is written whole to
   fd 1, then to the file (partial writes continued, EINTR retried); an output that
   fails once is not written again;
4. exit 0 at end of input (so `pipefail` reports the command's status, never the copy's).

Built for x86_64 only; elsewhere `program()` is None and the wrapper uses coreutils' tee.
"""

from __future__ import annotations

import platform
import struct

from askgate.sandbox.scope_exec import _elf

BUFFER = 65536
_O_FLAGS = 0o1 | 0o100 | 0o2000 | 0o2000000  # O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC
_CC = {"e": 0x4, "ne": 0x5, "s": 0x8, "le": 0xE, "b": 0x2}


class _Asm:
    """Bytes with labels; jumps are rel32 (fixed sizes, so two passes resolve them)."""

    def __init__(self) -> None:
        self.parts: list[bytes | tuple[str, str]] = []

    def emit(self, *chunks: bytes) -> None:
        self.parts += chunks

    def label(self, name: str) -> None:
        self.parts.append(("label", name))

    def jump(self, condition: str, target: str) -> None:
        self.parts.append((condition, target))

    def assemble(self) -> bytes:
        def size(part: bytes | tuple[str, str]) -> int:
            if isinstance(part, bytes):
                return len(part)
            return 0 if part[0] == "label" else 5 if part[0] == "jmp" else 6

        labels: dict[str, int] = {}
        offset = 0
        for part in self.parts:
            if isinstance(part, tuple) and part[0] == "label":
                labels[part[1]] = offset
            offset += size(part)
        out = bytearray()
        for part in self.parts:
            if isinstance(part, bytes):
                out += part
                continue
            kind, target = part
            if kind == "label":
                continue
            end = len(out) + size(part)
            rel = struct.pack("<i", labels[target] - end)
            out += (b"\xe9" if kind == "jmp" else bytes([0x0F, 0x80 | _CC[kind]])) + rel
        return bytes(out)


def _mov_eax(number: int) -> bytes:
    return b"\xb8" + struct.pack("<I", number)


def _write_all(asm: _Asm, tag: str, fd_code: bytes, dead_bit: int, after: str) -> None:
    """Write buf[0:n] (r13, r15) whole to the fd `fd_code` loads into edi/rdi."""
    syscall = b"\x0f\x05"
    asm.emit(b"\x41\xf6\xc6" + bytes([dead_bit]))  # test r14b, dead_bit
    asm.jump("ne", after)
    asm.emit(b"\x31\xdb")  # xor ebx, ebx (written so far)
    asm.label(f"{tag}.loop")
    asm.emit(fd_code)
    asm.emit(b"\x49\x8d\x74\x1d\x00")  # lea rsi, [r13 + rbx]
    asm.emit(b"\x4c\x89\xfa")  # mov rdx, r15
    asm.emit(b"\x48\x29\xda")  # sub rdx, rbx
    asm.emit(_mov_eax(1), syscall)  # write
    asm.emit(b"\x48\x83\xf8\xfc")  # cmp rax, -EINTR
    asm.jump("e", f"{tag}.loop")
    asm.emit(b"\x48\x85\xc0")  # test rax, rax
    asm.jump("le", f"{tag}.dead")
    asm.emit(b"\x48\x01\xc3")  # add rbx, rax
    asm.emit(b"\x4c\x39\xfb")  # cmp rbx, r15
    asm.jump("b", f"{tag}.loop")
    asm.jump("jmp", after)
    asm.label(f"{tag}.dead")
    asm.emit(b"\x41\x80\xce" + bytes([dead_bit]))  # or r14b, dead_bit
    asm.jump("jmp", after)


def _x86_64_code() -> bytes:
    syscall = b"\x0f\x05"
    asm = _Asm()
    # rt_sigaction(SIGPIPE, {SIG_IGN, flags 0, restorer 0, mask 0}, NULL, 8)
    asm.emit(b"\x6a\x00", b"\x6a\x00", b"\x6a\x00", b"\x6a\x01")
    asm.emit(b"\xbf\x0d\x00\x00\x00")  # mov edi, 13 (SIGPIPE)
    asm.emit(b"\x48\x89\xe6")  # mov rsi, rsp
    asm.emit(b"\x31\xd2")  # xor edx, edx
    asm.emit(b"\x41\xba\x08\x00\x00\x00")  # mov r10d, 8
    asm.emit(_mov_eax(13), syscall)
    asm.emit(b"\x48\x83\xc4\x20")  # add rsp, 32: back to argc
    # open(argv[1], flags, 0600)
    asm.emit(b"\x48\x8b\x7c\x24\x10")  # mov rdi, [rsp + 16]
    asm.emit(b"\x48\x85\xff")  # test rdi, rdi
    asm.jump("e", "fail")
    asm.emit(b"\xbe" + struct.pack("<I", _O_FLAGS))  # mov esi, flags
    asm.emit(b"\xba" + struct.pack("<I", 0o600))  # mov edx, 0600
    asm.emit(_mov_eax(2), syscall)
    asm.emit(b"\x48\x85\xc0")  # test rax, rax
    asm.jump("s", "fail")
    asm.emit(b"\x49\x89\xc4")  # mov r12, rax (the file)
    asm.emit(b"\x48\x81\xec" + struct.pack("<I", BUFFER))  # sub rsp, BUFFER
    asm.emit(b"\x49\x89\xe5")  # mov r13, rsp (the buffer)
    asm.emit(b"\x45\x31\xf6")  # xor r14d, r14d (bit 0: stdout failed, bit 1: the file)
    asm.label("read")
    asm.emit(b"\x31\xff")  # xor edi, edi (fd 0)
    asm.emit(b"\x4c\x89\xee")  # mov rsi, r13
    asm.emit(b"\xba" + struct.pack("<I", BUFFER))  # mov edx, BUFFER
    asm.emit(b"\x31\xc0", syscall)  # read
    asm.emit(b"\x48\x83\xf8\xfc")  # cmp rax, -EINTR
    asm.jump("e", "read")
    asm.emit(b"\x48\x85\xc0")  # test rax, rax
    asm.jump("le", "done")  # end of input (or an error reading it)
    asm.emit(b"\x49\x89\xc7")  # mov r15, rax (n)
    _write_all(asm, "out", b"\xbf\x01\x00\x00\x00", 1, "file")  # mov edi, 1
    asm.label("file")
    _write_all(asm, "file", b"\x4c\x89\xe7", 2, "read")  # mov rdi, r12
    asm.label("done")
    asm.emit(b"\x31\xff", _mov_eax(231), syscall)  # exit_group(0)
    asm.label("fail")
    asm.emit(b"\xbf\x01\x00\x00\x00", _mov_eax(231), syscall)  # exit_group(1)
    return asm.assemble()


def program(machine: str | None = None) -> bytes | None:
    """The static tee for this host's architecture, or None where none is built."""
    if (machine or platform.machine()).lower() in ("x86_64", "amd64"):
        return _elf(_x86_64_code(), 0x3E)
    return None

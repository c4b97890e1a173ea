"""A process's identity from /proc: its start time, so a recorded pid is not mistaken for
a later process that reuses the number."""

from __future__ import annotations


def process_start(pid: int, *, zombie_is_gone: bool = False) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), or None when it is gone (and,
    with `zombie_is_gone`, when it is a zombie: its sandbox died with it, --die-with-parent)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # The fields count after the parenthesised command name, which may hold spaces.
    fields = data[data.rfind(b")") + 2 :].split()
    if len(fields) <= 19 or (zombie_is_gone and fields[0] in (b"Z", b"X")):
        return None
    return fields[19].decode()

"""How another process (pi's permission extension, a forged peer) writes a file into the
forwarding root in tests: pi's tmp-then-rename scheme, by path. askgate itself writes only
through directory descriptors (askgate.forwarding.io)."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Write `<file>.<pid>.<ms>.<rand>.tmp`, then rename it over `path`."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{time.time_ns() // 1_000_000}.tmp")
    tmp = tmp.with_name(tmp.name.replace(".tmp", f".{secrets.token_hex(4)}.tmp"))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(tmp, path)

"""Where the real agent CLIs live, and what to do when one is missing.

scripts/install-clients puts each pinned client in ~/.cache/askgate/clients/<name>-<version>
(ASKGATE_CLIENTS_DIR overrides). Outside CI a missing client skips the test with the reason; in
CI (`CI` set) it fails: a green run must have driven the real client.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CLIENTS_DIR = Path(os.environ.get("ASKGATE_CLIENTS_DIR", Path.home() / ".cache/askgate/clients"))


def client_dir(name: str, version: str) -> Path:
    return CLIENTS_DIR / f"{name}-{version}"


def client_bin(name: str, version: str, binary: str) -> Path:
    """The path of `binary` in node_modules/.bin of an installed client (may not exist)."""
    return client_dir(name, version) / "node_modules" / ".bin" / binary


def missing(reason: str) -> None:
    """Skip outside CI, fail in CI."""
    text = f"{reason} (run scripts/install-clients)"
    if os.environ.get("CI"):
        pytest.fail(f"CI needs the real client: {text}")
    pytest.skip(text)


def require_client(name: str, version: str, binary: str) -> Path:
    """The client's executable, or skip/fail (see `missing`)."""
    path = client_bin(name, version, binary)
    if not (client_dir(name, version) / ".ok").is_file() or not os.access(path, os.X_OK):
        missing(f"{name} {version} is not installed at {client_dir(name, version)}")
    return path

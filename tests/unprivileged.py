"""Run a permission check as an unprivileged user, even when the suite runs as root.

Root ignores file modes, so a test of "the directory is unreadable" proves nothing as root,
and CI runs as root. Instead of skipping, such a test hands its check to `run_as_nobody`:

    def test_an_unreadable_log_is_a_clear_error() -> None:
        def check(scratch: Path) -> None:
            ...                      # runs as `nobody` when the suite runs as root
        run_as_nobody(check)

As root it forks; the child drops to `nobody` (groups cleared, gid and uid set, and checked
that root cannot be regained), gets a fresh scratch directory of its own (also its HOME and
TMPDIR), runs the check there and reports a failure's traceback to the parent, which fails
the test with it. As anybody else the check runs in-process in a fresh temporary directory.

Forking after the imports (rather than starting `python -m pytest` as `nobody`) is what lets
this work from a checkout in a private directory (mode 0700, or under a 0750 home): the child
never has to read the checkout or execute its virtualenv. For the same reason every module
of askgate is imported before the fork, so a lazy import inside the check finds it loaded.
The check must therefore not start the checkout's own executables as `nobody`.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import pwd
import shutil
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

NOBODY = "nobody"
_preloaded = False


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(NOBODY)
    except KeyError:
        _unavailable("there is no 'nobody' user on this machine to run the check as")
        raise


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"cannot run as an unprivileged user: {why}")
    pytest.skip(f"cannot run as an unprivileged user: {why}")


def _preload_askgate() -> None:
    """Import every module of askgate now, as root, so the unprivileged child never needs
    to read the checkout (a lazy import there would fail in a private directory)."""
    global _preloaded
    if _preloaded:
        return
    import askgate

    for info in pkgutil.walk_packages(askgate.__path__, "askgate."):
        if info.name.endswith(".__main__") or ".migrations." in info.name:
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            continue  # a module of an optional extra that is not installed
    _preloaded = True


def _child(
    check: Callable[[Path], None], user: pwd.struct_passwd, scratch: str, report: int
) -> None:
    """In the forked child: become `user`, run the check, write a failure to `report`.
    Never returns: the child must not go back into pytest."""
    code = 1
    try:
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:
            raise AssertionError("the child could become root again after dropping privileges")
        os.environ.update({"HOME": scratch, "TMPDIR": scratch})
        tempfile.tempdir = scratch
        os.chdir(scratch)
        check(Path(scratch))
        code = 0
    except BaseException:
        os.write(report, traceback.format_exc().encode("utf-8", "replace")[-16000:])
    finally:
        os._exit(code)


def run_as_nobody(check: Callable[[Path], None]) -> None:
    """Run `check(scratch_dir)` as an unprivileged user: as `nobody` in a forked child when
    this process is root, in-process otherwise. A failing check fails the calling test."""
    if os.geteuid() != 0:
        scratch = tempfile.mkdtemp(prefix="askgate-unprivileged-")
        try:
            check(Path(scratch))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return
    user = _nobody()
    _preload_askgate()
    scratch = tempfile.mkdtemp(prefix="askgate-unprivileged-")
    os.chown(scratch, user.pw_uid, user.pw_gid)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(check, user, scratch, write_end)
        os.close(write_end)
        chunks = []
        while chunk := os.read(read_end, 65536):
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(read_end)
        shutil.rmtree(scratch, ignore_errors=True)
    failure = b"".join(chunks).decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    assert code == 0 and not failure, f"as {user.pw_name} (exit {code}):\n{failure}"

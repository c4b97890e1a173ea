"""Run a permission check as an unprivileged user, even when the suite runs as root.

Root ignores file modes, so a test of "the directory is unreadable" proves nothing as root,
and CI runs as root. Instead of skipping, such a test calls `rerun_as_nobody(request)`
first: as root it runs that very test again in a subprocess as `nobody` (through
`setpriv`, else `runuser`), asserts that it passed there, and returns True (the caller
returns); as anybody else it returns False and the test does its check in-process.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

NOBODY = "nobody"


def _nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(NOBODY)
    except KeyError:
        _unavailable("there is no 'nobody' user to run the check as")
        raise


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"cannot run as an unprivileged user: {why}")
    pytest.skip(f"cannot run as an unprivileged user: {why}")


def _drop_privileges(user: pwd.struct_passwd) -> list[str]:
    setpriv = shutil.which("setpriv")
    if setpriv:
        return [
            setpriv,
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--clear-groups",
            "--",
        ]
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", user.pw_name, "--"]
    _unavailable("neither setpriv nor runuser is installed")
    return []


def _probe(command: list[str], request: pytest.FixtureRequest, scratch: str) -> None:
    """The unprivileged user must be able to run this interpreter and import askgate and
    the tests (a checkout under a 0700 home cannot be): say so plainly if not."""
    probe = subprocess.run(
        [*command, sys.executable, "-c", "import askgate.audit, pytest"],
        cwd=str(request.config.rootpath),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        _unavailable(
            f"{NOBODY} cannot run {sys.executable} or read {request.config.rootpath} "
            f"(make the checkout world-readable): {last}"
        )


def rerun_as_nobody(request: pytest.FixtureRequest, timeout: float = 300) -> bool:
    """As root: run the calling test as `nobody` and assert it passed (returns True).
    Otherwise: return False, and the caller runs its check here."""
    if os.geteuid() != 0:
        return False
    user = _nobody()
    command = _drop_privileges(user)
    scratch = tempfile.mkdtemp(prefix="askgate-unprivileged-")
    try:
        os.chown(scratch, user.pw_uid, user.pw_gid)
        _probe(command, request, scratch)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "TMPDIR": scratch,
            "PYTHONDONTWRITEBYTECODE": "1",
            "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(scratch, ".hypothesis"),
        }
        if os.environ.get("CI"):
            env["CI"] = os.environ["CI"]
        result = subprocess.run(
            [
                *command,
                sys.executable,
                "-m",
                "pytest",
                request.node.nodeid,
                "-rs",
                "-p",
                "no:cacheprovider",
                "--basetemp",
                os.path.join(scratch, "basetemp"),
            ],
            cwd=str(request.config.rootpath),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "1 passed" in output, (
        f"as {user.pw_name}: {request.node.nodeid} did not pass:\n{output[-4000:]}"
    )
    return True

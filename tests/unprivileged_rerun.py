"""Rerun a whole sandbox test as an unprivileged user, in a world outside /tmp.

The sandbox tests start the real `askgate sandbox` (the checkout's interpreter) as the
unprivileged user, so a forked check (`unprivileged.run_as_nobody`) does not fit them:
`rerun_as_nobody(request, outside=True)`, as root, runs that very test again in a
subprocess as `nobody` (through `setpriv`, else `runuser`) — with an interpreter `nobody`
can start from its own processes (this one, else the system's python3 of the same
version with this one's import path) and a directory outside /tmp it owns — asserts that
it passed there, and returns True (the caller returns); as anybody else it returns False
and the test does its check in-process. `outside_scratch_dir()` finds that directory.

A checkout in a private directory (a 0700 parent, a 0750 home) or an interpreter under
/root cannot be reached by `nobody`. The rerun then runs in a private mount namespace
(`unshare --mount`, as root) in which each such path stays at its own absolute path but
its topmost untraversable ancestor is covered by a tmpfs holding only that path, bound
back: `nobody` sees the checkout, its virtualenv and the interpreter, and nothing else of
the private directory. The real filesystem is unchanged and nothing is made readable.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
import tempfile

import pytest

NOBODY = "nobody"
OUTSIDE_ENV = "ASKGATE_TEST_OUTSIDE_DIR"
# Where a root test run makes worlds that lie outside every scratch directory a sandbox
# makes writable (/tmp, /var/tmp): a home-level escape is invisible in a world under /tmp.
OUTSIDE_PARENTS = ("/srv", "/var/lib", "/opt")


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


def _private_ancestor(path: str) -> str | None:
    """The topmost ancestor of `path` (or `path` itself) that others cannot traverse."""
    real = os.path.realpath(path)
    parts = real.strip("/").split("/")
    for depth in range(1, len(parts) + 1):
        ancestor = "/" + "/".join(parts[:depth])
        try:
            if not os.stat(ancestor).st_mode & 0o001:
                return ancestor
        except OSError:
            return None
    return None


def _private_view(paths: list[str], staging: str) -> list[str]:
    """A command prefix that runs its argument in a fresh private mount namespace where
    every path of `paths` is reachable by others at its own absolute path (see the module
    docstring); [] when all of them are reachable already or `unshare` is missing."""
    reals = sorted({os.path.realpath(p) for p in paths})
    reals = [p for p in reals if not any(p.startswith(q + "/") for q in reals)]
    covers = {p: a for p in reals if (a := _private_ancestor(p)) is not None}
    unshare = shutil.which("unshare")
    if not covers or unshare is None:
        return []
    tops = sorted({a for a in covers.values()}, key=len)
    tops = [a for a in tops if not any(a != t and a.startswith(t + "/") for t in tops)]
    script: list[str] = []
    for index, path in enumerate(covers):
        stage = os.path.join(staging, str(index))
        os.mkdir(stage, 0o755)
        script.append(f"mount --rbind {shlex.quote(path)} {shlex.quote(stage)}")
    script += [f"mount -t tmpfs -o mode=0755 askgate-view {shlex.quote(a)}" for a in tops]
    for index, path in enumerate(covers):
        stage = shlex.quote(os.path.join(staging, str(index)))
        script.append(f"mkdir -p {shlex.quote(path)} && mount --rbind {stage} {shlex.quote(path)}")
    script.append('exec "$@"')
    body = " && ".join(script)
    return [unshare, "--mount", "--propagation", "private", "sh", "-c", body, "sh"]


def _remove_staging(staging: str) -> None:
    """rmdir only, never rmtree: outside the namespace the staging points are empty, and
    if a bind ever leaked a recursive delete would go through it into the checkout."""
    for name in os.listdir(staging):
        os.rmdir(os.path.join(staging, name))
    os.rmdir(staging)


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


def _interpreter(command: list[str], request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    """An interpreter the unprivileged user can start *from its own processes* (a test
    that spawns `sys.executable` needs that; a venv whose base interpreter lives under a
    0700 /root is only reachable from setpriv's own exec): this one, else the system's
    python3 of the same version with this one's import path."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    check = [*command, "/usr/bin/env", sys.executable, "-c", "0"]
    done = subprocess.run(check, env=env, capture_output=True, timeout=60, check=False)
    if done.returncode == 0:
        return sys.executable, {}
    system = "/usr/bin/python3"
    version = f"import sys; assert sys.version_info[:2] == {tuple(sys.version_info[:2])}"
    done = subprocess.run(
        [*command, "/usr/bin/env", system, "-c", version],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        _unavailable(f"{NOBODY} cannot start {sys.executable} (nor a {system} of its version)")
    root = str(request.config.rootpath)
    paths = [p for p in sys.path if p and os.path.isdir(p) and not p.startswith(root + "/tests")]
    return system, {"PYTHONPATH": os.pathsep.join(paths)}


def outside_scratch_dir(prefix: str = "askgate-outside-") -> str:
    """A fresh directory outside /tmp and /var/tmp (the caller removes it): the one a
    root run handed to `nobody`, else one under /srv (root), else under ~/.cache."""
    handed = os.environ.get(OUTSIDE_ENV)
    if handed:
        return tempfile.mkdtemp(prefix=prefix, dir=handed)
    parents = list(OUTSIDE_PARENTS) if os.geteuid() == 0 else []
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    parents.append(cache)
    for parent in parents:
        real = os.path.realpath(parent)
        if real.startswith(("/tmp", "/var/tmp")):
            continue
        try:
            os.makedirs(real, exist_ok=True)
            return tempfile.mkdtemp(prefix=prefix, dir=real)
        except OSError:
            continue
    _unavailable("no writable directory outside /tmp and /var/tmp for the test world")
    return ""


def rerun_as_nobody(
    request: pytest.FixtureRequest, timeout: float = 300, *, outside: bool = False
) -> bool:
    """As root: run the calling test as `nobody` and assert it passed (returns True).
    Otherwise: return False, and the caller runs its check here. `outside`: hand the
    rerun a directory outside /tmp it owns (`outside_scratch_dir` finds it there)."""
    if os.geteuid() != 0:
        return False
    user = _nobody()
    scratch = tempfile.mkdtemp(prefix="askgate-unprivileged-")
    staging = tempfile.mkdtemp(prefix="askgate-view-", dir="/run")
    os.chmod(staging, 0o755)
    reachable = [str(request.config.rootpath), sys.prefix, sys.base_prefix, sys.executable]
    command = _private_view(reachable, staging) + _drop_privileges(user)
    handed = outside_scratch_dir("askgate-nobody-") if outside else None
    try:
        os.chown(scratch, user.pw_uid, user.pw_gid)
        if handed is not None:
            os.chown(handed, user.pw_uid, user.pw_gid)
        _probe(command, request, scratch)
        interpreter, extra = _interpreter(command, request) if outside else (sys.executable, {})
        env = {
            **extra,
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": scratch,
            "TMPDIR": scratch,
            "PYTHONDONTWRITEBYTECODE": "1",
            "HYPOTHESIS_STORAGE_DIRECTORY": os.path.join(scratch, ".hypothesis"),
        }
        if os.environ.get("CI"):
            env["CI"] = os.environ["CI"]
        if handed is not None:
            env[OUTSIDE_ENV] = handed
        result = subprocess.run(
            [
                *command,
                interpreter,
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
        _remove_staging(staging)
        if handed is not None:
            shutil.rmtree(handed, ignore_errors=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "1 passed" in output, (
        f"as {user.pw_name}: {request.node.nodeid} did not pass:\n{output[-4000:]}"
    )
    return True

"""The Landlock fallback against the real kernel (`--backend landlock`).

Landlock cannot punch holes in a granted tree, so the world lives outside the scratch
directories (/tmp would make the fake HOME writable, and a hidden path inside a writable
directory is refused under Landlock — tested below). The fallback refuses to run commands
as root (Landlock confines paths, not privilege): as root, each test reruns itself as
`nobody` (tests/unprivileged_rerun.py), with a world outside /tmp of its own.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from askgate.sandbox import landlock
from sandbox_world import SECRET, World
from unprivileged_rerun import outside_scratch_dir, rerun_as_nobody


@pytest.fixture
def world() -> Iterator[World]:
    if landlock.abi_version() < 1:
        if os.environ.get("CI"):
            pytest.fail("Landlock is not available in this kernel")
        pytest.skip("Landlock is not available in this kernel")
    base = Path(outside_scratch_dir("askgate-landlock-"))
    made = World(base)
    made.env_file.unlink()  # a hidden file inside the project cannot be expressed: own test
    try:
        yield made
    finally:
        shutil.rmtree(base, ignore_errors=True)


LANDLOCK = ("--backend", "landlock")


def test_reads_of_hidden_trees_and_writes_outside_fail(
    world: World, request: pytest.FixtureRequest
) -> None:
    if rerun_as_nobody(request, outside=True):
        return
    outside = world.base / "outside.txt"
    run = world.sandbox(
        f"cat {world.ssh_key}; echo x > {outside}; echo ok > inside.txt; cat inside.txt",
        options=LANDLOCK,
    )
    assert run.returncode == 0, run
    assert SECRET not in run.stdout
    assert run.stdout == "ok\n"
    assert f"{world.ssh_key}: Permission denied" in run.stderr
    assert not outside.exists()
    assert (world.project / "inside.txt").read_text() == "ok\n"


def test_proc_of_the_parent_and_inherited_descriptors_do_not_reach_the_secret(
    world: World, request: pytest.FixtureRequest
) -> None:
    if rerun_as_nobody(request, outside=True):
        return
    fd = os.open(world.ssh_key, os.O_RDONLY)
    try:
        rel = str(world.ssh_key).lstrip("/")
        run = world.sandbox(
            f"cat /proc/$PPID/root/{rel}; cat /proc/{os.getpid()}/root/{rel}; cat <&{fd}; "
            f"{sys.executable} -c 'import os; print(os.read({fd}, 99))'",
            options=LANDLOCK,
            pass_fds=(fd,),
        )
    finally:
        os.close(fd)
    assert SECRET not in run.stdout + run.stderr


def test_a_hidden_file_inside_the_project_is_refused_with_the_reason(
    world: World, request: pytest.FixtureRequest
) -> None:
    if rerun_as_nobody(request, outside=True):
        return
    world.env_file.write_text("X=1\n")
    run = world.sandbox("touch ran.txt", options=LANDLOCK)
    assert run.returncode == 125
    assert f"Landlock cannot hide {world.env_file}" in run.stderr
    assert "bubblewrap can" in run.stderr
    assert not (world.project / "ran.txt").exists()


def test_write_holes_are_refused_in_required_mode_and_named_otherwise(
    world: World, request: pytest.FixtureRequest
) -> None:
    if rerun_as_nobody(request, outside=True):
        return
    run = world.sandbox("touch ran.txt", options=(*LANDLOCK, "--required"))
    assert run.returncode == 125
    assert f"Landlock cannot keep {world.guarded} read-only" in run.stderr
    assert not (world.project / "ran.txt").exists()
    run = world.sandbox("touch ran.txt", options=LANDLOCK)
    assert run.returncode == 0
    assert f"Landlock cannot keep {world.guarded} read-only" in run.stderr  # a warning


def test_tripwires_are_checked_after_a_landlock_run(
    world: World, request: pytest.FixtureRequest
) -> None:
    """A planted `.envrc` (direnv runs it outside) and `.git/commondir` (git outside reads
    its configuration from a directory the command made) do not survive a Landlock run:
    moved aside when it ends, as after a bubblewrap run — and they are not among the
    "cannot keep … read-only" warnings."""
    if rerun_as_nobody(request, outside=True):
        return
    envrc, commondir = world.project / ".envrc", world.project / ".git" / "commondir"
    run = world.sandbox(
        "echo 'touch planted' > .envrc && echo ../evilgit > .git/commondir && echo ran",
        options=LANDLOCK,
    )
    assert run.returncode == 0 and run.stdout == "ran\n", run
    assert not envrc.exists() and not commondir.exists(), run
    assert f"moved {envrc} the command created to" in run.stderr
    assert f"moved {commondir} the command created to" in run.stderr
    assert f"cannot keep {envrc}" not in run.stderr
    assert f"cannot keep {commondir}" not in run.stderr
    assert f"Landlock cannot keep {world.project / '.git' / 'config'} read-only" in run.stderr


def test_split_tree_grants_siblings_and_loses_ancestors(world: World) -> None:
    (world.home / "docs").mkdir()
    grants, lost = landlock.split_tree(str(world.home), [str(world.home / ".ssh")])
    assert str(world.home / "docs") in grants
    assert str(world.home / ".ssh") not in grants
    assert lost == [str(world.home)]


def test_network_off_blocks_tcp_under_landlock(
    world: World, request: pytest.FixtureRequest
) -> None:
    import socket

    if rerun_as_nobody(request, outside=True):
        return

    if landlock.abi_version() < 4:
        pytest.skip("Landlock network rules need ABI 4")
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nnetwork = "off"\n')
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        run = world.sandbox(f'{sys.executable} -c "{probe}"', options=LANDLOCK)
    assert run.returncode == 1, run
    assert "PermissionError" in run.stderr
    assert "Landlock blocks TCP only" in run.stderr  # the warning says what is not covered


def test_a_background_job_holding_stderr_does_not_hold_askgate(
    world: World, request: pytest.FixtureRequest
) -> None:
    if rerun_as_nobody(request, outside=True):
        return
    # Without bwrap's PID namespace a background job outlives the command; askgate must
    # still return the command's own status promptly (the job is killed below).
    marker = world.base / "bg.pid"
    run = world.sandbox(
        f"sleep 300 >/dev/null & echo $! > {marker}; exit 4", options=LANDLOCK, timeout=60
    )
    try:
        assert run.returncode == 4, run
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(marker.read_text()), 9)


def test_the_fallback_refuses_root_and_runs_in_a_session_without_capabilities(
    world: World, request: pytest.FixtureRequest
) -> None:
    if os.geteuid() == 0:
        run = world.sandbox("touch ran.txt", options=LANDLOCK)
        assert run.returncode == 125, run
        assert "does not run commands as root" in run.stderr
        assert not (world.project / "ran.txt").exists()
    if rerun_as_nobody(request, outside=True):
        return
    # As an ordinary user: its own session (no controlling terminal to type into), no
    # capabilities, the seccomp filter in place.
    run = world.sandbox(
        f"{sys.executable} -c 'import os; print(os.getsid(0) == os.getpgid(0))'; "
        "grep -E '^(CapEff|CapPrm|Seccomp):' /proc/self/status",
        options=LANDLOCK,
    )
    assert run.returncode == 0, run
    assert "True" in run.stdout
    assert "CapEff:\t0000000000000000" in run.stdout and "CapPrm:\t0000000000000000" in run.stdout
    assert "Seccomp:\t2" in run.stdout

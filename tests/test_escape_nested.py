"""Escape attempts: protected names made *below* the project root, and the time checks
around them (issue 20, class 2's nested case; docs/sandbox.md, "Protected names below
the root").

A protected name missing in a subdirectory (`sub/.envrc`, `pkg/.npmrc`, a nested
repository's `.git/config`) has no mount; the plan watches the directories its walk
listed by their change time and the tail moves aside what the command made there
(sandbox/treewatch.py). Each test runs the attack through the CLI and the prepared
wrapper, in a world outside every scratch directory, and asserts the harm: the file is
not there after the run, or git outside ran nothing.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_world import require_bwrap
from test_escape_round2 import World, _fsmonitor, outside_world, user_site
from unprivileged_rerun import outside_scratch_dir
from waits import SAFETY_TIMEOUT

MODES = ["cli", "hook"]


@pytest.fixture
def world() -> Iterator[World]:
    yield from outside_world("askgate-nested-")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "name",
    [
        "sub/.envrc",  # direnv runs it on `cd sub`
        "pkg/.npmrc",  # npm reads it in pkg/
        "lib/.gitattributes",  # filter drivers
        "src/.claude/settings.json",  # an agent started in src/
        "made/by/the/command/.envrc",  # below directories the command made
        "tools/.github/workflows/ci.yml",  # a protected directory, not only a file
    ],
)
def test_a_protected_name_cannot_be_made_below_the_root(world: World, mode: str, name: str) -> None:
    for existing in ("sub", "pkg", "lib", "src", "tools"):
        (world.project / existing).mkdir()
    path = world.project / name
    done = world.run(mode, f"mkdir -p {path.parent} && echo 'touch {world.marker}' > {path}")
    assert done.returncode == 0, done.stderr
    assert not path.exists(), f"{name} was made inside and left in place"
    top = world.project / name.split("/")[0]
    blocked = [p for p in top.rglob("*.askgate-blocked*")]
    assert blocked, "what the command made is kept aside, not lost"


@pytest.mark.parametrize("mode", MODES)
def test_a_renamed_directory_does_not_hide_a_new_protected_name(world: World, mode: str) -> None:
    """`mv sub sub-old && mkdir sub`: the path is watched, not the inode."""
    (world.project / "sub" / "deep").mkdir(parents=True)
    world.run(mode, "mv sub sub-old && mkdir -p sub/deep && echo 'echo hi' > sub/deep/.envrc")
    assert not (world.project / "sub" / "deep" / ".envrc").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_symlink_to_a_protected_name_elsewhere_is_moved_aside(world: World, mode: str) -> None:
    """The name is reached through a link the command made into a scratch directory."""
    (world.project / "sub").mkdir()
    scratch = f"/tmp/askgate-nested-{os.getpid()}-{mode}"
    world.run(
        mode,
        f"mkdir -p {scratch} && echo 'echo hi' > {scratch}/.envrc && ln -s {scratch} sub/lib",
    )
    shutil.rmtree(scratch, ignore_errors=True)
    assert not (world.project / "sub" / "lib").is_symlink()


@pytest.mark.parametrize("mode", MODES)
def test_a_nested_repository_missing_its_config_does_not_get_one(world: World, mode: str) -> None:
    nested = world.project / "vendor" / "lib"
    subprocess.run(["git", "init", "-q", str(nested)], check=True, env=world.env)
    (nested / ".git" / "config").unlink()
    shutil.rmtree(nested / ".git" / "hooks")
    hook = f"#!/bin/sh\ntouch {world.marker}\n"
    world.run(
        mode,
        f"printf '%s' {shlex.quote(_fsmonitor(world.marker))} > vendor/lib/.git/config; "
        f"mkdir -p vendor/lib/.git/hooks && printf '%s' {shlex.quote(hook)} "
        "> vendor/lib/.git/hooks/pre-commit && chmod +x vendor/lib/.git/hooks/pre-commit; true",
    )
    for args in (["status", "--porcelain"], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *args], cwd=nested, env=world.env, capture_output=True)
    assert not world.marker.exists(), "git in the nested repository ran the command's code"


@pytest.mark.parametrize("mode", MODES)
def test_a_repository_the_command_makes_is_its_own(world: World, mode: str) -> None:
    """`git init x` must keep working: a new repository's config is not moved aside
    (its code runs only where *you* run git in it: docs/sandbox.md)."""
    done = world.run(mode, "git init -q made && git -C made config user.name someone")
    assert done.returncode == 0, done.stderr
    assert (world.project / "made" / ".git" / "config").is_file()


@pytest.mark.parametrize("mode", MODES)
def test_ordinary_files_made_below_the_root_stay(world: World, mode: str) -> None:
    (world.project / "src").mkdir()
    done = world.run(mode, "mkdir -p src/pkg build && echo x > src/pkg/mod.py && echo y > build/o")
    assert done.returncode == 0, done.stderr
    assert (world.project / "src" / "pkg" / "mod.py").read_text() == "x\n"
    assert "askgate sandbox: moved" not in done.stderr


@pytest.mark.parametrize(("mode", "sign"), [("hook", signal.SIGTERM), ("cli", signal.SIGKILL)])
def test_an_interrupted_run_leaves_no_new_protected_name_below(
    world: World, mode: str, sign: signal.Signals
) -> None:
    (world.project / "sub").mkdir()
    world.interrupted(mode, "echo 'echo hi' > sub/.envrc", sign)
    world.sweep()  # the next askgate process
    assert not (world.project / "sub" / ".envrc").exists()


# --- the time checks: change times, which a command cannot set back ------------------------


@pytest.mark.parametrize("mode", MODES)
def test_setting_a_directory_time_back_does_not_hide_a_new_name(world: World, mode: str) -> None:
    (world.project / "sub").mkdir()
    world.run(mode, "echo 'echo hi' > sub/.envrc; touch -d 2000-01-01 sub . ; true")
    assert not (world.project / "sub" / ".envrc").exists()


@pytest.mark.parametrize("mode", MODES)
def test_setting_the_index_time_back_does_not_hide_a_planted_gitlink(
    world: World, mode: str
) -> None:
    marker = world.marker
    world.run(
        mode,
        "git init -q sub && git -C sub commit -q --allow-empty -m x && "
        f"git -C sub config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "git add sub && touch -d 2000-01-01 .git/index; true",
    )
    world.git("status", "--porcelain")
    assert not marker.exists(), "a gitlink staged with the index's time set back ran code"


@pytest.mark.parametrize("mode", MODES)
def test_setting_the_user_site_time_back_does_not_keep_a_pth_file(world: World, mode: str) -> None:
    python, site = user_site(world)
    site.mkdir(parents=True)
    line = f'import os; os.system("touch {world.marker}")'
    world.run(
        mode,
        f"echo {shlex.quote(line)} > {site}/evil.pth; touch -d 2000-01-01 {site}; true",
    )
    subprocess.run([python, "-c", "pass"], env=world.env, check=True)
    assert not world.marker.exists(), "a .pth planted with its directory's time set back ran"


# --- .git/modules: a repository planted in one run, staged in a later one ----------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("modules_existed", [False, True])
def test_a_repository_planted_in_git_modules_is_defused_before_a_later_run_stages_it(
    world: World, mode: str, modules_existed: bool
) -> None:
    """Run 1 makes a repository in `.git/modules` whose config runs a program; a later
    run stages a gitlink to it (its config then did not change during *that* run, and
    lies where a submodule's own configuration lives). It is defused when run 1 ends."""
    from askgate.sandbox.gitconfig import runs_programs

    if modules_existed:
        (world.project / ".git" / "modules" / "real").mkdir(parents=True)
    config = shlex.quote(_fsmonitor(world.marker))
    done = world.run(
        mode,
        "mkdir -p .git/modules && git init -q --separate-git-dir .git/modules/evil w && "
        "git -C w commit -q --allow-empty -m x && "
        f"printf '%s' {config} > .git/modules/evil/config && echo planted",
    )
    assert "planted" in done.stdout, done.stderr
    planted = world.project / ".git" / "modules" / "evil" / "config"
    assert not planted.exists() or not runs_programs(str(planted), world.env)
    world.run(mode, "git add w; true")  # a later run
    world.git("status", "--porcelain")
    assert not world.marker.exists(), "git status outside ran a planted module's code"


def test_the_gitlink_check_assumes_every_repository_when_the_index_cannot_be_listed(
    tmp_path: Path,
) -> None:
    """A listing that fails (an index the command broke): the tail does not take "no
    gitlinks" for an answer; every repository below the worktree counts."""
    from askgate.sandbox import gitconfig
    from askgate.sandbox.tripwires import _planted_gitlink_configs, index_tripwire

    project = tmp_path / "proj"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    entry = index_tripwire(str(project / ".git"), str(project), [str(project)])
    assert entry is not None
    planted = project / "sub"
    subprocess.run(["git", "init", "-q", str(planted)], check=True)
    (planted / ".git" / "config").write_text(_fsmonitor(tmp_path / "ran"))
    (project / ".git" / "index").write_bytes(b"not an index")
    assert gitconfig.gitlinks(str(project), {"PATH": "/usr/bin"}) is None
    assert _planted_gitlink_configs(entry) == [str(planted / ".git" / "config")]


# --- as an unprivileged user, on bubblewrap and on Landlock --------------------------------


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
def test_unprivileged_a_protected_name_below_the_root_is_moved_aside(
    request: pytest.FixtureRequest, backend: str
) -> None:
    """As nobody (Landlock refuses root; as root this reruns as nobody). The Landlock
    fallback has no PID namespace, but it records and checks the watch the same way."""
    from test_escape_round2 import LANDLOCK_ON, PERMISSIVE
    from unprivileged_rerun import rerun_as_nobody

    if rerun_as_nobody(request, outside=True):
        return
    from askgate.sandbox import landlock

    if backend == "landlock" and landlock.abi_version() < 1:
        pytest.skip("Landlock is not available in this kernel")
    require_bwrap()
    base = Path(outside_scratch_dir("askgate-nested-"))
    nobody = World(base, policy=LANDLOCK_ON if backend == "landlock" else PERMISSIVE)
    try:
        (nobody.project / "sub").mkdir()
        done = subprocess.run(
            [
                *[sys.executable, "-m", "askgate.cli", "sandbox", "--backend", backend, "--"],
                "mkdir -p sub/new && echo 'echo hi' > sub/new/.envrc && echo hi > sub/.npmrc",
            ],
            cwd=nobody.project,
            env=nobody.env,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
        assert done.returncode == 0, done.stderr
        assert not (nobody.project / "sub" / "new" / ".envrc").exists()
        assert not (nobody.project / "sub" / ".npmrc").exists()
    finally:
        shutil.rmtree(base, ignore_errors=True)

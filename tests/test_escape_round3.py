"""Escapes from askgate's sandbox found in round 3 of issue 20 (red team), as tests that
assert the harm did NOT happen: code planted by a sandboxed command does not run outside,
a file outside the writable roots is unchanged.

A test marked `xfail(strict=True)` is an escape that still works (its reason says what
escapes and how); the marker goes once the class is closed. /work/redteam-findings.md has
the reproducers and the suggested fix classes. The world is round 2's (`World`: a HOME, a
git project and askgate's own directories outside every scratch directory); commands reach
the sandbox through `askgate sandbox --` (cli) and the wrapper a hook prepares (hook).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_world import connect_probe, unix_listener
from test_escape_round2 import World, _fsmonitor, _init_policy, outside_world, user_site
from waits import SAFETY_TIMEOUT, wait_until


@pytest.fixture
def world() -> Iterator[World]:
    yield from outside_world("askgate-escape3-")


def _user_site(world: World) -> tuple[str, Path]:
    return user_site(world)


def _later_than(path: Path) -> None:
    """Let the clock pass `path`'s change time by more than the tripwires' slack (1 s):
    the two runs of an attack are an agent's two tool calls, seconds apart in practice."""
    from askgate.sandbox.tripwires import CLOCK_SLACK_S

    changed = path.lstat().st_ctime
    wait_until(lambda: time.time() > changed + CLOCK_SLACK_S + 0.2, "the clock to move on")


def _outside_git(world: World, *args: str) -> None:
    """What the user types afterwards, outside any sandbox."""
    subprocess.run(
        ["git", *args],
        cwd=world.project,
        env=world.env,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )


# --- finding 1: usercustomize.py in the user site directory -----------------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_new_usercustomize_in_the_user_site_does_not_run_outside(world: World, mode: str) -> None:
    python, site = _user_site(world)
    line = f'import os; os.system("touch {world.marker}")'
    world.run(mode, f"mkdir -p {site} && echo {shlex.quote(line)} > {site}/usercustomize.py; true")
    subprocess.run([python, "-c", "pass"], env=world.env, check=True)
    assert not world.marker.exists(), "a usercustomize.py planted inside ran in a python outside"


# --- finding 2: a .pth made in an earlier run, reached through a symlinked site dir -----


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_symlinked_user_site_to_an_old_pth_does_not_run_outside(world: World, mode: str) -> None:
    python, site = _user_site(world)
    stash = world.home / ".local" / "stash"
    line = f'import os; os.system("touch {world.marker}")'
    world.run(mode, f"mkdir -p {stash} && echo {shlex.quote(line)} > {stash}/evil.pth; true")
    _later_than(stash / "evil.pth")
    link = os.path.relpath(stash, site.parent)
    world.run(mode, f"mkdir -p {site.parent} && ln -s {link} {site}; true")
    subprocess.run([python, "-c", "pass"], env=world.env, check=True)
    assert not world.marker.exists(), "a .pth reached through a symlinked site dir ran outside"


# --- finding 3/4: a gitlink whose .git the index tripwire cannot read ---------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_gitlink_whose_dot_git_is_a_symlink_does_not_run_code_outside(
    world: World, mode: str
) -> None:
    marker = world.marker
    world.run(
        mode,
        "git init -q m && git -C m commit -q --allow-empty -m x && mv m/.git .cache-m && "
        f"ln -s ../.cache-m m/.git && git -C m config core.fsmonitor "
        f"{shlex.quote(f'touch {marker}; echo')} && git add m; true",
    )
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists(), "a gitlink's symlinked .git ran its fsmonitor outside"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_gitlink_whose_git_dir_has_a_commondir_does_not_run_code_outside(
    world: World, mode: str
) -> None:
    marker = world.marker
    world.run(
        mode,
        "git init -q m && git -C m commit -q --allow-empty -m x && mv m/.git .cache-c && "
        "mkdir m/.git && cp .cache-c/HEAD m/.git/ && echo ../../.cache-c > m/.git/commondir && "
        f"git -C .cache-c config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "git add m; true",
    )
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists(), "a gitlink's commondir config ran its fsmonitor outside"


# --- finding 5: the tail step renames a file outside every writable root ------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_the_tail_step_does_not_rename_a_git_config_outside_the_writable_roots(
    world: World, mode: str
) -> None:
    _init_policy(world)
    other = world.base / "other-repo"
    subprocess.run(["git", "init", "-q", str(other)], check=True, env=world.env)
    config = other / ".git" / "config"
    with config.open("a") as handle:
        handle.write("[core]\n\teditor = vim\n")
    before = config.read_text()
    world.run(
        mode,
        "git init -q m && git -C m commit -q --allow-empty -m x && git add m && "
        f"rm -rf m/.git && echo 'gitdir: {other}/.git' > m/.git; true",
    )
    assert config.exists() and config.read_text() == before, "the tail moved another repo's config"


# --- finding 6: git configuration keys whose paths are not frozen ------------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_the_git_template_directory_the_global_config_names_stays_frozen(
    world: World, mode: str
) -> None:
    templates = world.home / ".git-templates"
    (templates / "hooks").mkdir(parents=True)
    (world.home / ".gitconfig").write_text(f"[init]\n\ttemplateDir = {templates}\n")
    hook = templates / "hooks" / "post-checkout"
    world.run(
        mode,
        f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > {hook} && chmod +x {hook}; true",
    )
    subprocess.run(
        ["git", "clone", "-q", str(world.project), str(world.base / "clone")],
        env=world.env,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert not world.marker.exists(), "a hook planted in the template directory ran outside"


# --- finding 7: a link tripwire re-pointed through a second symlink -----------------------


@pytest.mark.xfail(
    strict=True,
    reason="a link tripwire is intact when the name is a symlink to the same file (`-ef`): "
    "run 1 re-points `.git/hooks` through a symlink of its own (`../evil-link/hooks`, "
    "evil-link -> tools: the same directory), which no later plan pins or refuses; run 2 "
    "re-points evil-link, and git outside runs the hooks there",
)
def test_a_symlinked_hooks_directory_cannot_be_redirected_through_another_link(
    world: World,
) -> None:
    hooks = world.project / ".git" / "hooks"
    shutil.rmtree(hooks)
    (world.project / "tools" / "hooks").mkdir(parents=True)
    hooks.symlink_to("../tools/hooks")
    world.run(
        "hook", "rm .git/hooks && ln -s tools evil-link && ln -s ../evil-link/hooks .git/hooks"
    )
    world.run(
        "hook",
        "rm evil-link && mkdir -p evil/hooks && ln -s evil evil-link && "
        f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > evil/hooks/pre-commit && "
        "chmod +x evil/hooks/pre-commit; true",
    )
    _outside_git(world, "commit", "-q", "--allow-empty", "-m", "outside")
    assert not world.marker.exists(), "a hook reached through a re-pointed link ran outside"


# --- finding 8: the index tripwire trusts the time of what .git/index points to -----------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_an_index_symlinked_to_one_built_earlier_does_not_run_code_outside(
    world: World, mode: str
) -> None:
    marker = world.marker
    world.run(
        mode,
        "git init -q m && git -C m commit -q --allow-empty -m x && "
        f"git -C m config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "cp .git/index stash-index && GIT_INDEX_FILE=$PWD/stash-index git add m 2>/dev/null; true",
    )
    _later_than(world.project / "stash-index")
    world.run(mode, "rm .git/index && ln -s ../stash-index .git/index; true")
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists(), "a gitlink in a symlinked index ran its fsmonitor outside"


# --- finding 9: what frozen startup files run, and startup directories not on the list ----


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_script_the_frozen_bashrc_sources_stays_frozen(world: World, mode: str) -> None:
    nvm = world.home / ".nvm" / "nvm.sh"
    nvm.parent.mkdir()
    nvm.write_text("# nvm\n")
    (world.home / ".bashrc").write_text('[ -s "$HOME/.nvm/nvm.sh" ] && . "$HOME/.nvm/nvm.sh"\n')
    world.run(mode, f"echo 'touch {world.marker}' >> {nvm}; true")
    subprocess.run(
        ["bash", "-ic", "true"], env=world.env, capture_output=True, timeout=SAFETY_TIMEOUT
    )
    assert not world.marker.exists(), "a script ~/.bashrc sources ran the command's code"


def test_a_vim_plugin_planted_inside_does_not_run_outside(world: World) -> None:
    vim = shutil.which("vim")
    if vim is None:
        pytest.skip("vim is not installed")
    plugin = world.home / ".vim" / "plugin" / "x.vim"
    world.run(
        "hook",
        f"mkdir -p {plugin.parent} && echo 'call system(\"touch {world.marker}\")' > {plugin}",
    )
    subprocess.run(
        [vim, "--not-a-term", "-c", "qa!"],
        env={**world.env, "TERM": "dumb"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert not world.marker.exists(), "a vim plugin planted inside ran outside"


# --- finding 14: Unix sockets of programs outside (/tmp is the host's) --------------------


@pytest.fixture
def tmux_server(world: World) -> Iterator[str]:
    """The user's tmux server outside (its socket in the default /tmp/tmux-UID/), as when
    the agent runs in a tmux pane."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("tmux is not installed")
    name = f"askgate-escape3-{os.getpid()}"
    env = {k: v for k, v in world.env.items() if k != "TMUX"}
    directory = f"{os.environ.get('TMUX_TMPDIR', '/tmp')}/tmux-{os.getuid()}"
    existed = os.path.lexists(directory)
    subprocess.run(
        [tmux, "-L", name, "new-session", "-d", "-s", "user", "sleep 600"],
        env=env,
        check=True,
        timeout=SAFETY_TIMEOUT,
    )
    try:
        yield name
    finally:
        subprocess.run([tmux, "-L", name, "kill-server"], env=env, capture_output=True)
        with contextlib.suppress(OSError):
            os.unlink(f"{directory}/{name}")
        if not existed:  # a socket directory left in /tmp is hidden in every later plan
            with contextlib.suppress(OSError):
                os.rmdir(directory)


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize("policy", ["permissive", "init"])
def test_the_users_tmux_server_does_not_run_a_command_for_the_sandbox(
    world: World, tmux_server: str, mode: str, policy: str
) -> None:
    if policy == "init":
        _init_policy(world)
    # run-shell waits for CMD: when the sandboxed command returns, the harm is done or not.
    world.run(mode, f"tmux -L {tmux_server} run-shell 'touch {world.marker}'; true")
    assert not world.marker.exists(), "the user's tmux server ran the command's code outside"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_flooded_tmp_does_not_push_the_tmux_server_out_of_sight(
    world: World, tmux_server: str, mode: str
) -> None:
    """An earlier command fills /tmp with entries so that a bounded listing would stop
    before `tmux-UID`; the next command asks the user's tmux server to run its code."""
    flood = f"/tmp/askgate-flood-{os.getpid()}-{mode}"
    world.run(mode, f"for i in $(seq 20000); do : > {flood}-$i; done; true")
    try:
        world.run(mode, f"tmux -L {tmux_server} run-shell 'touch {world.marker}'; true")
    finally:
        for name in os.listdir("/tmp"):
            if name.startswith(os.path.basename(flood) + "-"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join("/tmp", name))
    assert not world.marker.exists(), "the user's tmux server ran the command's code outside"


@pytest.mark.xfail(
    strict=True,
    reason="a read-only bind does not stop connect(): a Unix socket in a directory the "
    "sandbox cannot write (as /run/dbus/system_bus_socket, /run/systemd/private, "
    "/run/screen; not on this machine) is connectable inside; only container runtimes' "
    "sockets are masked",
)
def test_a_unix_socket_outside_the_writable_roots_is_not_connectable(world: World) -> None:
    path = str(world.base / "run-sockets" / "bus")
    with unix_listener(path) as accepted:
        done = world.run("hook", f"{connect_probe(path)}; true")
    assert "CONNECTED" not in done.stdout and not accepted, done


# --- finding 10: a python whose version is not in the system directories ----------------


def _python_outside_the_system_dirs() -> str | None:
    """An interpreter (pyenv, uv, conda, asdf) whose `python3.N` is in none of the system
    directories the glob tripwires look at."""
    import glob
    import re

    system = {
        name
        for directory in ("/usr/bin", "/usr/local/bin", "/bin")
        if os.path.isdir(directory)
        for name in os.listdir(directory)
        if re.fullmatch(r"python3\.\d+", name)
    }
    home = os.environ.get("HOME", "/root")
    candidates = glob.glob(f"{home}/.pyenv/versions/*/bin/python3.*")
    candidates += glob.glob(f"{home}/.local/share/uv/python/*/bin/python3.*")
    for candidate in sorted(candidates):
        name = os.path.basename(candidate)
        if re.fullmatch(r"python3\.\d+", name) and name not in system:
            return candidate
    return None


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_pth_for_a_python_outside_the_system_dirs_does_not_run_outside(
    world: World, mode: str
) -> None:
    python = _python_outside_the_system_dirs()
    if python is None:
        pytest.skip("no python3.N outside the system directories (pyenv, uv) here")
    found = subprocess.run(
        [python, "-c", "import site; print(site.getusersitepackages())"],
        env=world.env,
        capture_output=True,
        text=True,
        check=True,
    )
    site = found.stdout.strip()
    line = f'import os; os.system("touch {world.marker}")'
    world.run(mode, f"mkdir -p {site} && echo {shlex.quote(line)} > {site}/evil.pth; true")
    subprocess.run([python, "-c", "pass"], env=world.env, check=True)
    assert not world.marker.exists(), "a .pth planted inside ran in a python outside"


# --- finding 11: git state a command the user types later continues ----------------------


@pytest.mark.xfail(
    strict=True,
    reason="an interactive rebase left stopped (`break`, then `exec CMD`) in the writable "
    ".git: the user's `git rebase --continue` outside runs CMD (git status even suggests it)",
)
def test_a_rebase_left_in_progress_does_not_run_the_commands_code_outside(world: World) -> None:
    todo = f"break\\nexec touch {world.marker}\\n"
    world.run(
        "hook",
        "git commit -q --allow-empty -m two && "
        f"GIT_SEQUENCE_EDITOR=\"printf '{todo}' >\" git rebase -q -i HEAD~1; true",
    )
    subprocess.run(
        ["git", "rebase", "--continue"],
        cwd=world.project,
        env={**world.env, "GIT_EDITOR": "true"},
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
        check=False,
    )
    assert not world.marker.exists(), "a rebase todo left by the command ran outside"


# --- finding 12/13: an existing submodule is a way into git status outside -------------


def _with_submodule(world: World) -> None:
    """The project has a submodule `upstream` (its git dir in .git/modules/upstream)."""
    upstream = world.base / "upstream"
    subprocess.run(["git", "init", "-q", str(upstream)], check=True, env=world.env)
    subprocess.run(
        ["git", "-C", str(upstream), "commit", "-q", "--allow-empty", "-m", "u"],
        check=True,
        env=world.env,
    )
    added = world.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream))
    assert added.returncode == 0, added.stderr
    world.git("commit", "-qm", "submodule")
    _later_than(world.project / ".git" / "index")  # the user's last git command was earlier


@pytest.mark.xfail(
    strict=True,
    reason="the index tripwire watches the project's own index only: a gitlink staged in an "
    "existing submodule's index (.git/modules/NAME/index, writable) to a repository with "
    "core.fsmonitor is reached by git status outside, which recurses through the submodule",
)
@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_gitlink_staged_inside_an_existing_submodule_does_not_run_code_outside(
    world: World, mode: str
) -> None:
    _with_submodule(world)
    marker = world.marker
    world.run(
        mode,
        "cd upstream && git init -q evil && git -C evil commit -q --allow-empty -m x && "
        f"git -C evil config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "git add evil; true",
    )
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists(), "a gitlink inside a submodule ran its fsmonitor outside"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_an_existing_submodules_dot_git_file_cannot_be_re_pointed(world: World, mode: str) -> None:
    _with_submodule(world)
    marker = world.marker
    fsmonitor = shlex.quote(f"touch {marker}; echo")
    world.run(
        mode,
        "cp -r .git/modules/upstream .evil-gd && "
        "git config --file .evil-gd/config core.worktree ../upstream && "
        f"git config --file .evil-gd/config core.fsmonitor {fsmonitor} && "
        "echo 'gitdir: ../.evil-gd' > upstream/.git; true",
    )
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists(), "a re-pointed submodule .git ran the command's fsmonitor outside"


@pytest.mark.xfail(
    strict=True,
    reason="the index tripwire watches the main worktree's index only: a linked worktree "
    "kept inside the project (`git worktree add .wt/feature`) has its index in "
    ".git/worktrees/feature/, and a gitlink staged there runs on git status in it",
)
@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_gitlink_staged_in_a_linked_worktree_does_not_run_code_outside(
    world: World, mode: str
) -> None:
    added = world.git("worktree", "add", "-q", ".wt/feature")
    assert added.returncode == 0, added.stderr
    _later_than(world.project / ".git" / "index")
    marker = world.marker
    world.run(
        mode,
        "cd .wt/feature && git init -q m && git -C m commit -q --allow-empty -m x && "
        f"git -C m config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "git add m; true",
    )
    subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=world.project / ".wt" / "feature",
        env=world.env,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert not marker.exists(), "a gitlink in a linked worktree ran its fsmonitor outside"


# --- attempts that held ------------------------------------------------------------------


def test_the_command_sees_no_descriptor_or_process_of_the_wrapper(world: World) -> None:
    """The wrapper shell runs outside bwrap: its status descriptor (3), the seccomp file
    (4) and its process must not reach the command."""
    done = world.run(
        "hook",
        "for f in /proc/self/fd/*; do echo fd $(readlink $f); done; "
        "for p in /proc/[0-9]*; do echo proc $(tr '\\0' ' ' < $p/cmdline); done",
    )
    assert done.returncode == 0, done
    fds = [line for line in done.stdout.splitlines() if line.startswith("fd ")]
    assert not [fd for fd in fds if "/runs/" in fd or ".bpf" in fd], fds
    procs = [line for line in done.stdout.splitlines() if line.startswith("proc ")]
    assert not [p for p in procs if "askgate-sandbox" in p], "the wrapper is visible inside"


@pytest.mark.parametrize(
    "payload",
    [
        # the tail moves a tripwire aside: a planted `.envrc.askgate-blocked` symlink chain
        # must not make it write through a link
        "ln -s {victim} .envrc.askgate-blocked && echo planted > .envrc",
        # `.git/commondir` as a symlink to the user's file: moved, never followed
        "ln -s {victim} .git/commondir",
    ],
)
def test_moving_a_tripwire_aside_never_writes_through_a_planted_link(
    world: World, payload: str
) -> None:
    victim = world.base / "victim.txt"
    victim.write_text("the user's\n")
    world.run("hook", payload.format(victim=victim) + "; true")
    assert victim.read_text() == "the user's\n"
    assert not (world.project / ".envrc").exists()
    assert not (world.project / ".git" / "commondir").exists()


def test_a_fifo_at_a_tripwire_name_does_not_hang_the_tail(world: World) -> None:
    """The tail moves names aside without opening them."""
    done = world.run("hook", "mkfifo .envrc .git/commondir; true")
    assert done.returncode == 0, done
    assert not (world.project / ".envrc").exists()


def test_a_gitlink_config_planted_inside_the_project_is_still_defused(world: World) -> None:
    """The plain case of round 2 (a nested repository with core.fsmonitor, staged) stays
    held: the findings above are around it, not through it."""
    marker = world.marker
    world.run(
        "hook",
        "git init -q m && git -C m commit -q --allow-empty -m x && "
        f"git -C m config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && git add m; true",
    )
    _outside_git(world, "status", "--porcelain")
    assert not marker.exists()


def test_the_xdg_git_config_cannot_be_created_next_to_an_existing_ignore_file(
    world: World,
) -> None:
    """`~/.config/git/` exists (an `ignore` file), `config` does not: it must not be
    creatable (git reads it as the global configuration)."""
    git_dir = world.config_home / "git"
    git_dir.mkdir()
    (git_dir / "ignore").write_text("*.o\n")
    world.run("hook", f"printf '%s' {shlex.quote(_fsmonitor(world.marker))} > {git_dir}/config")
    _outside_git(world, "status", "--porcelain")
    assert not world.marker.exists()


def test_an_existing_submodules_hooks_stay_frozen(world: World) -> None:
    _with_submodule(world)
    hook = ".git/modules/upstream/hooks/pre-commit"
    world.run("hook", f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > {hook} && chmod +x {hook}")
    subprocess.run(
        ["git", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=world.project / "upstream",
        env=world.env,
        capture_output=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert not world.marker.exists()

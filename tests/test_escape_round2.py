"""Escapes from askgate's sandbox found in round 2 of issue 20 (red team), as tests that
assert the harm did NOT happen: code planted by a sandboxed command does not run
outside, a file outside is unchanged, a secret is not read.

Each section is one class of escape (numbered as the red team's round-2 findings of issue
20). A test marked `xfail(strict=True)` is an escape that still works: its reason says
what escapes and why it is out of reach, and docs/sandbox.md ("What stays out of reach")
lists it; the marker goes once the class is closed. The world lives outside every
directory the sandbox makes writable by itself (/tmp, /var/tmp): under /srv for root,
else under ~/.cache (`outside_scratch_dir`), with its HOME there too. Commands reach the
sandbox the ways an agent's command does: `askgate sandbox --` (cli), the wrapper a hook
prepares (`sandbox_rewrite`, run by bash: hook) and, for some, the real `askgate hook
claude-code` and the command it hands back (claude-code).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_world import OutsideWorld, connect_probe, require_bwrap, unix_listener
from unprivileged_rerun import outside_scratch_dir
from waits import SAFETY_TIMEOUT, wait_until

# The escape suite's permissive policy: everything allowed but the secrets; HOME writable.
PERMISSIVE = """\
default = "allow"

[read]
"~/.ssh/**" = "deny"
"**/.env*" = "deny"

[write]
"~/**" = "allow"
".git/**" = "ask"

[sandbox]
bash = "required"
"""


class World(OutsideWorld):
    """A HOME, a git project and askgate's own directories, all outside /tmp; `policy`
    is the user policy (the permissive one by default)."""

    def __init__(self, base: Path, policy: str = PERMISSIVE) -> None:
        super().__init__(base)
        self.marker = base / "RAN-OUTSIDE"
        self.user_policy = self.config_home / "askgate" / "policy.toml"
        self.user_policy.parent.mkdir(parents=True)
        self.user_policy.write_text(policy)
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh" / "id_rsa").write_text("SSH-KEY-ROUND2-1b7e\n")
        self.runtime.mkdir(mode=0o700)
        self.project.mkdir()
        self.git("init", "-q")
        (self.project / "app.py").write_text("print('hi')\n")
        self.git("add", "app.py")
        self.git("commit", "-qm", "one")

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args], cwd=self.project, env=self.env, capture_output=True, text=True
        )

    def argv(self, mode: str, command: str) -> list[str]:
        """How the command reaches the sandbox: `askgate sandbox --` or the prepared
        wrapper (or the launcher form) a hook hands the agent."""
        if mode == "claude-code":
            # The real hook, as Claude Code runs it. The payload is a script the agent
            # wrote first (its Write tool may write the project): what the policy sees
            # is `bash payload.sh`, and what the script does is the kernel's business.
            (self.project / "payload.sh").write_text(command + "\n")
            return ["/bin/bash", "-c", self.claude_code_hook("bash payload.sh")]
        argv, asked = self.sandbox_command(mode, command)
        assert argv is not None, asked
        return argv

    def claude_code_hook(self, command: str) -> str:
        """The command `askgate hook claude-code` hands back for a Bash call."""
        import json

        call = {
            "session_id": "escape-round2",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "cwd": str(self.project),
            "transcript_path": "/dev/null",
            "permission_mode": "default",
        }
        done = subprocess.run(
            [sys.executable, "-m", "askgate", "hook", "claude-code"],
            input=json.dumps(call),
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
        output = json.loads(done.stdout)["hookSpecificOutput"]
        assert output["permissionDecision"] == "allow", output
        return str(output["updatedInput"]["command"])

    def run(self, mode: str, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(mode, command),
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )

    def interrupted(self, mode: str, command: str, sign: signal.Signals) -> None:
        """Run `command` (which touches `ready` when it has done its harm and then waits)
        and signal its whole process group then, as an agent does on a timeout or when
        the user interrupts it (Esc, Ctrl-C)."""
        ready = self.project / "ready"
        proc = subprocess.Popen(
            self.argv(mode, f"{command}; touch ready; exec sleep 600"),
            cwd=self.project,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + SAFETY_TIMEOUT  # against a hang only
            while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert ready.exists(), "the command never got to its harm"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, sign)
            proc.wait(timeout=SAFETY_TIMEOUT)
            ready.unlink(missing_ok=True)


def outside_world(prefix: str, make: type[World] = World) -> Iterator[World]:
    """A world (of class `make`) in a fresh directory outside the scratch dirs, removed
    after: the body of each escape file's `world` fixture."""
    require_bwrap()
    base = Path(outside_scratch_dir(prefix))
    try:
        yield make(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def world() -> Iterator[World]:
    yield from outside_world("askgate-escape2-")


def user_site(world: World) -> tuple[str, Path]:
    """The system python3 and its user site directory in the world's HOME."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 with a user site directory")
    found = subprocess.run(
        [python, "-c", "import site; print(site.getusersitepackages())"],
        env=world.env,
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(found.stdout.strip())
    assert site.is_relative_to(world.home)
    return python, site


def _fsmonitor(marker: Path) -> str:
    """A git config whose fsmonitor hook runs `touch marker` on the next `git status`."""
    return f"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {marker}; echo\n"


# --- finding 1: a gitlink in the writable index reaches a repository the command made ---


@pytest.mark.parametrize("mode", ["cli", "hook", "claude-code"])
def test_a_gitlink_to_a_planted_repository_does_not_run_code_on_git_status_outside(
    world: World, mode: str
) -> None:
    marker = world.marker
    world.run(
        mode,
        "git init -q sub && git -C sub commit -q --allow-empty -m x && "
        f"git -C sub config core.fsmonitor {shlex.quote(f'touch {marker}; echo')} && "
        "git add sub; true",
    )
    world.git("status", "--porcelain")
    world.git("diff", "--stat")
    assert not marker.exists(), "a sandboxed command made the user's git status run its code"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_gitlink_to_a_separate_git_dir_does_not_run_code_on_git_status_outside(
    world: World, mode: str
) -> None:
    """The same through a `.git` *file* naming a git directory elsewhere in the project
    (`.git/modules/` itself is held, but a gitlink may point anywhere)."""
    marker = world.marker
    config = shlex.quote(_fsmonitor(marker))
    world.run(
        mode,
        "git init -q --separate-git-dir .cache-m m && "
        "git -C m commit -q --allow-empty -m x && "
        f"printf '%s' {config} > .cache-m/config && git add m; true",
    )
    world.git("status", "--porcelain")
    assert not marker.exists(), "a sandboxed command made the user's git status run its code"


# --- finding 2: an interrupted run leaves its tripwires sprung ----------------------------


@pytest.mark.parametrize(
    ("mode", "sign"),
    [
        ("hook", signal.SIGTERM),
        ("hook", signal.SIGINT),
        ("claude-code", signal.SIGTERM),
        ("cli", signal.SIGKILL),
    ],
)
def test_an_interrupted_run_does_not_leave_a_planted_commondir(
    world: World, mode: str, sign: signal.Signals
) -> None:
    marker = world.marker
    config = shlex.quote(_fsmonitor(marker))
    world.interrupted(
        mode,
        "mkdir evilgit && cp -r .git/objects .git/refs .git/HEAD evilgit/ && "
        f"printf '%s' {config} > evilgit/config && echo ../evilgit > .git/commondir && "
        "echo 'touch planted' > .envrc",
        sign,
    )
    world.sweep()  # the next askgate process
    world.git("status", "--porcelain")
    assert not marker.exists(), "git outside read its config from the command's directory"
    assert not (world.project / ".git" / "commondir").exists()
    assert not (world.project / ".envrc").exists()


# --- finding 3: the http hook's secret sits readable in the agent's settings file --------

DAEMON_SECRET = "daemon-http-secret-round2-5e0c"


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize("scope", ["user", "project"])
def test_the_http_hook_secret_is_not_readable_inside(world: World, mode: str, scope: str) -> None:
    """`askgate install claude-code --http` puts the daemon's secret in the settings file
    (its X-Askgate-Secret header): with it, a sandboxed command with network forges hook
    calls to the daemon (decisions, asks to the human, review-log records)."""
    import json

    from askgate.install.claude_code import build_handler

    state = world.home / ".local" / "state" / "askgate"
    state.mkdir(parents=True, exist_ok=True)
    (state / "daemon.secret").write_text(DAEMON_SECRET)
    (state / "daemon.secret").chmod(0o600)
    handler = build_handler(
        http=True, timeout=170, on_failure=True, port=47999, secret=DAEMON_SECRET
    )
    settings = {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [handler]}]}}
    where = world.home if scope == "user" else world.project
    path = where / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(settings))
    path.chmod(0o600)
    done = world.run(mode, f"cat {path} {state}/daemon.secret; true")
    assert done.returncode == 0, done
    assert DAEMON_SECRET not in done.stdout + done.stderr, "the daemon's secret was read inside"


# --- finding 4: anywhere-patterns hold nothing created below the project root -----------


def _init_policy(world: World) -> None:
    """The policy `askgate init` writes for this project (sandboxed-project profile,
    `bash = "required"`), and no user policy."""
    world.user_policy.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "init", "--project", "--yes"],
        cwd=world.project,
        env=world.env,
        capture_output=True,
        text=True,
        timeout=SAFETY_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_new_pth_file_in_the_user_site_does_not_run_in_pythons_outside(
    world: World, mode: str
) -> None:
    """`**/*.pth` is a built-in persistence ask: read-only inside. A new one in the user
    site directory runs in every python of this user outside."""
    python, site = user_site(world)
    line = f'import os; os.system("touch {world.marker}")'
    world.run(mode, f"mkdir -p {site} && echo {shlex.quote(line)} > {site}/evil.pth; true")
    subprocess.run([python, "-c", "pass"], env=world.env, check=True)
    assert not world.marker.exists(), "a .pth planted inside ran in a python outside"
    assert not (site / "evil.pth").exists()


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize(
    "name",
    [
        "src/.claude/settings.json",
        "src/.codex/config.toml",
        "src/.gemini/settings.json",
    ],
)
def test_init_policy_a_registration_file_cannot_be_created_below_the_root(
    world: World, mode: str, name: str
) -> None:
    """The registration files are a built-in *deny* ("no agent may write it") for
    `**/.claude/settings.json` and the like: at any depth, not only at the root."""
    _init_policy(world)
    (world.project / "src").mkdir()
    path = world.project / name
    world.run(mode, f"mkdir -p {path.parent} && echo '{{\"hooks\": {{}}}}' > {path}; true")
    assert not path.exists(), f"{name} was created inside the sandbox"


# --- finding 5: what the agents themselves run later ------------------------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize(
    "name",
    [
        # Claude Code runs a file from here before every Bash command, unasked.
        ".claude/shell-snapshots/snapshot-bash-1-abc.sh",
        ".claude.json",  # mcpServers: stdio commands started with the next session
        ".bash_aliases",  # Debian's .bashrc sources it
        ".local/bin/git",  # ahead of /usr/bin on the user's PATH
    ],
)
def test_files_an_agent_or_shell_runs_later_stay_unchanged(
    world: World, mode: str, name: str
) -> None:
    path = world.home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# the user's\n")
    world.run(mode, f"echo 'touch {world.marker}' >> {path}; true")
    assert path.read_text() == "# the user's\n", f"~/{name} was rewritten inside"


# --- finding 6: Landlock leaves the sockets in hidden directories connectable ------------

LANDLOCK_ON = PERMISSIVE.replace('"~/**" = "allow"\n', "").replace(
    'bash = "required"', 'bash = "on"'
)


def test_landlock_the_ssh_agent_in_a_hidden_directory_cannot_be_used(
    request: pytest.FixtureRequest,
) -> None:
    """As nobody (Landlock refuses root): a real ssh-agent whose socket lies in the
    hidden ~/.ssh; the command names the socket itself (SSH_AUTH_SOCK is unset inside).
    As root this reruns as nobody: the marker then holds for both runs."""
    from unprivileged_rerun import rerun_as_nobody

    if rerun_as_nobody(request, outside=True):
        return
    from askgate.sandbox import landlock

    if landlock.abi_version() < 1:
        pytest.skip("Landlock is not available in this kernel")
    for tool in ("ssh-agent", "ssh-add", "ssh-keygen"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    require_bwrap()
    base = Path(outside_scratch_dir("askgate-escape2-"))
    world = World(base, policy=LANDLOCK_ON)
    agent = None
    try:
        ssh = world.home / ".ssh"
        key = ssh / "id_ed25519"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "hidden-key", "-f", str(key)],
            check=True,
            env=world.env,
        )
        sock = ssh / "agent.sock"
        agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], env=world.env)
        wait_until(sock.exists, "ssh-agent to listen", process=agent)
        env = {**world.env, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)
        done = subprocess.run(
            [
                *[sys.executable, "-m", "askgate.cli", "sandbox", "--backend", "landlock", "--"],
                f"SSH_AUTH_SOCK={sock} ssh-add -L; echo ran",
            ],
            cwd=world.project,
            env=env,
            capture_output=True,
            text=True,
            timeout=SAFETY_TIMEOUT,
        )
        assert "hidden-key" not in done.stdout, "the hidden key's agent answered inside"
    finally:
        if agent is not None:
            agent.kill()
            agent.wait()
        shutil.rmtree(base, ignore_errors=True)


# --- finding 7: a long-running command keeps the plan of its start ----------------------


@pytest.mark.xfail(
    strict=True,
    reason="a command keeps the plan of its start: a .env.production or a repository the "
    "user makes in the project while it runs is neither hidden nor frozen (anywhere-patterns "
    "are expanded when it starts, and no mount can be added to a running sandbox)",
)
@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_background_command_cannot_use_what_appears_while_it_runs(
    world: World, mode: str
) -> None:
    """A secret the user writes and a repository the user clones while a sandboxed
    command runs (a dev server, a watcher) are protected like those that existed."""
    secret = "DB_PASSWORD=appeared-later-55"
    ready, go = world.project / "ready", world.project / "go"
    proc = subprocess.Popen(
        world.argv(
            mode,
            "touch ready; while [ ! -e go ]; do sleep 0.01; done; cat .env.production; "
            f"printf '%s' {shlex.quote(_fsmonitor(world.marker))} >> cloned/.git/config; true",
        ),
        cwd=world.project,
        env=world.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + SAFETY_TIMEOUT  # against a hang only
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ready.exists(), proc.communicate()
        (world.project / ".env.production").write_text(secret + "\n")  # the user, meanwhile
        subprocess.run(["git", "init", "-q", str(world.project / "cloned")], check=True)
        go.touch()
        out, err = proc.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=world.project / "cloned",
        env=world.env,
        capture_output=True,
    )
    assert secret.encode() not in out + err, "a secret made meanwhile was read inside"
    assert not world.marker.exists(), "a repository cloned meanwhile ran the command's code"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_background_process_does_not_outlive_the_command(world: World, mode: str) -> None:
    """What a command leaves running (`cmd &`, `setsid`, `nohup`) would keep the plan of
    its start after the agent moved on: it is gone when the command is (bwrap's PID
    namespace ends with it)."""
    token = f"askgate-orphan-{os.getpid()}-{mode}"
    done = world.run(
        mode,
        f"(exec -a {token} sleep 600) & setsid -f bash -c 'exec -a {token} sleep 600'; "
        f"nohup bash -c 'exec -a {token} sleep 600' >/dev/null 2>&1 & echo started",
    )
    assert "started" in done.stdout, done
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                alive.append(pid)
    for pid in alive:
        with contextlib.suppress(OSError):
            os.kill(int(pid), signal.SIGKILL)
    assert not alive, "a background process of the command outlived it"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_file_the_global_git_config_includes_in_home_stays_frozen(
    world: World, mode: str
) -> None:
    """`~/.gitconfig` is frozen (a built-in ask); the file it includes in the (writable)
    HOME must be too, or it sets core.fsmonitor for every repository of the user."""
    included = world.home / ".gitconfig.local"
    included.write_text("[user]\n")
    (world.home / ".gitconfig").write_text(f"[include]\n\tpath = {included}\n")
    world.run(mode, f"printf '%s' {shlex.quote(_fsmonitor(world.marker))} >> {included}; true")
    world.git("status", "--porcelain")
    assert not world.marker.exists(), "a file ~/.gitconfig includes ran the command's code"


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_a_file_a_submodules_config_includes_stays_frozen(world: World, mode: str) -> None:
    """A submodule's own configuration (`.git/modules/sub/config`, frozen) includes a
    file in the project: `git status` outside recurses into the submodule and reads it."""
    upstream = world.base / "upstream"
    subprocess.run(["git", "init", "-q", str(upstream)], check=True, env=world.env)
    subprocess.run(
        ["git", "-C", str(upstream), "commit", "-q", "--allow-empty", "-m", "u"],
        check=True,
        env=world.env,
    )
    added = world.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream))
    assert added.returncode == 0, added.stderr
    (world.project / ".sub-include").write_text("[user]\n")
    config = world.project / ".git" / "modules" / "upstream" / "config"
    config.write_text(config.read_text() + "[include]\n\tpath = ../../../.sub-include\n")
    world.run(mode, f"printf '%s' {shlex.quote(_fsmonitor(world.marker))} >> .sub-include; true")
    world.git("status", "--porcelain")
    assert not world.marker.exists(), "a file a submodule's config includes ran outside"


def test_a_git_config_rewritten_with_its_old_mtime_is_read_again(tmp_path: Path) -> None:
    """The parse is remembered by the file's bytes: a rewrite in place with the same size,
    inode and mtime (`touch -d` puts the time back) still freezes what it now names."""
    from askgate.sandbox.gitconfig import named_paths

    project = tmp_path / "proj"
    config = project / ".git" / "config"
    config.parent.mkdir(parents=True)
    config.write_text("[core]\n\thooksPath = hooks-abc\n")
    before = named_paths([str(config)], worktree=str(project), env={"HOME": str(tmp_path)})
    assert {path for path, _kind, _why in before} == {str(project / "hooks-abc")}
    stat = config.stat()
    with config.open("r+") as handle:  # same inode, same size
        handle.write("[core]\n\thooksPath = hooks-xyz\n")
    os.utime(config, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again = config.stat()
    assert (again.st_ino, again.st_size, again.st_mtime_ns) == (
        stat.st_ino,
        stat.st_size,
        stat.st_mtime_ns,
    )
    after = named_paths([str(config)], worktree=str(project), env={"HOME": str(tmp_path)})
    assert {path for path, _kind, _why in after} == {str(project / "hooks-xyz")}


def test_the_plan_never_runs_a_git_the_clients_path_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config parse and the gitlink listing run outside any sandbox: without a system
    git they run nothing, never a `git` found on the PATH the client sent."""
    from askgate.sandbox import gitconfig

    planted = tmp_path / "bin" / "git"
    planted.parent.mkdir()
    marker = tmp_path / "ran"
    planted.write_text(f"#!/bin/sh\n/usr/bin/touch {marker}\n")
    planted.chmod(0o755)
    monkeypatch.setattr(gitconfig, "GIT_PATH", str(tmp_path / "no-system-git"))
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n\thooksPath = h\n")
    env = {"HOME": str(tmp_path), "PATH": str(planted.parent)}
    gitconfig.named_paths([str(project / ".git" / "config")], worktree=str(project), env=env)
    gitconfig.gitlinks(str(project), env)
    assert not marker.exists()


def test_what_a_git_config_names_is_resolved_as_git_resolves_it(tmp_path: Path) -> None:
    """Includes relative to the including file, recursively; hooks path and programs
    relative to the worktree; a bare program name (found on PATH) and a boolean fsmonitor
    name no file; the gitlink check counts a bare command as running a program."""
    from askgate.sandbox.gitconfig import named_paths, runs_programs

    git_dir, home = tmp_path / "proj" / ".git", tmp_path / "home"
    (git_dir / "more").mkdir(parents=True)
    (git_dir / "config").write_text(
        '[include]\n\tpath = more/one\n[includeIf "onbranch:x"]\n\tpath = ~/two\n'
        "[alias]\n\tt = !tools/t.sh --flag\n\tl = log\n[core]\n\tfsmonitor = true\n"
    )
    (git_dir / "more" / "one").write_text(
        '[core]\n\thooksPath = hooks-here\n[filter "x"]\n\tclean = "tools/c.sh" %f\n'
        "[include]\n\tpath = three\n"
    )
    (git_dir / "more" / "three").write_text("[core]\n\tsshCommand = ssh -v\n")
    found = named_paths(
        [str(git_dir / "config")], worktree=str(tmp_path / "proj"), env={"HOME": str(home)}
    )
    paths = {path: kind for path, kind, _why in found}
    project = tmp_path / "proj"
    assert paths == {
        str(git_dir / "more" / "one"): "file",
        str(home / "two"): "file",
        str(project / "tools" / "t.sh"): "file",
        str(project / "hooks-here"): "dir",
        str(project / "tools" / "c.sh"): "file",
        str(git_dir / "more" / "three"): "file",
    }
    bare = tmp_path / "bare"
    bare.write_text("[core]\n\tfsmonitor = touch x; echo\n")
    assert runs_programs(str(bare), {})
    bare.write_text("[core]\n\tfsmonitor = false\n[user]\n\tname = x\n")
    assert not runs_programs(str(bare), {})


# --- finding 8: a symlinked protected name is frozen at its target only ------------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("home/.bashrc", "home/dotfiles/bashrc"),  # stow-style dotfiles
        ("proj/.claude/settings.json", "proj/shared/claude-settings.json"),
        ("proj/CLAUDE.md", "proj/AGENTS-shared.md"),
    ],
)
def test_a_symlinked_protected_file_cannot_be_replaced(
    world: World, mode: str, name: str, target: str
) -> None:
    link, real = world.base / name, world.base / target
    real.parent.mkdir(parents=True, exist_ok=True)
    link.parent.mkdir(parents=True, exist_ok=True)
    real.write_text("the user's\n")
    link.symlink_to(os.path.relpath(real, link.parent))
    world.run(mode, f"rm -f {link} && echo 'touch {world.marker}' > {link}; true")
    assert link.is_symlink() and real.read_text() == "the user's\n", f"{name} was replaced"


# --- finding 9: what the frozen .git/config points to inside the project ----------------


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize(
    "setting",
    [
        "core.hooksPath",
        "include.path",
        "includeIf.onbranch:nowhere.path",  # not active now: still frozen
        "include.path (missing file)",
        "core.fsmonitor",
    ],
)
def test_files_the_git_config_names_inside_the_project_stay_frozen(
    world: World, mode: str, setting: str
) -> None:
    """`.git/config` is frozen; what it points to inside the (writable) project must be
    too: a hooks directory, an included file (a conditional one as well, and one that does
    not exist yet), a program git runs."""
    fsmonitor = shlex.quote(_fsmonitor(world.marker))
    key = setting.split(" ")[0]
    if key == "core.hooksPath":
        (world.project / "tools" / "hooks").mkdir(parents=True)
        world.git("config", key, "tools/hooks")
        payload = f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > tools/hooks/pre-commit"
        payload += " && chmod +x tools/hooks/pre-commit"
    elif key == "core.fsmonitor":
        program = world.project / "tools" / "fsmon.sh"
        program.parent.mkdir()
        program.write_text("#!/bin/sh\necho\n")
        program.chmod(0o755)
        world.git("config", key, "tools/fsmon.sh")
        payload = f"printf '#!/bin/sh\\ntouch {world.marker}; echo\\n' > tools/fsmon.sh"
    else:
        if "missing" not in setting:
            (world.project / ".gitconfig-project").write_text("[user]\n")
        world.git("config", key, "../.gitconfig-project")
        payload = f"printf '%s' {fsmonitor} >> .gitconfig-project"
    world.run(mode, payload + "; true")
    world.git("checkout", "-q", "-b", "nowhere")  # makes the conditional include active
    world.git("commit", "-q", "--allow-empty", "-m", "outside")
    world.git("status", "--porcelain")
    assert not world.marker.exists(), f"a file {setting} names ran the command's code outside"


@pytest.mark.parametrize("mode", ["cli", "hook", "claude-code"])
def test_a_symlinked_hooks_directory_cannot_be_replaced(world: World, mode: str) -> None:
    """`.git/hooks -> ../tools/hooks` (shared hooks kept in the tree): the target is
    frozen, but the link in the (writable) .git can be swapped for a real directory."""
    hooks = world.project / ".git" / "hooks"
    shutil.rmtree(hooks)
    (world.project / "tools" / "hooks").mkdir(parents=True)
    hooks.symlink_to("../tools/hooks")
    world.run(
        mode,
        "rm .git/hooks && mkdir .git/hooks && "
        f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit; true",
    )
    world.git("commit", "-q", "--allow-empty", "-m", "outside")
    assert not world.marker.exists(), "a hook planted in place of the link ran outside"
    assert hooks.is_symlink()


@pytest.mark.parametrize(("mode", "sign"), [("hook", signal.SIGTERM), ("cli", signal.SIGKILL)])
def test_a_symlinked_hooks_directory_replaced_by_an_interrupted_run_is_put_back(
    world: World, mode: str, sign: signal.Signals
) -> None:
    """The tail step never runs (the agent's timeout kills the wrapper; `askgate
    sandbox` killed): the next askgate process's sweep puts the link back."""
    hooks = world.project / ".git" / "hooks"
    shutil.rmtree(hooks)
    (world.project / "tools" / "hooks").mkdir(parents=True)
    hooks.symlink_to("../tools/hooks")
    world.interrupted(
        mode,
        "rm .git/hooks && mkdir .git/hooks && "
        f"printf '#!/bin/sh\\ntouch {world.marker}\\n' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit",
        sign,
    )
    world.sweep()  # the next askgate process
    world.git("commit", "-q", "--allow-empty", "-m", "outside")
    assert not world.marker.exists(), "a hook planted in place of the link ran outside"
    assert hooks.is_symlink()


# --- finding 10: abstract sockets are in the network namespace the command shares ---------


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_an_abstract_x11_like_socket_is_out_of_reach_when_secrets_are_hidden(
    world: World, mode: str
) -> None:
    """The policy hides ~/.ssh, so the agents' sockets are hidden; an X server or a
    session bus on an abstract address (`@/tmp/.X11-unix/X0`) is one of them."""

    name = f"\0/tmp/.X11-unix/askgate-escape-{os.getpid()}-{mode}"
    with unix_listener(name) as accepted:
        done = world.run(mode, connect_probe(name))
    assert "CONNECTED" not in done.stdout and not accepted, done

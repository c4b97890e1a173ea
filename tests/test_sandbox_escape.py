"""Escapes from the kernel sandbox, tried as an attacker would (issue 20), and the harm
that must not follow: a file unchanged, code not run outside, a secret not read.

The world lives OUTSIDE every directory the sandbox makes writable by itself (/tmp,
/var/tmp): under /srv for root, in a directory handed to `nobody` for the unprivileged
rerun, else under ~/.cache. Its HOME is writable by policy (`write "~/**" = "allow"`), so
home-level escapes (renaming ~/.config away from askgate's user policy) are in reach.
Each class runs through `askgate sandbox --` (cli) and through the wrapper a hook
prepares (`sandbox_rewrite`, run by bash: hook); `test_every_class_as_nobody` runs them
all again as an unprivileged user, and on Landlock where Landlock can run them.

One world per module: each attack cleans up what it leaves, and asserts on its own harm.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import pty
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_world import OutsideWorld, require_bwrap
from unprivileged_rerun import OUTSIDE_ENV, outside_scratch_dir, rerun_as_nobody
from waits import wait_until

SECRET = "SSH-PRIVATE-KEY-ESCAPE-51d2"
ENV_SECRET = "API_TOKEN=escape-secret-77b0"
DAEMON_SECRET = "daemon-secret-3c9a"
CONTROL_TOKEN = "control-token-e41f"
AWS_SECRET = "aws_secret_access_key=escape-aws-0d1e"

POLICY = """\
default = "allow"

[read]
"~/.ssh/**" = "deny"
"**/.env*" = "deny"
"**/.env.example" = "allow"
"~/.aws/**" = "deny"

[write]
"~/**" = "allow"
".git/**" = "ask"

[sandbox]
bash = "required"
"""
# Landlock cannot hide a path inside a writable directory: its variant keeps HOME
# read-only (the class-1 home escapes are then out of reach by construction).
LANDLOCK_POLICY = POLICY.replace('"~/**" = "allow"\n', "")


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    asked: str | None = None  # the hook asked instead of running (the command did not run)

    def __str__(self) -> str:
        return (
            f"rc={self.returncode} asked={self.asked}\nstdout: {self.stdout}\nstderr: {self.stderr}"
        )


class FakeDaemon:
    """A listener on the daemon's socket path: counts every connection made to it."""

    def __init__(self, path: Path) -> None:
        self.connections = 0
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            connection.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()


class EscapeWorld(OutsideWorld):
    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.user_policy = self.config_home / "askgate" / "policy.toml"
        self.landlock_policy = base / "landlock-policy.toml"
        self.state = self.state_home / "askgate"
        self.socket_dir = self.runtime / "askgate"
        self.outside_marker = base / "RAN-OUTSIDE"
        for directory in (self.home / ".ssh", self.user_policy.parent, self.state):
            directory.mkdir(parents=True)
        (self.home / ".ssh" / "id_rsa").write_text(SECRET + "\n")
        self.user_policy.write_text(POLICY)
        self.landlock_policy.write_text(LANDLOCK_POLICY)
        (self.state / "daemon.secret").write_text(DAEMON_SECRET)
        (self.state / "daemon.control").write_text(CONTROL_TOKEN)
        self.socket_dir.mkdir(parents=True, mode=0o700)
        self.daemon = FakeDaemon(self.socket_dir / "daemon.sock")
        self.project.mkdir()
        self.git("init", "-q")
        (self.project / "app.py").write_text("print('hi')\n")
        (self.project / ".env").write_text(ENV_SECRET + "\n")
        example = self.project / ".env.example"
        example.mkdir()
        (example / ".env").write_text(ENV_SECRET + "\n")  # below an allowed exception
        (self.project / ".claude").mkdir()
        (self.project / ".claude" / "settings.json").write_text('{"hooks": "askgate"}\n')
        self.git("add", "app.py", ".claude")
        self.git("commit", "-qm", "one")
        nested = self.project / "vendor" / "lib"
        nested.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(nested)], check=True, env=self.env)
        self.frozen = {
            path: path.read_bytes()
            for path in (
                self.project / ".git" / "config",
                self.project / ".claude" / "settings.json",
                nested / ".git" / "config",
                self.user_policy,
                self.state / "daemon.control",
                self.state / "daemon.secret",
            )
        }

    def git(self, *args: str) -> None:
        subprocess.run(["git", *args], cwd=self.project, check=True, env=self.env)

    def outside(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["/bin/bash", "-c", command],
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    # --- the two ways a command reaches the sandbox ----------------------------------------

    def command(
        self,
        mode: str,
        command: str,
        *,
        landlock: bool = False,
        env: dict[str, str] | None = None,
        config: list[str] | None = None,
        cwd: Path | None = None,
    ) -> tuple[list[str] | None, str | None]:
        """(argv to run, None) or (None, the hook's reason to ask)."""
        config = config or ([str(self.landlock_policy)] if landlock else [])
        return self.sandbox_command(
            mode,
            command,
            backend="landlock" if landlock and mode == "cli" else None,
            env=env,
            config=config,
            cwd=cwd,
        )

    def run(
        self,
        mode: str,
        command: str,
        *,
        landlock: bool = False,
        env: dict[str, str] | None = None,
        config: list[str] | None = None,
        cwd: Path | None = None,
        **popen: object,
    ) -> Run:
        argv, asked = self.command(
            mode, command, landlock=landlock, env=env, config=config, cwd=cwd
        )
        if argv is None:
            return Run(-1, "", "", asked=asked)
        done = subprocess.run(
            argv,
            cwd=cwd or self.project,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=120,
            **popen,  # type: ignore[call-overload]
        )
        return Run(done.returncode, done.stdout, done.stderr)

    def assert_frozen(self) -> None:
        for path, content in self.frozen.items():
            assert path.read_bytes() == content, f"{path} changed"

    def close(self) -> None:
        self.daemon.close()


@pytest.fixture(scope="module")
def world() -> Iterator[EscapeWorld]:
    require_bwrap()
    base = Path(outside_scratch_dir("askgate-escape-"))
    made = EscapeWorld(base)
    try:
        yield made
    finally:
        made.close()
        shutil.rmtree(base, ignore_errors=True)


def _no_secret(run: Run, *secrets: str) -> None:
    text = str(run)
    for secret in (SECRET, ENV_SECRET, DAEMON_SECRET, CONTROL_TOKEN, *secrets):
        assert secret not in text, f"{secret!r} leaked: {run}"


def _blocked_or_asked(run: Run) -> None:
    """The command either ran under the sandbox or the hook asked; never unsandboxed."""
    assert "WITHOUT a sandbox" not in run.stderr, run


# --- class 1: renaming the directory above a protected path ----


def attack_rename_git_and_rebuild_its_config(world: EscapeWorld, mode: str) -> None:
    marker = world.outside_marker
    run = world.run(
        mode,
        "mv .git .git-old; mkdir -p .git-new/hooks; "
        f"printf '[core]\\n\\tfsmonitor = touch {marker}\\n' > .git-new/config; "
        "mv .git-new/config .git/config; rm -rf .git/hooks; mkdir .git/hooks; "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > .git/hooks/pre-commit; "
        "chmod +x .git/hooks/pre-commit; rm -rf .git-new; true",
    )
    _blocked_or_asked(run)
    assert not (world.project / ".git-old").exists(), run
    world.assert_frozen()
    world.git("status", "--porcelain")
    world.git("commit", "-q", "--allow-empty", "-m", "outside")
    assert not marker.exists(), "code planted by the sandboxed command ran outside"
    assert not (world.project / ".git" / "hooks" / "pre-commit").exists()


def attack_rename_claude_and_rebuild_its_settings(world: EscapeWorld, mode: str) -> None:
    run = world.run(
        mode,
        "mv .claude .claude-old; mkdir -p .claude; "
        "echo '{\"disableAllHooks\": true}' > .claude/settings.json; "
        "echo '{\"disableAllHooks\": true}' > .claude/settings.local.json; true",
    )
    _blocked_or_asked(run)
    assert not (world.project / ".claude-old").exists(), run
    local = world.project / ".claude" / "settings.local.json"
    assert not local.exists() or "disableAllHooks" not in local.read_text(), run
    world.assert_frozen()


def attack_rename_the_config_home_and_rewrite_the_user_policy(
    world: EscapeWorld, mode: str
) -> None:
    run = world.run(
        mode,
        "mv ~/.config ~/.config-old; mkdir -p ~/.config/askgate; "
        "echo 'default = \"allow\"' > ~/.config/askgate/policy.toml; "
        "mv ~/.local ~/.local-old; mkdir -p ~/.local/state/askgate; "
        "echo forged > ~/.local/state/askgate/daemon.control; true",
    )
    _blocked_or_asked(run)
    assert not (world.home / ".config-old").exists(), run
    assert not (world.home / ".local-old").exists(), run
    world.assert_frozen()


# --- class 2: protected names that do not exist yet ----


def attack_create_missing_protected_files(world: EscapeWorld, mode: str) -> None:
    evil = world.base / "evil-git"
    evil.mkdir(exist_ok=True)
    (evil / "config").write_text(f"[core]\n\tfsmonitor = touch {world.outside_marker}\n")
    created = {
        ".envrc": f"touch {world.outside_marker}",
        ".npmrc": f"node-options=--require {world.base}/evil.js",
        ".gitattributes": "* filter=evil",
        ".git/commondir": str(evil),
        ".git/config.worktree": f"[core]\n\tfsmonitor = touch {world.outside_marker}",
        ".git/info/attributes": "* diff=evil",
        ".claude/settings.local.json": '{"disableAllHooks": true}',
        "vendor/lib/.git/config": f"[core]\n\tfsmonitor = touch {world.outside_marker}",
    }
    script = "; ".join(f"printf '%s\\n' {_q(text)} > {name}" for name, text in created.items())
    run = world.run(mode, script + "; true")
    _blocked_or_asked(run)
    for name, text in created.items():
        path = world.project / name
        assert not (path.exists() and text in path.read_text()), f"{name} was planted: {run}"
    world.assert_frozen()
    world.git("status", "--porcelain")
    assert not world.outside_marker.exists(), "a planted file made git run code outside"
    for leftover in world.project.rglob("*.askgate-blocked*"):
        leftover.unlink()


def _q(text: str) -> str:
    import shlex

    return shlex.quote(text)


# --- class 3: askgate's control plane is invisible ----


def attack_reach_the_daemon_and_its_secrets(world: EscapeWorld, mode: str) -> None:
    before = world.daemon.connections
    sock = world.socket_dir / "daemon.sock"
    probe = (
        "import socket,sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"try:\n    s.connect({str(sock)!r}); print('CONNECTED')\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    registry = world.data_home / "askgate" / "sandbox" / "runs"
    run = world.run(
        mode,
        f"cat {world.state}/daemon.secret {world.state}/daemon.control; "
        f"ls -a {world.socket_dir} {world.state}; cat {registry}/*/plan.json; "
        f"{sys.executable} -c {_q(probe)}; "
        f'echo \'{{"pid": 1, "start": "x", "placeholders": []}}\' > {registry}/1-x.json; '
        f"rm -rf {world.socket_dir}; true",
    )
    _blocked_or_asked(run)
    _no_secret(run)
    assert "CONNECTED" not in run.stdout, run
    assert world.daemon.connections == before, "a sandboxed command reached the daemon socket"
    assert not (registry / "1-x.json").exists()
    assert sock.exists()
    world.assert_frozen()


# --- class 5: the plan is the run ----


def attack_read_below_an_allowed_exception(world: EscapeWorld, mode: str) -> None:
    run = world.run(mode, "cat .env.example/.env .env; grep -r escape-secret . ; true")
    _blocked_or_asked(run)
    _no_secret(run)


def attack_read_a_secret_made_while_the_command_runs(world: EscapeWorld, mode: str) -> None:
    """~/.aws does not exist when the plan is made; it appears (outside) while the
    command runs: it must be hidden all the same."""
    aws = world.home / ".aws"
    world.sweep()  # a finished hook run leaves its placeholders to the next askgate
    assert not aws.exists()
    ready, go = world.project / "ready", world.project / "go"
    argv, asked = world.command(
        mode,
        "touch ready; while [ ! -e go ]; do sleep 0.01; done; "
        "cat ~/.aws/credentials; ls -a ~/.aws; rm -f ready go",
    )
    assert argv is not None, asked
    proc = subprocess.Popen(
        argv, cwd=world.project, env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        wait_until(ready.exists, "the command to start", process=proc)
        aws.mkdir(exist_ok=True)  # the user logs in meanwhile
        (aws / "credentials").write_text(AWS_SECRET + "\n")
        go.touch()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert AWS_SECRET.encode() not in out + err
    shutil.rmtree(aws, ignore_errors=True)
    for name in (ready, go):
        name.unlink(missing_ok=True)


def attack_move_a_hidden_file_from_a_background_sandbox(world: EscapeWorld, mode: str) -> None:
    """The plan-to-run race: a sandboxed process moves a secret away from where the next
    plan will mask it. Inside, a mask is a mount point: it cannot be moved."""
    run = world.run(mode, "mv .env moved-env; mv ~/.ssh ~/ssh-moved; cat moved-env; true")
    _blocked_or_asked(run)
    _no_secret(run)
    assert (world.project / ".env").read_text() == ENV_SECRET + "\n"
    assert not (world.project / "moved-env").exists()
    assert (world.home / ".ssh" / "id_rsa").exists()


def attack_read_through_an_unlistable_directory(world: EscapeWorld, mode: str) -> None:
    """A directory that can be entered but not listed hides its .env from the plan's
    walk: the plan is incomplete, so the CLI refuses and the hook asks."""
    locked = world.project / "locked"
    locked.mkdir()
    (locked / ".env").write_text(ENV_SECRET + "\n")
    locked.chmod(0o311)
    try:
        run = world.run(mode, "cat locked/.env; touch ran-unlistable")
        _no_secret(run)
        if os.geteuid() != 0:  # root lists every directory: the walk sees the file
            assert not (world.project / "ran-unlistable").exists(), run
            assert run.asked is not None or run.returncode == 125, run
    finally:
        locked.chmod(0o755)
        shutil.rmtree(locked)
        (world.project / "ran-unlistable").unlink(missing_ok=True)


def attack_read_a_hard_link_into_a_hidden_directory(world: EscapeWorld, mode: str) -> None:
    link = world.home / "innocent"
    os.link(world.home / ".ssh" / "id_rsa", link)
    refuse = world.base / "refuse.toml"
    refuse.write_text(POLICY + 'hard_links = "refuse"\n')
    try:
        run = world.run(mode, f"cat {link}; touch ran-linked", config=[str(refuse)])
        assert SECRET not in str(run)
        assert not (world.project / "ran-linked").exists()
        if mode == "hook":
            assert run.asked is not None and "hard link" in run.asked, run
        else:
            assert run.returncode == 125 and "hard link" in run.stderr, run
    finally:
        link.unlink()
        refuse.unlink()


# --- class 6: channels around the masks ----


def attack_sign_with_the_ssh_agent(world: EscapeWorld, mode: str) -> None:
    agent_dir = world.base / "ssh-agent"
    agent_dir.mkdir(exist_ok=True)
    agent = FakeDaemon(agent_dir / "agent.sock")
    env = {**world.env, "SSH_AUTH_SOCK": str(agent_dir / "agent.sock")}
    probe = (
        "import os, socket\n"
        "print('SOCK=' + os.environ.get('SSH_AUTH_SOCK', ''))\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        f"try:\n    s.connect({str(agent_dir / 'agent.sock')!r}); print('CONNECTED')\n"
        "except OSError as e: print('refused', e.errno)\n"
    )
    try:
        run = world.run(mode, f"{sys.executable} -c {_q(probe)}", env=env)
    finally:
        agent.close()
        shutil.rmtree(agent_dir, ignore_errors=True)
    _blocked_or_asked(run)
    assert "CONNECTED" not in run.stdout, run
    assert agent.connections == 0
    assert "SOCK=\n" in run.stdout or run.asked is not None, run


# --- class 7: kernel hardening ----


def attack_type_into_the_users_terminal(world: EscapeWorld, mode: str) -> None:
    """TIOCSTI pushes input into the terminal the user types in; the sandboxed command
    gets the terminal as its controlling tty (as an agent run in a terminal has)."""
    master, slave = pty.openpty()
    payload = (
        "import fcntl, termios\nfor c in 'echo INJECTED\\n': fcntl.ioctl(0, termios.TIOCSTI, c)\n"
    )
    argv, asked = world.command(mode, f"{sys.executable} -c {_q(payload)}; true")
    assert argv is not None, asked

    def controlling_tty() -> None:
        os.setsid()
        fcntl.ioctl(0, __import__("termios").TIOCSCTTY, 0)

    try:
        done = subprocess.run(
            argv,
            cwd=world.project,
            env=world.env,
            stdin=slave,
            capture_output=True,
            timeout=120,
            preexec_fn=controlling_tty,
        )
        os.set_blocking(slave, False)
        try:
            typed = os.read(slave, 1024)
        except OSError as error:
            assert error.errno == errno.EAGAIN
            typed = b""
    finally:
        os.close(master)
        os.close(slave)
    assert b"INJECTED" not in typed, done
    assert b"Operation not permitted" in done.stderr or b"Errno 1" in done.stderr, done


def attack_make_a_namespace_to_get_capabilities_back(world: EscapeWorld, mode: str) -> None:
    probe = (
        "import os\n"
        "for name in ('CLONE_NEWUSER', 'CLONE_NEWNS', 'CLONE_NEWNET'):\n"
        "    try:\n        os.unshare(getattr(os, name)); print('UNSHARED', name)\n"
        "    except OSError as e: print('refused', name, e.errno)\n"
    )
    run = world.run(
        mode,
        f"{sys.executable} -c {_q(probe)}; unshare -Ur sh -c 'umount ~/.ssh; cat ~/.ssh/id_rsa'; "
        "grep -E '^(CapEff|Seccomp):' /proc/self/status; true",
    )
    _blocked_or_asked(run)
    _no_secret(run)
    assert "UNSHARED" not in run.stdout, run
    assert "CapEff:\t0000000000000000" in run.stdout
    # bwrap's chroot already refuses nested user namespaces and --new-session TIOCSTI;
    # the filter is the second wall (and the only one under Landlock): it is in place.
    assert "Seccomp:\t2" in run.stdout, run


# --- linked worktrees: the real config and hooks live in the main repository ----


def attack_rewrite_the_main_repository_from_a_linked_worktree(
    world: EscapeWorld, mode: str
) -> None:
    """The project is a linked worktree (`.git` is a file: `gitdir: …/worktrees/NAME`)
    of a repository under HOME, which the policy makes writable. git in the worktree
    obeys the main repository's `config` and `hooks/` and its own `config.worktree` and
    `commondir`: none may change, while ordinary git work in the worktree still does."""
    main = world.home / f"main-{mode}"
    tree = world.home / f"tree-{mode}"
    marker = world.base / f"RAN-OUTSIDE-worktree-{mode}"
    env = world.env
    subprocess.run(["git", "init", "-q", str(main)], check=True, env=env)
    subprocess.run(
        ["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env
    )
    subprocess.run(
        ["git", "-C", str(main), "worktree", "add", "-q", str(tree)], check=True, env=env
    )
    common = main / ".git"
    own = common / "worktrees" / tree.name
    frozen = {p: p.read_bytes() for p in (common / "config", tree / ".git", own / "commondir")}
    fsmonitor = f"[core]\\n\\tfsmonitor = touch {marker}; echo\\n"
    run = world.run(
        mode,
        f"printf '{fsmonitor}' >> {common}/config; "
        f"printf '#!/bin/sh\\ntouch {marker}\\n' > {common}/hooks/post-checkout; "
        f"chmod +x {common}/hooks/post-checkout; "
        f"printf '{fsmonitor}' > {own}/config.worktree; "
        f"echo ../.. > {own}/commondir; "
        f"mv {common} {main}/moved; mv {own} {common}/worktrees/moved; "
        f"printf 'gitdir: {world.base}\\n' > .git; "
        "echo work > w.txt && git add w.txt && git commit -qm w && echo COMMITTED",
        cwd=tree,
    )
    _blocked_or_asked(run)
    for path, content in frozen.items():
        assert path.read_bytes() == content, f"{path} changed: {run}"
    assert not (common / "hooks" / "post-checkout").exists(), run
    worktree_config = own / "config.worktree"
    assert not worktree_config.exists() or "fsmonitor" not in worktree_config.read_text()
    if run.asked is None:
        assert "COMMITTED" in run.stdout, run  # ordinary work in the worktree goes on
    world.sweep()
    outside = subprocess.run(
        ["git", "status", "--porcelain"], cwd=tree, env=env, capture_output=True, timeout=60
    )
    assert outside.returncode == 0, outside.stderr
    subprocess.run(["git", "checkout", "-q", "-B", "again"], cwd=tree, env=env, timeout=60)
    assert not marker.exists(), run


# --- a hidden directory is a private tmpfs: writes inside never reach the disk ----


def attack_write_into_a_hidden_directory(world: EscapeWorld, mode: str) -> None:
    """A hidden directory is an empty tmpfs remounted read-only: neither the disk nor
    the sandbox's own view can be changed through it (a forged control token or daemon
    socket inside would fool an askgate running in the same sandbox)."""
    ssh = world.home / ".ssh"
    before = sorted(p.name for p in ssh.iterdir())
    mode_before = ssh.stat().st_mode
    run = world.run(
        mode,
        "chmod 755 ~/.ssh; echo FORGED > ~/.ssh/id_rsa; echo k > ~/.ssh/authorized_keys; "
        f"chmod 755 {world.state}; echo forged > {world.state}/daemon.control; "
        "cat ~/.ssh/id_rsa; ls ~/.ssh; cat "
        + str(world.state)
        + "/daemon.control; "
        + f"{sys.executable} -c "
        + _q(
            "import socket; s = socket.socket(socket.AF_UNIX); "
            f"s.bind('{world.socket_dir}/daemon.sock'); print('BOUND')"
        ),
    )
    assert "FORGED" not in run.stdout and "forged" not in run.stdout, run
    assert "BOUND" not in run.stdout, run
    _blocked_or_asked(run)
    _no_secret(run)
    assert (ssh / "id_rsa").read_text() == SECRET + "\n"
    assert sorted(p.name for p in ssh.iterdir()) == before
    assert ssh.stat().st_mode == mode_before
    world.assert_frozen()


# --- the http hook's secret in Claude Code's settings (escape round 2, finding 3) ----


def attack_read_the_http_hook_secret_from_the_settings(world: EscapeWorld, mode: str) -> None:
    """`askgate install claude-code --http` writes the daemon's secret into the hook's
    header in ~/.claude/settings.json; read-only is not enough: with it a command could
    forge hook calls. The file is hidden in the sandbox (and stays frozen)."""
    settings = world.home / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    hook = {"type": "http", "headers": {"X-Askgate-Secret": DAEMON_SECRET}}
    text = json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}})
    settings.write_text(text)
    try:
        run = world.run(
            mode, f"cat {settings}; grep -r Askgate ~/.claude; echo x >> {settings}; true"
        )
        _blocked_or_asked(run)
        _no_secret(run)
        assert settings.read_text() == text
    finally:
        settings.unlink()


CLASSES: dict[str, Callable[[EscapeWorld, str], None]] = {
    "rename .git": attack_rename_git_and_rebuild_its_config,
    "rename .claude": attack_rename_claude_and_rebuild_its_settings,
    "rename ~/.config": attack_rename_the_config_home_and_rewrite_the_user_policy,
    "create missing": attack_create_missing_protected_files,
    "daemon": attack_reach_the_daemon_and_its_secrets,
    "exception": attack_read_below_an_allowed_exception,
    "appears later": attack_read_a_secret_made_while_the_command_runs,
    "move a mask": attack_move_a_hidden_file_from_a_background_sandbox,
    "unlistable": attack_read_through_an_unlistable_directory,
    "hard link": attack_read_a_hard_link_into_a_hidden_directory,
    "ssh agent": attack_sign_with_the_ssh_agent,
    "tiocsti": attack_type_into_the_users_terminal,
    "namespaces": attack_make_a_namespace_to_get_capabilities_back,
    "linked worktree": attack_rewrite_the_main_repository_from_a_linked_worktree,
    "write a hidden directory": attack_write_into_a_hidden_directory,
    "http hook secret": attack_read_the_http_hook_secret_from_the_settings,
}


@pytest.mark.parametrize("mode", ["cli", "hook"])
@pytest.mark.parametrize("attack", list(CLASSES))
def test_escape(world: EscapeWorld, attack: str, mode: str) -> None:
    CLASSES[attack](world, mode)


# --- everyday work under the same policy (issue 21, item 8) ----


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_everyday_git_writes_work_while_config_and_hooks_stay_frozen(
    world: EscapeWorld, mode: str
) -> None:
    before = world.outside("git rev-list --count HEAD").stdout.strip()
    run = world.run(
        mode,
        f"git switch -qc work-{mode} && echo more >> app.py && git add app.py && "
        "git commit -qm two && echo x > scratch.txt && git add scratch.txt && "
        "git restore --staged scratch.txt && rm scratch.txt && git switch -q - && "
        "git rev-list --count HEAD && git status --porcelain",
    )
    assert run.returncode == 0, run
    assert run.stdout.split()[0] == before, run  # back on the first branch, unchanged
    assert f"work-{mode}" in world.outside("git branch").stdout
    world.assert_frozen()


# --- Landlock, and every class as an unprivileged user ----


def test_landlock_refuses_root(world: EscapeWorld) -> None:
    if os.geteuid() != 0:
        pytest.skip("the root case needs root")
    run = world.run("cli", "touch ran-landlock", landlock=True)
    assert run.returncode == 125, run
    assert "does not run commands as root" in run.stderr
    assert not (world.project / "ran-landlock").exists()


def _landlock_or_skip() -> None:
    from askgate.sandbox import landlock

    if landlock.abi_version() < 1:
        pytest.skip("Landlock is not available in this kernel")


def _landlock_classes(world: EscapeWorld) -> None:
    """Under Landlock (HOME read-only): each harm is absent, whether Landlock ran the
    command or refused to (a hole inside the project cannot be expressed: required)."""
    run = world.run(
        "cli",
        f"cat ~/.ssh/id_rsa; mv .git .git-old; echo x >> .git/config; "
        f"echo evil > .envrc; {sys.executable} -c "
        + _q("import fcntl,termios,os; print(os.getsid(0) == os.getppid() or os.getsid(0))")
        + "; grep CapEff /proc/self/status; touch ran-landlock",
        landlock=True,
    )
    _no_secret(run)
    world.assert_frozen()
    assert not (world.project / ".git-old").exists()
    assert (
        not (world.project / ".envrc").exists()
        or "evil" not in (world.project / ".envrc").read_text()
    )
    # A write hole inside the project cannot be kept under Landlock: required refuses.
    assert run.returncode == 125 and "Landlock cannot keep" in run.stderr, run
    assert not (world.project / "ran-landlock").exists()


def test_every_class_as_nobody(request: pytest.FixtureRequest) -> None:
    """As root: rerun this test as `nobody`, with a world outside /tmp of its own. As
    `nobody` (that rerun): every class, both forms, and the Landlock variant."""
    if rerun_as_nobody(request, outside=True):
        return
    if not os.environ.get(OUTSIDE_ENV):
        pytest.skip("not root: the other tests of this module ran unprivileged already")
    require_bwrap()
    base = Path(outside_scratch_dir("askgate-escape-"))
    made = EscapeWorld(base)
    try:
        for attack in CLASSES.values():
            for mode in ("cli", "hook"):
                attack(made, mode)
        _landlock_or_skip()
        _landlock_classes(made)
    finally:
        made.close()
        shutil.rmtree(base, ignore_errors=True)


# --- the probe cache cannot be used to downgrade ----


def test_a_failed_bwrap_probe_is_never_cached(tmp_path: Path, monkeypatch) -> None:
    """A command that makes bwrap fail (exhausting the user's processes) must not leave a
    cached "landlock" or "none" behind for the commands after it."""
    from askgate.sandbox import bwrap as bwrap_backend
    from askgate.sandbox import runner

    require_bwrap()
    good = runner.probe(str(tmp_path), refresh=True)
    assert good.backend == "bwrap" and (tmp_path / "probe.json").exists()
    (tmp_path / "probe.json").unlink()
    monkeypatch.setattr(
        bwrap_backend,
        "probe",
        lambda path: bwrap_backend.BwrapProbe(path=path, error="fork: Resource unavailable"),
    )
    failed = runner.probe(str(tmp_path))
    assert failed.backend != "bwrap"
    assert not (tmp_path / "probe.json").exists()  # nothing cached
    monkeypatch.undo()
    assert runner.probe(str(tmp_path)).backend == "bwrap"
    # A cached success is kept through a later failure of the probe itself.
    monkeypatch.setattr(
        bwrap_backend, "probe", lambda path: bwrap_backend.BwrapProbe(path=path, error="x")
    )
    assert runner.probe(str(tmp_path)).backend == "bwrap"


def test_the_seccomp_filter_is_well_formed_classic_bpf() -> None:
    from askgate.sandbox import seccomp

    for machine in ("x86_64", "aarch64"):
        code = seccomp.program(machine)
        assert code is not None and len(code) % 8 == 0 and 0 < len(code) // 8 < 4096
    assert seccomp.program("riscv64") is None


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_an_environment_allow_list_keeps_other_variables_out(world: EscapeWorld, mode: str) -> None:
    allow = world.base / f"env-{mode}.toml"
    allow.write_text(POLICY + 'environment = ["PATH", "HOME", "LC_*"]\n')
    env = {**world.env, "AWS_SECRET_ACCESS_KEY": "env-secret-9a1f", "LC_ALL": "C"}
    try:
        run = world.run(
            mode, 'echo "k=${AWS_SECRET_ACCESS_KEY-unset} lc=$LC_ALL"', env=env, config=[str(allow)]
        )
    finally:
        allow.unlink()
    assert run.returncode == 0, run
    assert "env-secret-9a1f" not in str(run)
    assert "k=unset lc=C" in run.stdout


# --- tripwires of an interrupted run (escape round 2, finding 2) ----


def test_a_tripwire_planted_by_an_interrupted_run_is_moved_aside_by_the_next_sweep(
    world: EscapeWorld,
) -> None:
    """An agent's timeout or Ctrl-C kills the prepared wrapper's process group: its tail
    step (which moves aside what appeared at a tripwire) never runs. The next askgate
    process's sweep must do it, before `direnv`, npm or git outside read the file."""
    planted = world.project / ".envrc"
    assert not planted.exists()
    argv, asked = world.command("hook", "echo 'touch RAN' > .envrc; sleep 120")
    assert argv is not None, asked
    process = subprocess.Popen(
        argv, cwd=world.project, env=world.env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_until(planted.exists, "the command to plant its .envrc", process=process)
    finally:
        os.killpg(process.pid, 15)  # what an agent's tool timeout does
        process.wait(timeout=60)
    runs = world.data_home / "askgate" / "sandbox" / "runs"
    statuses = sorted(runs.glob("w-*/status"), key=lambda p: p.stat().st_mtime)
    assert statuses, "the run was not recorded"
    status = statuses[-1]
    text = status.read_bytes()
    assert b"exit-code" not in text  # killed: no tail step ran
    # Past the grace the sweep gives a failed run's own tail step.
    old = time.time() - 120
    os.utime(status, (old, old))
    pids = [int(w) for w in text.replace(b"}", b" ").replace(b",", b" ").split() if w.isdigit()]
    wait_until(
        lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids),
        f"the killed run's processes {pids} to be gone",
    )
    world.sweep()
    assert not planted.exists(), "the planted .envrc stayed in place"
    aside = list(world.project.glob(".envrc.askgate-blocked*"))
    assert aside, "moved aside, not lost"
    for path in aside:
        path.unlink()


# --- Unix sockets under the Landlock fallback (escape round 2, finding 6) ----

_CONNECT_UNDER_FILTER = r"""
import ctypes, errno, os, socket, sys
from askgate.sandbox import seccomp
code = seccomp.program(unix_sockets=sys.argv[1] == "allow")
libc = ctypes.CDLL(None, use_errno=True)
class Prog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))
buffer = ctypes.create_string_buffer(code, len(code))
prog = Prog(len(code) // 8, ctypes.addressof(buffer))
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0  # PR_SET_SECCOMP, FILTER
for address in sys.argv[2:]:
    target = "\0" + address[1:] if address.startswith("@") else address
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(target)
            print("CONNECTED", address)
    except OSError as error:
        print("refused", address, errno.errorcode.get(error.errno))
a, b = socket.socketpair()
a.sendall(b"x"); print("socketpair", b.recv(1) == b"x")
with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    print("inet socket ok")
"""


def test_the_landlock_filter_refuses_every_new_unix_socket(world: EscapeWorld) -> None:
    """Landlock does not govern connect() (a socket in a hidden directory stays
    reachable) and abstract sockets have no path at all: under the Landlock backend the
    seccomp filter refuses socket(AF_UNIX), so the ssh-agent in ~/.ssh, the daemon's
    socket and a host abstract socket are out of reach; socketpair() still works."""
    agent_path = world.home / ".ssh" / "agent.sock"
    listeners = []
    for address in (str(agent_path), "\0askgate-escape-abstract-" + os.urandom(4).hex()):
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(address)
        server.listen(4)
        listeners.append((server, address))
    targets = [str(agent_path), str(world.socket_dir / "daemon.sock")]
    targets.append("@" + listeners[1][1][1:])
    try:
        for verdict in ("refuse", "allow"):
            done = subprocess.run(
                [sys.executable, "-c", _CONNECT_UNDER_FILTER, verdict, *targets],
                capture_output=True, text=True, timeout=60, env=world.env,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            if verdict == "refuse":
                assert "CONNECTED" not in done.stdout, done.stdout
                assert done.stdout.count("EPERM") == len(targets), done.stdout
            else:  # the control: the same connects work without the socket rule
                assert done.stdout.count("CONNECTED") == len(targets), done.stdout
            assert "socketpair True" in done.stdout and "inet socket ok" in done.stdout
    finally:
        for server, _address in listeners:
            server.close()
        agent_path.unlink(missing_ok=True)

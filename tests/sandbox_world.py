"""A small world for kernel sandbox tests: a HOME with a secret SSH key, a git project with
a `.env` and a write-guarded directory, a permissive policy denying exactly those, and a
runner for the real `askgate sandbox` command in an environment isolated under it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SECRET = "SSH-PRIVATE-KEY-CONTENT-7f3a"
ENV_SECRET = "DATABASE_PASSWORD=hunter2-9c1e"

POLICY = """\
default = "allow"

[read]
"~/.ssh/**" = "deny"
"**/.env*" = "deny"

[write]
"guarded/**" = "deny"
"""


def require_bwrap() -> None:
    """Skip (fail under CI) when bubblewrap with user namespaces is not usable here."""
    problem = None
    if shutil.which("bwrap") is None:
        problem = "bubblewrap is not installed (scripts/setup-system installs it)"
    else:
        done = subprocess.run(
            ["bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "/bin/true"],
            capture_output=True,
            timeout=30,
        )
        if done.returncode != 0:
            problem = f"bwrap cannot create namespaces here: {done.stderr.decode()[:200]}"
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return f"rc={self.returncode}\nstdout: {self.stdout}\nstderr: {self.stderr}"


class World:
    """`mode`: how `sandbox()` runs a single shell command — "cli" (`askgate sandbox --`)
    or "hook" (the wrapper a hook prepares, `askgate.sandbox.prepared`, run by bash)."""

    def __init__(self, base: Path, policy: str = POLICY, mode: str = "cli") -> None:
        self.mode = mode
        self.base = base
        self.home = base / "home"
        self.project = base / "proj"
        self.ssh_key = self.home / ".ssh" / "id_rsa"
        self.env_file = self.project / ".env"
        self.guarded = self.project / "guarded"
        self.policy = base / "policy.toml"
        (self.home / ".ssh").mkdir(parents=True)
        self.ssh_key.write_text(SECRET + "\n")
        self.project.mkdir()
        subprocess.run(["git", "init", "-q", str(self.project)], check=True, env=self.env)
        self.env_file.write_text(ENV_SECRET + "\n")
        self.guarded.mkdir()
        (self.guarded / "existing.txt").write_text("frozen\n")
        self.policy.write_text(policy)

    @property
    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("ASKGATE_", "XDG_"))}
        return {
            **keep,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.base / "xdg-config"),
            "XDG_DATA_HOME": str(self.base / "xdg-data"),
            "XDG_STATE_HOME": str(self.base / "xdg-state"),
            "ASKGATE_MANAGED_POLICY": str(self.base / "managed" / "policy.toml"),
            "ASKGATE_AUDIT_LOG": str(self.base / "review.jsonl"),
            "GIT_CONFIG_NOSYSTEM": "1",
            # Hooks decide in-process: a daemon would outlive the test (shared runtime dir).
            "ASKGATE_DAEMON": "off",
        }

    def sandbox(
        self,
        *command: str,
        options: tuple[str, ...] = (),
        cwd: Path | None = None,
        pass_fds: tuple[int, ...] = (),
        timeout: float = 120,
    ) -> Run:
        argv = [sys.executable, "-m", "askgate.cli", "sandbox", "--config", str(self.policy)]
        if self.mode == "hook" and not options and len(command) == 1:
            wrapped = self.prepared(command[0], cwd=cwd or self.project)
            if wrapped is not None:
                argv = ["/bin/bash", "-c", wrapped]
                command, options = (), ()
        elif self.mode == "hook":
            pytest.fail(
                "a CLI-only form (options, or a program with arguments): use the cli_world fixture"
            )
        done = subprocess.run(
            [*argv, *options, *(("--", *command) if command else ())],
            capture_output=True,
            cwd=cwd or self.project,
            env=self.env,
            pass_fds=pass_fds,
            timeout=timeout,
        )
        return Run(
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
        )

    def prepared(self, command: str, cwd: Path | None = None, mode: str = "on") -> str | None:
        """The wrapper a hook would emit for `command` (None: the hook would ask, as for a
        plan that refuses; the CLI form shows that case)."""
        from askgate.policy.engine import Policy
        from askgate.sandbox.plan import build_plan
        from askgate.sandbox.prepared import ensure_state_directory, prepare_wrapper

        where = str(cwd or self.project)
        ensure_state_directory(self.env)
        policy = Policy.load(where, config_files=[str(self.policy)], env=self.env)
        plan = build_plan(policy, policy.sandbox, cwd=where, mode=mode)
        if not plan.startable:
            return None
        wrapped = prepare_wrapper(
            plan,
            command,
            env=self.env,
            launcher=[sys.executable, "-m", "askgate"],
            agent=None,
            config_files=[str(self.policy)],
        )
        assert wrapped is not None, "bwrap works here: the prepared form applies"
        return wrapped

    def sweep(self) -> None:
        """What the next askgate process does first: clean up after finished runs."""
        done = subprocess.run(
            [sys.executable, "-m", "askgate.cli", "sandbox", "--cleanup"],
            capture_output=True,
            env=self.env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr

    def outside(self, command: str, cwd: Path | None = None) -> Run:
        done = subprocess.run(
            ["/bin/bash", "-c", command],
            capture_output=True,
            cwd=cwd or self.project,
            env=self.env,
            timeout=120,
        )
        return Run(
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
        )


class OutsideWorld:
    """The escape suites' world: a HOME, a project and askgate's own directories under
    `base` (outside every directory the sandbox makes writable by itself: see
    `unprivileged_rerun.outside_scratch_dir`), the environment that points askgate there,
    and the ways a command reaches the sandbox: `askgate sandbox --` ("cli") or the
    wrapper a hook prepares (`sandbox_rewrite`, run by bash: "hook")."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.project = base / "proj"
        self.runtime = base / "xdg-run"
        self.config_home = self.home / ".config"
        self.data_home = self.home / ".local" / "share"
        self.state_home = self.home / ".local" / "state"

    @property
    def env(self) -> dict[str, str]:
        keep = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ASKGATE_", "XDG_", "GIT_", "SSH_", "PYTEST_"))
        }
        return {
            **keep,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.config_home),
            "XDG_DATA_HOME": str(self.data_home),
            "XDG_STATE_HOME": str(self.state_home),
            "XDG_RUNTIME_DIR": str(self.runtime),
            "ASKGATE_MANAGED_POLICY": str(self.base / "managed" / "policy.toml"),
            # Hooks decide in-process: a daemon would outlive the test.
            "ASKGATE_DAEMON": "off",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        }

    def sandbox_command(
        self,
        mode: str,
        command: str,
        *,
        backend: str | None = None,
        env: dict[str, str] | None = None,
        config: list[str] | None = None,
        cwd: Path | None = None,
    ) -> tuple[list[str] | None, str | None]:
        """(argv to run, None), or (None, the hook's reason to ask instead)."""
        if mode == "cli":
            argv = [sys.executable, "-m", "askgate.cli", "sandbox"]
            argv += [f"--config={path}" for path in config or []]
            if backend is not None:
                argv += ["--backend", backend]
            return [*argv, "--", command], None
        from askgate.sandbox.wrap import sandbox_rewrite

        rewrite = sandbox_rewrite(
            "Bash",
            {"command": command},
            cwd=str(cwd or self.project),
            env=env or self.env,
            config_files=config or [],
            launcher=[sys.executable, "-m", "askgate"],
        )
        assert rewrite is not None, "bash = required: the hook always rewrites or asks"
        if rewrite.ask_reason is not None:
            return None, rewrite.ask_reason
        assert rewrite.updated_input is not None
        return ["/bin/bash", "-c", rewrite.updated_input["command"]], None

    def sweep(self) -> None:
        """What the next askgate process does first: clean up after finished runs."""
        done = subprocess.run(
            [sys.executable, "-m", "askgate.cli", "sandbox", "--cleanup"],
            env=self.env,
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr


@contextlib.contextmanager
def unix_listener(address: str) -> Iterator[list[bool]]:
    """A Unix socket listening at `address` (a path, or an abstract name starting with
    NUL); the list gets True when anything connects."""
    if not address.startswith("\0"):
        Path(address).parent.mkdir(parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(address)
    server.listen(4)
    accepted: list[bool] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            connection, _ = server.accept()
            accepted.append(True)
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield accepted
    finally:
        with contextlib.suppress(OSError):
            server.shutdown(socket.SHUT_RDWR)
        server.close()
        thread.join(timeout=10)
        if not address.startswith("\0"):
            Path(address).unlink(missing_ok=True)


def connect_probe(address: str) -> str:
    """A command that prints CONNECTED when it can connect to `address`, else `refused`."""
    code = (
        "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        f"try:\n    s.connect({address!r}); print('CONNECTED')\n"
        "except OSError as e: print('refused', e)\n"
    )
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"

"""The packaging smoke test: what a new user gets from `pip install askgate`.

Builds the sdist and, from it, the wheel (`python -m build`); installs the wheel with NO
extras into a fresh virtualenv outside the checkout; checks that every module of the
installed package imports there; then runs the main commands from that virtualenv in a
scratch project with a scratch HOME, as a user would: `--version`, `check`, `explain`,
`hook claude-code`, `init --yes`, `config test`, `sandbox --probe`, `user add`, `serve`
until `/healthz` answers, one approval created and decided over the HTTP API, `daemon
start|status|stop`, and a few commands that must fail with one line. `--tools` also
installs the wheel with `pipx install` and `uv tool install` (each from PyPI) and runs
`askgate --version` from each.

Every step prints one line. A step fails when its exit code or output is not what a user
should see, or when anything prints a traceback. Run by scripts/test (and so by .ci/run):

    .venv/bin/python scripts/smoke_install.py [--tools] [--keep]

Only the standard library here: this script checks an installation, it must not need one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
STEP_TIMEOUT_S = 240

# Modules that need an optional extra (`pip install askgate[NAME]`): importing them without
# it must fail with ImportError naming that extra's package, and nothing else may fail.
EXTRA_ONLY_PREFIXES: tuple[str, ...] = ("askgate.frameworks.",)

IMPORT_CHECK = r"""
import importlib, json, pkgutil, sys
import askgate
extra_only = tuple(sys.argv[1:])
failed = []
for info in pkgutil.walk_packages(askgate.__path__, "askgate."):
    name = info.name
    if name.startswith("askgate.server.migrations.") or name.endswith(".__main__"):
        continue  # alembic's scripts, and `python -m` entry points that would run a command
    try:
        importlib.import_module(name)
    except ImportError as exc:
        if not name.startswith(extra_only):
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print(json.dumps(failed))
"""


class SmokeFailure(Exception):
    pass


class Smoke:
    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.home = scratch / "home"
        self.project = scratch / "project"
        self.venv = scratch / "venv"
        self.dist = scratch / "dist"
        self.steps = 0
        for directory in (self.home, self.project):
            directory.mkdir(mode=0o700, parents=True)
        runtime = scratch / "run"
        runtime.mkdir(mode=0o700)
        # A user's environment, not the checkout's: no virtualenv on PATH, no PYTHONPATH,
        # every askgate location inside the scratch HOME.
        path = [p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":") if p]
        path = [p for p in path if not p.startswith(str(CHECKOUT))]
        self.env = {
            "PATH": ":".join([str(self.venv / "bin"), *path]),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_STATE_HOME": str(self.home / ".local/state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_RUNTIME_DIR": str(runtime),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        for name in ("PIP_FIND_LINKS", "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "SSL_CERT_FILE"):
            if name in os.environ:
                self.env[name] = os.environ[name]

    # -- reporting --

    def ok(self, what: str) -> None:
        self.steps += 1
        print(f"smoke: ok   {what}", flush=True)

    def run(
        self,
        argv: list[str],
        *,
        want: tuple[int, ...] = (0,),
        stdin: str | None = None,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        try:
            result = subprocess.run(
                argv,
                input=stdin,
                cwd=str(cwd or self.project),
                env={**self.env, **(env or {})},
                capture_output=True,
                text=True,
                timeout=STEP_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SmokeFailure(f"{' '.join(argv)}: no answer in {STEP_TIMEOUT_S} s") from exc
        shown = " ".join(argv)
        if "Traceback (most recent call last)" in result.stdout + result.stderr:
            raise SmokeFailure(f"{shown}: printed a traceback:\n{result.stderr[-3000:]}")
        if result.returncode not in want:
            raise SmokeFailure(
                f"{shown}: exit {result.returncode}, wanted {want}\n"
                f"stdout: {result.stdout[-2000:]}\nstderr: {result.stderr[-2000:]}"
            )
        return result

    def askgate(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.run([str(self.venv / "bin" / "askgate"), *args], **kwargs)  # type: ignore[arg-type]

    def one_error_line(self, result: subprocess.CompletedProcess[str], what: str) -> None:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("askgate"):
            raise SmokeFailure(f"{what}: wanted one error line, got:\n{result.stderr[-2000:]}")

    # -- the steps --

    def build_and_install(self) -> None:
        self.run(
            [sys.executable, "-m", "build", "--outdir", str(self.dist), str(CHECKOUT)],
            cwd=self.scratch,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
        wheels = sorted(self.dist.glob("askgate-*.whl"))
        sdists = sorted(self.dist.glob("askgate-*.tar.gz"))
        if len(wheels) != 1 or len(sdists) != 1:
            raise SmokeFailure(
                f"build: wanted one wheel and one sdist, got {os.listdir(self.dist)}"
            )
        self.wheel = wheels[0]
        self.ok(f"built {sdists[0].name} and, from it, {self.wheel.name}")
        base = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable
        self.run([base, "-m", "venv", str(self.venv)], cwd=self.scratch)
        self.run(
            [str(self.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(self.wheel)],
            cwd=self.scratch,
        )
        self.ok("installed the wheel with no extras into a fresh virtualenv")

    def every_module_imports(self) -> None:
        result = self.run(
            [str(self.venv / "bin" / "python"), "-c", IMPORT_CHECK, *EXTRA_ONLY_PREFIXES],
            cwd=self.scratch,
        )
        failed = json.loads(result.stdout.strip().splitlines()[-1])
        if failed:
            raise SmokeFailure("modules that do not import without extras:\n" + "\n".join(failed))
        self.ok("every module of the installed package imports without extras")

    def decisions(self) -> None:
        version = self.askgate("--version").stdout.strip()
        if not version.startswith("askgate "):
            raise SmokeFailure(f"--version printed {version!r}")
        self.ok(version)
        out = self.askgate("check", "--json", "bash", "git status && rm -rf /").stdout
        if json.loads(out)["action"] not in ("ask", "deny"):
            raise SmokeFailure(f"check allowed rm -rf /: {out}")
        self.ok("check (bash, --json)")
        self.askgate("explain", "read", str(self.home / ".ssh" / "id_rsa"))
        self.ok("explain read ~/.ssh/id_rsa")
        payload = {
            "session_id": "smoke",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "cat ~/.ssh/id_rsa"},
            "cwd": str(self.project),
        }
        hook = self.askgate(
            "hook",
            "claude-code",
            stdin=json.dumps(payload),
            want=(0, 2),
            env={"ASKGATE_DAEMON": "off"},
        )
        if hook.returncode == 0 and '"allow"' in hook.stdout:
            raise SmokeFailure(f"hook claude-code allowed reading a key: {hook.stdout}")
        self.ok(f"hook claude-code decided (exit {hook.returncode})")

    def project_commands(self) -> None:
        self.run(["git", "init", "-q", str(self.project)])
        (self.project / "pyproject.toml").write_text('[project]\nname = "smoke"\n')
        self.askgate("init", "--yes")
        if not (self.project / ".askgate" / "policy.toml").is_file():
            raise SmokeFailure("init --yes wrote no .askgate/policy.toml")
        self.ok("init --yes in a scratch project")
        self.askgate("config", "test")
        self.ok("config test")
        probe = self.askgate("sandbox", "--probe", want=(0, 1, 2, 3))
        if probe.returncode != 0 and os.environ.get("CI"):
            raise SmokeFailure(f"sandbox --probe failed in CI: {probe.stdout}{probe.stderr}")
        first = (probe.stdout.strip().splitlines() or [""])[0]
        self.ok(f"sandbox --probe (exit {probe.returncode}: {first[:80]})")

    def server(self) -> None:
        data = self.scratch / "server-data"
        added = self.askgate("user", "add", "smoke-user", "--data-dir", str(data))
        token = added.stdout.strip().splitlines()[-1].strip()
        if len(token) < 20:
            raise SmokeFailure(f"user add printed no token: {added.stdout!r}")
        self.ok("user add")
        server = subprocess.Popen(
            [str(self.venv / "bin" / "askgate"), "serve", "--port", "0", "--data-dir", str(data)],
            cwd=str(self.project),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            line = server.stdout.readline() if server.stdout else ""
            if "http://" not in line:
                _, err = server.communicate(timeout=30)
                raise SmokeFailure(f"serve did not announce its address: {line!r} {err[-2000:]}")
            url = line.split("http://", 1)[1].split("/", 1)[0]
            base = f"http://{url}"
            health = _http("GET", f"{base}/healthz")
            self.ok(f"serve: /healthz answered {health[0]}")
            headers = {"Authorization": f"Bearer {token}"}
            status, created = _http(
                "POST",
                f"{base}/v1/approvals",
                {"tool": "Bash", "input": {"command": "make deploy"}, "cwd": str(self.project)},
                headers,
            )
            if status not in (200, 201):
                raise SmokeFailure(f"create approval: {status} {created}")
            approval = created["id"]
            status, decided = _http(
                "POST",
                f"{base}/v1/approvals/{approval}/decide",
                {"decision": "allow", "reason": "smoke"},
                headers,
            )
            if status != 200:
                raise SmokeFailure(f"decide approval: {status} {decided}")
            status, read = _http("GET", f"{base}/v1/approvals/{approval}", None, headers)
            if status != 200 or "allow" not in json.dumps(read):
                raise SmokeFailure(f"read approval after deciding: {status} {read}")
            self.ok("an approval created, decided and read over the API")
        finally:
            server.terminate()
            try:
                server.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.communicate()
        if "Traceback" in (
            server.stderr.read() if server.stderr and not server.stderr.closed else ""
        ):
            raise SmokeFailure("serve printed a traceback")

    def daemon(self) -> None:
        try:
            self.askgate("daemon", "start")
            status = self.askgate("daemon", "status")
            if "pid" not in status.stdout:
                raise SmokeFailure(f"daemon status shows no pid: {status.stdout!r}")
            self.ok("daemon start, status")
        finally:
            self.askgate("daemon", "stop", want=(0, 1, 3))
        after = self.askgate("daemon", "status", want=(0, 3))
        if after.returncode != 3:
            raise SmokeFailure(f"daemon still running after stop: {after.stdout!r}")
        self.ok("daemon stop")

    def failures_are_one_line(self) -> None:
        bad = self.askgate(
            "check", "--config", str(self.scratch / "absent.toml"), "bash", "ls", want=(2,)
        )
        self.one_error_line(bad, "check --config absent.toml")
        blocked = self.scratch / "not-a-dir"
        blocked.write_text("")
        bad = self.askgate("user", "add", "x", "--data-dir", str(blocked / "data"), want=(1, 2))
        self.one_error_line(bad, "user add with an unusable data dir")
        bad = self.askgate("serve", "--port", "70000", want=(2,))
        self.one_error_line(bad, "serve --port 70000")
        self.ok("failing commands print one line (check, user add, serve)")

    def tools(self) -> None:
        """`pipx install` and `uv tool install` of the built wheel, each in its own tree."""
        tools = self.scratch / "tools"
        self.run([sys.executable, "-m", "venv", str(tools)], cwd=self.scratch)
        self.run(
            [str(tools / "bin" / "python"), "-m", "pip", "install", "--quiet", "pipx", "uv"],
            cwd=self.scratch,
        )
        pipx_env = {
            "PIPX_HOME": str(self.scratch / "pipx"),
            "PIPX_BIN_DIR": str(self.scratch / "pipx-bin"),
        }
        self.run([str(tools / "bin" / "pipx"), "install", str(self.wheel)], env=pipx_env)
        out = self.run([str(self.scratch / "pipx-bin" / "askgate"), "--version"]).stdout
        self.ok(f"pipx install: {out.strip()}")
        uv_env = {
            "UV_TOOL_DIR": str(self.scratch / "uv-tools"),
            "UV_TOOL_BIN_DIR": str(self.scratch / "uv-bin"),
            "UV_CACHE_DIR": str(self.scratch / "uv-cache"),
            "UV_PYTHON_DOWNLOADS": "never",
        }
        self.run([str(tools / "bin" / "uv"), "tool", "install", str(self.wheel)], env=uv_env)
        out = self.run([str(self.scratch / "uv-bin" / "askgate"), "--version"]).stdout
        self.ok(f"uv tool install: {out.strip()}")
        self.run([str(self.scratch / "uv-bin" / "askgate"), "check", "bash", "ls"])
        self.ok("uv tool install: check runs")


def _http(
    method: str,
    url: str,
    body: object | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, object]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        text, status = exc.read().decode(), exc.code
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", action="store_true", help="also pipx and uv tool install")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="askgate-smoke-"))
    smoke = Smoke(scratch)
    started = time.monotonic()
    try:
        smoke.build_and_install()
        smoke.every_module_imports()
        smoke.decisions()
        smoke.project_commands()
        smoke.server()
        smoke.daemon()
        smoke.failures_are_one_line()
        if args.tools:
            smoke.tools()
    except SmokeFailure as exc:
        print(f"smoke: FAIL {exc}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"smoke: {smoke.steps} steps passed in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

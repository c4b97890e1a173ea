"""`./scripts/demo`: the whole product in one command.

Starts `askgate serve` on an embedded SQLite in a temporary data dir, adds a user, writes a
policy for a small Python project with `askgate init --yes` (a private HOME and XDG dirs, so
nothing of yours is touched), then drives a short scripted agent session through the gate:
one call the policy allows, one it denies, one it asks about. The ask goes to the approval
server and waits there; the demo prints the URL of its page (with its `?k=` key) and keeps
serving until Ctrl-C. When somebody answers on the page, the waiting session is released and
prints the outcome.

`ASKGATE_DEMO_EXIT_AFTER_READY=1` stops after printing the URL (for smoke tests). No stdin or
terminal is needed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

SESSION = [
    ("allowed: read-only profile", "git status && ls -la"),
    ("denied: the read deny on ~/.ssh init writes", "cat ~/.ssh/id_ed25519"),
    ("asked: git-local profile asks before a push", "git push origin main"),
]


def _say(text: str = "") -> None:
    print(text, flush=True)


def _start_server(data_dir: str) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "askgate", "serve", "--port", "0", "--data-dir", data_dir]
    server = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None, text=True
    )
    assert server.stdout is not None
    line = server.stdout.readline()  # "askgate approval server: http://127.0.0.1:PORT/ …"
    if "http://" not in line:
        server.kill()
        raise SystemExit(f"askgate demo: the server did not start: {line.strip()}")
    url = line.split("http://", 1)[1].split("/", 1)[0]
    threading.Thread(target=_drain, args=(server.stdout,), daemon=True).start()
    return server, f"http://{url}"


def _drain(stream: IO[str]) -> None:
    for _ in stream:
        pass


def _add_user(data_dir: str) -> str:
    argv = [sys.executable, "-m", "askgate", "user", "add", "demo", "--data-dir", data_dir]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip().splitlines()[-1]


def _private_env(data_dir: str) -> dict[str, str]:
    home = os.path.join(data_dir, "home")
    os.makedirs(os.path.join(home, ".ssh"), exist_ok=True)
    return {
        **os.environ,
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "ASKGATE_MANAGED_POLICY": os.path.join(data_dir, "no-managed"),
    }


def _init_policy(project: Path, env: dict[str, str]) -> str:
    """`askgate init --yes` in the demo project, as a user would run it."""
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    argv = [sys.executable, "-m", "askgate", "init", "--yes", "--cwd", str(project)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    if done.returncode != 0:
        raise SystemExit(f"askgate demo: askgate init failed: {done.stderr.strip()}")
    return str(project / ".askgate" / "policy.toml")


def main() -> int:
    from askgate.gate import Gate
    from askgate.outcome import ToolRequest
    from askgate.policy.engine import Policy
    from askgate.prompters.server import MAX_BUDGET as BUDGET  # the longest wait allowed
    from askgate.prompters.server import ServerPrompter

    exit_after_ready = os.environ.get("ASKGATE_DEMO_EXIT_AFTER_READY") == "1"
    data_dir = tempfile.mkdtemp(prefix="askgate-demo-")
    project = Path(data_dir) / "project"
    (project / ".git").mkdir(parents=True)
    server, url = _start_server(os.path.join(data_dir, "server"))
    try:
        token = _add_user(os.path.join(data_dir, "server"))
        _say(f"approval server: {url}/  (embedded SQLite in {data_dir}/server)")
        env = _private_env(data_dir)
        policy_file = _init_policy(project, env)
        _say(f"policy: {policy_file} (written by `askgate init --yes`)")
        _say("a scripted agent session follows")
        _say()
        policy = Policy.load(str(project), env=env)
        registered: list[dict[str, object]] = []
        seen = threading.Event()

        def on_registered(view: dict[str, object]) -> None:
            registered.append(view)
            seen.set()

        prompter = ServerPrompter(url, token, budget=BUDGET, on_registered=on_registered)
        gate = Gate(policy, prompter=prompter, session="demo-session")
        for label, command in SESSION[:2]:
            request = ToolRequest(tool="Bash", input={"command": command}, cwd=str(project))
            outcome = gate.decide(request)
            _say(f"  $ {command}\n    -> {outcome.action} ({outcome.resolution}): {label}")
        ask = ToolRequest(tool="Bash", input={"command": SESSION[2][1]}, cwd=str(project))
        released = threading.Event()

        def wait_for_human() -> None:
            outcome = gate.decide(ask)
            _say(f"\n  $ {SESSION[2][1]}\n    -> {outcome.action} ({outcome.resolution})")
            if outcome.allowed:
                _say("    the agent's command runs now (the approval matched its exact input)")
            released.set()

        waiter = threading.Thread(target=wait_for_human, daemon=True)
        waiter.start()
        if not seen.wait(30) or not registered[0].get("card_url"):
            raise SystemExit("askgate demo: the ask never reached the server")
        card = registered[0]["card_url"]
        _say(f"  $ {SESSION[2][1]}\n    -> ask: waiting for a human on the approval server")
        _say()
        _say("Open the pending approval (Approve or Deny it there):")
        _say(f"  {card}")
        _say(f"All approvals: {url}/  (sign in with the token: {token})")
        if exit_after_ready:
            return 0
        _say("Serving until Ctrl-C.")
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        stop.wait()
        return 0
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())

"""Area 2: what a hook call costs, all measured in one run:

* the `askgate hook claude-code` process deciding in-process (no daemon: a plain policy
  load), from exec to decision on stdout, reported beside bare `python -c pass` and one-shot
  peer CLIs (cedarpy, casbin) that load the equivalent policy from disk, without a target
  (the resident daemon is the fast path);
* the command hook of every agent (claude-code, codex, gemini) relaying to a warm resident
  daemon (against bare python; target ≤ 2×);
* Claude Code's `type: "http"` hook: POST to the warm daemon on 127.0.0.1 and read the
  answer (no process at all).

Every child runs with a fresh, private HOME / XDG_* so no user configuration leaks in,
and with a timeout so a stuck child cannot hang the suite.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import corpus
from benchmarks.harness import (
    NOT_BUILT,
    AreaReport,
    Figure,
    Row,
    Stats,
    run_process,
)
from benchmarks.peers import available

NAME = "hook"
TITLE = "hook latency: in-process, relay to a warm daemon (every agent), http to a warm daemon"

COMMAND = "git status"
AGENTS = ("claude-code", "codex", "gemini")  # every command-hook agent relays
TIMEOUT_S = 30.0

_CEDAR_CLI = """\
import json, sys
import cedarpy
event = json.load(sys.stdin)
with open(sys.argv[1], encoding="utf-8") as f:
    policies = f.read()
request = {
    "principal": {"type": "Agent", "id": "agent"},
    "action": {"type": "Action", "id": "call"},
    "resource": {"type": "Tool", "id": "tool"},
    "context": {"value": event["tool_input"]["command"]},
}
result = cedarpy.is_authorized(request, policies, [])
decision = "allow" if result.allowed else "deny" if result.diagnostics.reasons else "ask"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                         "permissionDecision": decision}}))
"""

_CASBIN_CLI = """\
import json, sys
import casbin
event = json.load(sys.stdin)
enforcer = casbin.Enforcer(sys.argv[1], sys.argv[2])
allowed, explain = enforcer.enforce_ex(event["tool_input"]["command"])
decision = "allow" if allowed else "deny" if explain and explain[-1] == "deny" else "ask"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                         "permissionDecision": decision}}))
"""


def _askgate_argv() -> list[str]:
    script = Path(sys.executable).parent / "askgate"
    if script.exists():
        return [str(script)]
    found = shutil.which("askgate")
    if found:
        return [found]
    return [sys.executable, "-m", "askgate"]


def _has(module: str, name: str) -> bool:
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return False
    return callable(getattr(loaded, name, None))


def _hook_built() -> bool:
    """Feature check by import: the Claude Code adapter's entry point, and the bash
    analyser a Bash tool call needs (without it the hook can only fail closed)."""
    return _has("askgate.hooks.runner", "main") and _has("askgate.policy.shell", "analyze")


def _expect(decision: str) -> Callable[[subprocess.CompletedProcess[bytes]], str | None]:
    def check(done: subprocess.CompletedProcess[bytes]) -> str | None:
        if done.returncode != 0:
            return f"exit {done.returncode}"
        got = _decision_of(done.stdout)
        if got is None:
            return f"unexpected output {done.stdout[:120]!r}"
        return None if got == decision else f"decided {got!r}, expected {decision!r}"

    return check


def _decision_of(stdout: bytes) -> str | None:
    """The decision in any agent's hook output: Claude Code's and Codex's
    `hookSpecificOutput` (PreToolUse or PermissionRequest), Gemini's `decision`."""
    try:
        out = json.loads(stdout.decode().strip().splitlines()[-1])
        specific = out.get("hookSpecificOutput") or {}
        got = specific.get("permissionDecision") or (specific.get("decision") or {}).get("behavior")
        if got is None and isinstance(out.get("decision"), str):
            got = out["decision"]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return got if isinstance(got, str) else None


class _Child:
    """One contender of the process rows: argv, environment and what it must answer."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        stdin: bytes = b"",
        cwd: str | None = None,
        expect: str | None = None,
        note: str = "",
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.stdin = stdin
        self.cwd = cwd
        self.check = _expect(expect) if expect else None
        self.note = note
        self.samples: list[float] = []
        self.failure = ""

    def once(self) -> float | None:
        start = time.perf_counter_ns()
        try:
            done = run_process(
                self.argv, stdin=self.stdin, env=self.env, cwd=self.cwd, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            self.failure = f"timed out after {TIMEOUT_S:.0f} s"
            return None
        elapsed = time.perf_counter_ns() - start
        problem = self.check(done) if self.check else (None if done.returncode == 0 else "exit")
        if problem is not None:
            tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
            self.failure = f"failed: {problem}" + (f" ({tail[0]})" if tail else "")
            return None
        return float(elapsed)

    def figure(self) -> Figure:
        if self.failure:
            return Figure(name=self.name, note=self.failure[:100])
        return Figure(name=self.name, stats=Stats.of(self.samples), note=self.note)


def _sample_children(children: Sequence[_Child | _HttpCaller], runs: int, warmup: int) -> None:
    """Round robin: each round runs every child once, so a change in machine load during
    the run lands on all of them alike instead of skewing their ratios."""
    for round_ in range(warmup + runs):
        for child in children:
            for _ in range(getattr(child, "repeat", 1)):
                if child.failure:
                    break
                elapsed = child.once()
                if elapsed is not None and round_ >= warmup:
                    child.samples.append(elapsed)


def _import_cost(module: str, runs: int, env: dict[str, str]) -> Figure:
    """Median of `python -X importtime -c "import module"`, summed over the top-level
    entries of the module's package (its dependencies are nested inside them)."""
    root = module.split(".")[0]
    totals: list[float] = []
    for _ in range(runs):
        try:
            done = run_process(
                [sys.executable, "-X", "importtime", "-c", f"import {module}"],
                env=env,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return Figure(name=f"import {module}", note="timed out")
        if done.returncode != 0:
            return Figure(name=f"import {module}", note=NOT_BUILT)
        total_us = 0
        for line in done.stderr.decode("utf-8", "replace").splitlines():
            parts = line.split("|")
            if not line.startswith("import time:") or len(parts) != 3:
                continue
            # "import time: self | cumulative | name", the name indented by nesting depth
            # after one separating space.
            name = parts[2].rstrip()[1:]
            if name.startswith(" ") or not (name == root or name.startswith(root + ".")):
                continue  # nested (already inside a parent's cumulative) or unrelated
            try:
                total_us += int(parts[1])
            except ValueError:
                continue
        totals.append(total_us * 1_000.0)
    return Figure(name=f"import {module}", stats=Stats.of(totals))


def _write_fixtures(base: Path) -> dict[str, Path]:
    rules = corpus.bash_rules()
    config = base / "config" / "askgate"
    config.mkdir(parents=True)
    (config / "policy.toml").write_text(corpus.toml_policy(rules, "bash"), encoding="utf-8")
    project = base / "project"
    project.mkdir()
    for d in ("state", "data", "cache", "home"):
        (base / d).mkdir()
    cedar = base / "policy.cedar"
    cedar.write_text(corpus.cedar_policies(rules), encoding="utf-8")
    model = base / "model.conf"
    model.write_text(corpus.CASBIN_MODEL.format(matcher="regexMatch"), encoding="utf-8")
    csv = base / "policy.csv"
    csv.write_text(
        "".join(f"p, {p}, {a}\n" for p, a in corpus.casbin_policies(rules, regex=True)),
        encoding="utf-8",
    )
    cedar_cli = base / "cedar_hook.py"
    cedar_cli.write_text(_CEDAR_CLI, encoding="utf-8")
    casbin_cli = base / "casbin_hook.py"
    casbin_cli.write_text(_CASBIN_CLI, encoding="utf-8")
    return {
        "project": project,
        "cedar": cedar,
        "model": model,
        "csv": csv,
        "cedar_cli": cedar_cli,
        "casbin_cli": casbin_cli,
    }


def _env(base: Path) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(base / "home"),
        "XDG_CONFIG_HOME": str(base / "config"),
        "XDG_STATE_HOME": str(base / "state"),
        "XDG_DATA_HOME": str(base / "data"),
        "XDG_CACHE_HOME": str(base / "cache"),
        "LANG": "C.UTF-8",
    }
    if "VIRTUAL_ENV" in os.environ:
        env["VIRTUAL_ENV"] = os.environ["VIRTUAL_ENV"]
    return env


class _Warm:
    """A resident daemon for the benchmark: started with `askgate daemon start` in the
    benchmark's private runtime directory, stopped at the end."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port: int | None = None
        self.secret = ""
        self.note = ""

    def __enter__(self) -> _Warm:
        done = run_process([*_askgate_argv(), "daemon", "start"], env=self.env, timeout=TIMEOUT_S)
        runtime = Path(self.env["ASKGATE_RUNTIME_DIR"])
        if done.returncode != 0 or not (runtime / "daemon.json").exists():
            self.note = f"daemon did not start: {done.stderr.decode()[-80:].strip()}"
            return self
        self.port = json.loads((runtime / "daemon.json").read_text())["port"]
        secret = Path(self.env["XDG_STATE_HOME"]) / "askgate" / "daemon.secret"
        self.secret = secret.read_text().strip()
        return self

    def __exit__(self, *exc: object) -> None:
        run_process([*_askgate_argv(), "daemon", "stop"], env=self.env, timeout=TIMEOUT_S)


class _HttpCaller:
    """Claude Code's side of an http hook: a fresh connection, POST, read the answer.
    `repeat` calls per round, so its samples interleave with the process rows' rounds."""

    def __init__(self, warm: _Warm, body: bytes, repeat: int) -> None:
        self.name = "askgate http hook"
        self.warm = warm
        self.body = body
        self.repeat = repeat
        self.samples: list[float] = []
        self.failure = "" if warm.port is not None else (warm.note or NOT_BUILT)

    def once(self) -> float | None:
        import http.client

        start = time.perf_counter_ns()
        conn = http.client.HTTPConnection("127.0.0.1", self.warm.port, timeout=TIMEOUT_S)
        try:
            conn.request(
                "POST",
                "/hook/claude-code",
                body=self.body,
                headers={"Content-Type": "application/json", "X-Askgate-Secret": self.warm.secret},
            )
            response = conn.getresponse()
            answer = response.read()
        finally:
            conn.close()
        elapsed = time.perf_counter_ns() - start
        if response.status != 200 or _decision_of(answer) != "allow":
            self.failure = f"failed: {response.status} {answer[:60]!r}"
            return None
        return float(elapsed)

    def figure(self) -> Figure:
        if self.failure:
            return Figure(name=self.name, note=self.failure[:100])
        return Figure(name=self.name, stats=Stats.of(self.samples))


def _agent_stdin(agent: str, event: dict[str, object]) -> bytes:
    """The same call as each agent's hook sends it (Codex: its PermissionRequest, whose
    allow is printed; its PreToolUse allow is silence. Gemini: BeforeTool)."""
    if agent == "codex":
        return json.dumps({**event, "hook_event_name": "PermissionRequest"}).encode()
    if agent == "gemini":
        return json.dumps(
            {**event, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command"}
        ).encode()
    return json.dumps(event).encode()


def _peer_children(
    files: dict[str, Path], env: dict[str, str], stdin: bytes, cwd: str
) -> tuple[_Child, list[_Child], list[Figure]]:
    """(bare python, one-shot peers, peers that are not installed)."""
    bare = _Child("python -c pass", [sys.executable, "-c", "pass"], env)
    peers: list[_Child] = []
    missing: list[Figure] = []
    for module, argv in (
        ("cedarpy", [sys.executable, str(files["cedar_cli"]), str(files["cedar"])]),
        (
            "casbin",
            [sys.executable, str(files["casbin_cli"]), str(files["model"]), str(files["csv"])],
        ),
    ):
        if available(module):
            peers.append(
                _Child(
                    f"{module} one-shot",
                    argv,
                    env,
                    stdin=stdin,
                    cwd=cwd,
                    expect="allow",
                    note="no parse",
                )
            )
        else:
            missing.append(Figure(name=f"{module} one-shot", note="not installed"))
    return bare, peers, missing


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    # --quick skips the warm-up run: its figures only show that the children work.
    runs, warmup = (2, 0) if quick else (15, 1)
    http_runs = 20 if quick else 300
    import_runs = 1 if quick else 10
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="askgate-bench-hook-") as tmp:
        base = Path(tmp)
        files = _write_fixtures(base)
        env = _env(base)
        runtime = base / "run"
        runtime.mkdir(mode=0o700)
        env["ASKGATE_RUNTIME_DIR"] = str(runtime)
        env["ASKGATE_DAEMON_PORT"] = "0"
        cold_env = {**env, "ASKGATE_DAEMON": "off"}
        event = {
            "session_id": "s",
            "cwd": str(files["project"]),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": COMMAND},
        }
        stdin = json.dumps(event).encode()
        cwd = str(files["project"])
        hook_argv = [*_askgate_argv(), "hook", "claude-code"]
        built = _hook_built()

        bare, peer_children, missing = _peer_children(files, cold_env, stdin, cwd)
        cold_child = _Child(
            "askgate in-process", hook_argv, cold_env, stdin=stdin, cwd=cwd, expect="allow"
        )
        relay_children = {
            agent: _Child(
                f"askgate relay ({agent})",
                [*_askgate_argv(), "hook", agent],
                env,
                stdin=_agent_stdin(agent, event),
                cwd=cwd,
                expect="allow",
            )
            for agent in AGENTS
        }
        with _Warm(env) as warm:
            http_caller = _HttpCaller(warm, stdin, max(1, http_runs // runs))
            children: list[_Child | _HttpCaller] = [bare, *peer_children]
            if built:
                children.append(cold_child)
                if warm.port is not None:
                    children += [*relay_children.values(), http_caller]
            _sample_children(children, runs, warmup)
            http_fig = http_caller.figure()
        cold = cold_child.figure() if built else Figure(name="askgate", note=NOT_BUILT)
        relayed_by_agent = {
            agent: (
                child.figure()
                if built and warm.port is not None
                else Figure(name=child.name, note=warm.note or NOT_BUILT)
            )
            for agent, child in relay_children.items()
        }
        peers = [bare.figure(), *(c.figure() for c in peer_children), *missing]
        bare_fig = peers[0]
        measured = f"PreToolUse Bash {COMMAND!r}, {len(corpus.bash_rules())} rules"
        rows = [
            Row(
                measured=f"{measured}: in-process, no daemon (plain load)",
                ours=cold,
                peers=tuple(peers),
            ),
            *(
                Row(
                    measured=f"{measured}: {agent} command hook relay to a warm daemon",
                    ours=figure,
                    peers=(bare_fig,),
                    target="peer ÷ askgate ≥ 0.5× (≤ 2× bare python)",
                )
                for agent, figure in relayed_by_agent.items()
            ),
            Row(
                measured=f"{measured}: http hook round trip to a warm daemon",
                ours=http_fig,
                target="≤ 2 ms median",
            ),
        ]
        import_ours = _import_cost("askgate.gate", import_runs, env)
        import_peers = tuple(
            _import_cost(m, import_runs, env) for m in ("cedarpy", "casbin") if available(m)
        )
        rows.append(
            Row(
                measured="python -X importtime, package total",
                ours=import_ours,
                peers=import_peers,
            )
        )
    notes += _verdicts(cold, relayed_by_agent, http_fig, peers)
    notes.append(
        "all children: same interpreter, private HOME/XDG dirs, warm .pyc caches, policy read"
        " from disk each run; the in-process row has no target (the daemon is the fast path);"
        " the http row is a fresh connection per call, as Claude Code makes, its calls"
        " interleaved with the process rows' rounds"
    )
    measured_all = all(f.stats is not None for f in (cold, *relayed_by_agent.values(), http_fig))
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok" if measured_all else "partial",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )


def _verdicts(
    cold: Figure, relayed_by_agent: dict[str, Figure], http_fig: Figure, peers: list[Figure]
) -> list[str]:
    notes: list[str] = []
    bare = peers[0].stats
    if bare is not None and cold.stats is not None:
        notes.append(
            f"in-process (no daemon) = {cold.stats.median_ns / bare.median_ns:.2f}× bare python"
            " (reported, no target)"
        )
    for agent, relayed in relayed_by_agent.items():
        if bare is not None and relayed.stats is not None:
            factor = relayed.stats.median_ns / bare.median_ns
            verdict = "met" if factor <= 2.0 else "NOT met"
            notes.append(f"{agent} relay = {factor:.2f}× bare python (target ≤ 2×): {verdict}")
    if http_fig.stats is not None:
        verdict = "met" if http_fig.stats.median_ns <= 2e6 else "NOT met"
        notes.append(
            f"http round trip median {http_fig.stats.median_ns / 1e6:.2f} ms (target ≤ 2 ms):"
            f" {verdict}"
        )
    return notes

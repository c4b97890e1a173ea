"""Area 2: hook cold start — the one-shot `askgate hook claude-code` process, from exec
to decision on stdout, against bare `python -c pass` and against one-shot peer CLIs
(cedarpy, casbin) that load the equivalent policy from disk and make the same decision.

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
    ProcessFailed,
    Row,
    Stats,
    run_process,
    sample_process,
)
from benchmarks.peers import available

NAME = "hook"
TITLE = "hook cold start, whole process (exec -> decision on stdout)"

COMMAND = "git status"
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
    return _has("askgate.adapters.claude_code", "main") and _has("askgate.policy.shell", "analyze")


def _expect(decision: str) -> Callable[[subprocess.CompletedProcess[bytes]], str | None]:
    def check(done: subprocess.CompletedProcess[bytes]) -> str | None:
        if done.returncode != 0:
            return f"exit {done.returncode}"
        try:
            out = json.loads(done.stdout.decode().strip().splitlines()[-1])
            got = out["hookSpecificOutput"]["permissionDecision"]
        except (ValueError, KeyError, IndexError, TypeError):
            return f"unexpected output {done.stdout[:120]!r}"
        return None if got == decision else f"decided {got!r}, expected {decision!r}"

    return check


def _figure(
    name: str,
    argv: Sequence[str],
    runs: int,
    *,
    warmup: int = 1,
    env: dict[str, str],
    stdin: bytes = b"",
    cwd: str | None = None,
    check: Callable[[subprocess.CompletedProcess[bytes]], str | None] | None = None,
    note: str = "",
) -> Figure:
    try:
        stats = sample_process(
            argv,
            runs=runs,
            warmup=warmup,
            stdin=stdin,
            env=env,
            cwd=cwd,
            timeout=TIMEOUT_S,
            check=check,
        )
    except ProcessFailed as exc:
        return Figure(name=name, note=f"failed: {exc}"[:100])
    except subprocess.TimeoutExpired:
        return Figure(name=name, note=f"timed out after {TIMEOUT_S:.0f} s")
    return Figure(name=name, stats=stats, note=note)


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


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    # --quick skips the warm-up run: its figures only show that the children work.
    runs, warmup = (2, 0) if quick else (15, 1)
    import_runs = 1 if quick else 10
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="askgate-bench-hook-") as tmp:
        base = Path(tmp)
        files = _write_fixtures(base)
        env = _env(base)
        event = {
            "session_id": "s",
            "cwd": str(files["project"]),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": COMMAND},
        }
        stdin = json.dumps(event).encode()
        cwd = str(files["project"])

        if _hook_built():
            ours = _figure(
                "askgate",
                [*_askgate_argv(), "hook", "claude-code"],
                runs,
                warmup=warmup,
                env=env,
                stdin=stdin,
                cwd=cwd,
                check=_expect("allow"),
            )
        else:
            ours = Figure(name="askgate", note=NOT_BUILT)

        peers = [
            _figure("python -c pass", [sys.executable, "-c", "pass"], runs, warmup=warmup, env=env)
        ]
        for module, argv in (
            ("cedarpy", [sys.executable, str(files["cedar_cli"]), str(files["cedar"])]),
            (
                "casbin",
                [sys.executable, str(files["casbin_cli"]), str(files["model"]), str(files["csv"])],
            ),
        ):
            if available(module):
                peers.append(
                    _figure(
                        f"{module} one-shot",
                        argv,
                        runs,
                        warmup=warmup,
                        note="no parse",
                        env=env,
                        stdin=stdin,
                        cwd=cwd,
                        check=_expect("allow"),
                    )
                )
            else:
                peers.append(Figure(name=f"{module} one-shot", note="not installed"))
        measured = f"PreToolUse Bash {COMMAND!r}, {len(corpus.bash_rules())} rules"
        rows = [Row(measured=measured, ours=ours, peers=tuple(peers))]

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
    measured_peers = [
        p for p in rows[0].peers if p.stats is not None and p.name != "python -c pass"
    ]
    if measured_peers:
        fastest = min(measured_peers, key=lambda p: p.stats.median_ns if p.stats else 0)
        notes.append(f"fastest peer CLI: {fastest.name}")
    if ours.stats is not None and rows[0].peers[0].stats is not None:
        floor = rows[0].peers[0].stats.median_ns
        notes.append(
            f"askgate above the bare interpreter: {(ours.stats.median_ns - floor) / 1e6:.1f} ms "
            "(difference of medians)"
        )
    notes.append(
        "all children: same interpreter, private HOME/XDG dirs, policy read from disk each run"
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok" if ours.stats is not None else "partial",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )

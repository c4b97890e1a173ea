"""Area: how often the policy `askgate init --yes` writes asks a human, on a stand-in for
real agent traffic (tests/data/agent_traffic.py: several agents' styles, project kinds,
sibling reads, project scripts, localhost, the network, installs).

For each project kind a small project is built (markers, sources, scripts, a git
repository, a `.env`, a sibling checkout) under a fake HOME outside /tmp, `askgate init
--yes` is run in it as a user would (so its own sandbox probe decides), and every command
of the workload is decided by the policy it wrote. Rows: the ask share per kind, with the
sandbox as the probe found it and with `--sandbox off`; notes: the share per class.

Where this may differ from real traffic: the commands are written from classes of real
work, not replayed; real sessions repeat the same few commands (a run of `pytest` after
each edit), weigh reading far more, and hold long one-off pipelines this set has few of.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.harness import AreaReport, Figure, Row

NAME = "ask_share"
TITLE = "ask share of `askgate init --yes` on a stand-in for agent traffic"
TARGET = 0.25
KINDS = ("python", "node", "go", "rust", "monorepo")
# A Node project as it is after `npm install`: node_modules holds tens of thousands of
# files, and the sandbox plan searches the project for the anywhere-patterns (`**/.env*`).
BIG_TREE_FILES = 60_000
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "agent_traffic.py"

FILES: dict[str, tuple[str, ...]] = {
    "common": (
        "README.md",
        "Makefile",
        "scripts/run.sh",
        "scripts/setup.sh",
        "scripts/dev.sh",
        "scripts/generate.py",
        "scripts/migrate.py",
        "scripts/build.js",
        "docs/notes.md",
        ".env",
        ".env.example",
        ".gitignore",
        ".github/workflows/ci.yml",
    ),
    "python": (
        "pyproject.toml",
        "src/app/__init__.py",
        "src/app/main.py",
        "src/app/util.py",
        "tests/test_main.py",
        "compose.yaml",
    ),
    "node": ("package.json", "src/index.ts", "src/app.test.ts", "tsconfig.json"),
    "go": ("go.mod", "main.go", "internal/parse/parse.go", "cmd/server/main.go"),
    "rust": ("Cargo.toml", "src/main.rs", "src/lib.rs"),
    "monorepo": (
        "docker-compose.yml",
        "frontend/package.json",
        "frontend/src/index.ts",
        "services/api/pyproject.toml",
        "services/api/src/api/__init__.py",
        "services/worker/go.mod",
    ),
}


def traffic() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("askgate_agent_traffic", DATA)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def world_base() -> str:
    """A directory outside /tmp (writable inside the sandbox) and outside any project."""
    parent = Path.home() / ".cache" / "askgate-bench"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkdtemp(prefix="ask-share-", dir=parent)
    except OSError:
        return tempfile.mkdtemp(prefix="ask-share-")


def environment(base: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ASKGATE_", "XDG_"))}
    return {
        **keep,
        "HOME": os.path.join(base, "home"),
        "XDG_CONFIG_HOME": os.path.join(base, "xdg-config"),
        "XDG_DATA_HOME": os.path.join(base, "xdg-data"),
        "XDG_STATE_HOME": os.path.join(base, "xdg-state"),
        "ASKGATE_MANAGED_POLICY": os.path.join(base, "no-managed.toml"),
        "ASKGATE_AUDIT_LOG": "off",
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def add_dependency_tree(root: str, files: int = BIG_TREE_FILES) -> None:
    per_package = 100
    for package in range(files // per_package):
        directory = os.path.join(root, "node_modules", f"pkg{package}", "lib")
        os.makedirs(directory, exist_ok=True)
        for index in range(per_package):
            with open(os.path.join(directory, f"f{index}.js"), "w"):
                pass


def plan_ask_reason(policy: Any, root: str, env: Mapping[str, str]) -> str | None:
    """Why the hook would ask about every allowed command here (an incomplete sandbox
    plan), or None. Only with the sandbox required."""
    from askgate.sandbox.plan import build_plan

    if policy.sandbox.bash != "required":
        return None
    plan = build_plan(policy, policy.sandbox, cwd=root, mode="required")
    return None if plan.startable else str(plan.ask_reason or "the plan refuses")


def build_project(base: str, kind: str) -> str:
    home = Path(base) / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text("KEY\n")
    root = home / "src" / f"{kind}-app"
    for name in (*FILES["common"], *FILES[kind]):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    for sibling in ("shared-lib/src/util.py", "shared-lib/README.md", "ui-kit/src/a.ts"):
        path = home / "src" / sibling
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(home), "PATH": os.environ["PATH"]}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env, timeout=60)
    return str(root)


def init(root: str, env: Mapping[str, str], sandbox: str) -> None:
    argv = [sys.executable, "-m", "askgate", "init", "--yes", "--force", "--sandbox", sandbox]
    done = subprocess.run(
        [*argv, "--cwd", root], capture_output=True, env=dict(env), timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"askgate init failed: {done.stderr.decode()[-500:]}")


def measure(
    kind: str, *, sandbox: str = "auto", base: str | None = None, big_tree: bool = False
) -> dict[str, Any]:
    """Decide the workload of `kind` under the policy `init --yes --sandbox SANDBOX` wrote.
    Returns totals, per-class counts, the asked commands and whether the sandbox is on."""
    from askgate.policy.engine import Policy
    from askgate.policy.model import Action

    owned = base is None
    base = base or world_base()
    try:
        env = environment(base)
        root = build_project(base, kind)
        if big_tree:
            add_dependency_tree(root)
        init(root, env, sandbox)
        policy = Policy.load(root, env=env)
        if policy.errors:
            raise RuntimeError(f"the init policy does not load: {policy.errors[0]}")
        # With the sandbox required the hook asks about an allowed command whose plan is
        # incomplete: count those as the asks they are.
        plan_reason = plan_ask_reason(policy, root, env)
        data = traffic()
        classes = data.workload(kind, root, env["HOME"])
        per_class: dict[str, tuple[int, int]] = {}
        asked: list[str] = []
        allowed: set[str] = set()
        total = 0
        for name, commands in classes.items():
            asks = 0
            for command in commands:
                action = policy.decide("bash", command, cwd=root).action
                if action is Action.ALLOW and plan_reason is not None:
                    action = Action.ASK
                if action is Action.ASK:
                    asks += 1
                    asked.append(command)
                elif action is Action.ALLOW:
                    allowed.add(command)
            per_class[name] = (asks, len(commands))
            total += len(commands)
        must_not = [c.format(root=root, home=env["HOME"]) for c in data.MUST_NOT_ALLOW]
        return {
            "kind": kind,
            "sandboxed": policy.sandbox.bash == "required",
            "plan_ask_reason": plan_reason,
            "total": total,
            "asks": len(asked),
            "share": len(asked) / total,
            "per_class": per_class,
            "asked": asked,
            "wrongly_allowed": [c for c in must_not if c in allowed or _allowed(policy, c, root)],
        }
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def _allowed(policy: Any, command: str, root: str) -> bool:
    from askgate.policy.model import Action

    return bool(policy.decide("bash", command, cwd=root).action is Action.ALLOW)


def run(quick: bool) -> AreaReport:
    import time

    started = time.perf_counter()
    rows: list[Row] = []
    notes: list[str] = []
    for kind in KINDS[:2] if quick else KINDS:
        for sandbox in ("auto",) if quick else ("auto", "off"):
            found = measure(kind, sandbox=sandbox)
            mode = "sandbox required" if found["sandboxed"] else "no sandbox"
            share = f"{found['share']:.1%} ({found['asks']} of {found['total']})"
            rows.append(
                Row(
                    measured=f"{kind} project, {mode}",
                    ours=Figure(name="askgate", note=share),
                    target=f"<= {TARGET:.0%}" if found["sandboxed"] else "",
                )
            )
            if sandbox == "auto":
                by_class = ", ".join(
                    f"{name} {asks}/{count}" for name, (asks, count) in found["per_class"].items()
                )
                notes.append(f"{kind} ({mode}) asks per class: {by_class}")
                if found["wrongly_allowed"]:
                    notes.append(f"{kind}: ALLOWED what must not be: {found['wrongly_allowed']}")
    if not quick:
        found = measure("node", big_tree=True)
        share = f"{found['share']:.1%} ({found['asks']} of {found['total']})"
        rows.append(
            Row(
                measured=f"node project with {BIG_TREE_FILES} files in node_modules",
                ours=Figure(name="askgate", note=share),
                target=f"<= {TARGET:.0%}",
            )
        )
        if found["plan_ask_reason"]:
            notes.append(f"node_modules: every allowed command asks: {found['plan_ask_reason']}")
    notes.append(
        "stand-in, not a replay: real traffic repeats few commands many times and reads more"
    )
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )

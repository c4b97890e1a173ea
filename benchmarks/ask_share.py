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
TITLE = "ask share of `askgate init --yes` on a stand-in and on public agent traffic"
TARGET = 0.25
KINDS = ("python", "node", "workspaces", "go", "rust", "monorepo", "submodules")
# How the policy init wrote is measured: as written (the sandbox where the probe finds it,
# with `network = "policy"` and the `[net]` host list), the sandbox without the host list
# (no network inside, every network command decided by the rules alone), and no sandbox.
MODES = ("sandbox + net", "sandbox, no net", "no sandbox")
# A Node project as it is after `npm install`: node_modules holds tens of thousands of
# files, and the sandbox plan searches the project for the anywhere-patterns (`**/.env*`).
BIG_TREE_FILES = 60_000
DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "agent_traffic.py"
# Real commands of public agent sessions (one JSON object a line: command, agent, kind,
# repo, commit, path; `@ROOT@` and `@HOME@` stand for the project and the home directory).
# Third-party data, kept outside the repository like the lead's holdout: its rows are
# measured where the file exists and said to be missing where not.
PUBLIC_TRAFFIC_VARIABLE = "ASKGATE_PUBLIC_TRAFFIC"
PUBLIC_TRAFFIC_DEFAULT = Path.home() / ".cache" / "askgate" / "real-traffic" / "public.jsonl"

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
    "workspaces": (
        "package.json",
        "pnpm-workspace.yaml",
        "turbo.json",
        "packages/ui/package.json",
        "packages/ui/src/index.ts",
        "packages/api/package.json",
        "packages/api/src/server.ts",
        "apps/web/package.json",
        "apps/web/src/main.tsx",
    ),
    "submodules": (
        "pyproject.toml",
        "src/app/__init__.py",
        "src/app/main.py",
        "tests/test_main.py",
    ),
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


def public_traffic_path() -> Path | None:
    path = Path(os.environ.get(PUBLIC_TRAFFIC_VARIABLE) or PUBLIC_TRAFFIC_DEFAULT)
    return path if path.is_file() else None


def public_kinds() -> tuple[str, ...]:
    """The project kinds the public traffic has commands for."""
    import json

    path = public_traffic_path()
    if path is None:
        return ()
    with path.open() as lines:
        return tuple(sorted({json.loads(line)["kind"] for line in lines if line.strip()}))


def public_workload(kind: str, root: str, home: str) -> dict[str, list[tuple[str, str]]]:
    """source ("agent, owner/repo") -> (command, working directory) of the public traffic
    of `kind`, placeholders filled. The directories are made below `root` (an agent's
    shell that kept a `cd subdir`)."""
    import json

    path = public_traffic_path()
    classes: dict[str, list[tuple[str, str]]] = {}
    if path is None:
        return classes
    with path.open() as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            if row["kind"] != kind:
                continue
            command = row["command"].replace("@ROOT@", root).replace("@HOME@", home)
            cwd = os.path.normpath(row.get("cwd", "@ROOT@").replace("@ROOT@", root))
            if cwd.startswith(root + "/"):
                os.makedirs(cwd, exist_ok=True)
            classes.setdefault(f"{row['agent']}, {row['repo']}", []).append((command, cwd))
    return classes


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
    if kind == "submodules":
        add_submodule(home, root, env)
    return str(root)


def add_submodule(home: Path, root: Path, env: Mapping[str, str]) -> None:
    """`third_party/bar`: a real submodule (its git directory in `.git/modules/`), cloned
    from a local repository."""
    upstream = home / "src" / "bar"
    (upstream / "bar").mkdir(parents=True, exist_ok=True)
    (upstream / "bar" / "core.py").write_text("def bar_init():\n    return 1\n")
    (upstream / "Makefile").write_text("all:\n\ttrue\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    steps = [
        [*git, "init", "-q", str(upstream)],
        [*git, "-C", str(upstream), "add", "-A"],
        [*git, "-C", str(upstream), "commit", "-qm", "bar"],
        [
            *git,
            "-C",
            str(root),
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            str(upstream),
            "third_party/bar",
        ],
    ]
    for argv in steps:
        subprocess.run(argv, check=True, env=dict(env), timeout=60, capture_output=True)


def init(root: str, env: Mapping[str, str], sandbox: str) -> None:
    argv = [sys.executable, "-m", "askgate", "init", "--yes", "--force", "--sandbox", sandbox]
    done = subprocess.run(
        [*argv, "--cwd", root], capture_output=True, env=dict(env), timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"askgate init failed: {done.stderr.decode()[-500:]}")


def without_host_list(root: str, env: Mapping[str, str]) -> None:
    """The policy init wrote, less `network = "policy"` and the `[net]` table (trusted
    again: an edited project file is not trusted until the user says so)."""
    path = Path(root) / ".askgate" / "policy.toml"
    kept: list[str] = []
    in_net = False
    for line in path.read_text().splitlines():
        if line.startswith("["):
            in_net = line.strip() == "[net]"
        if not in_net and not line.startswith("network ="):
            kept.append(line)
    path.write_text("\n".join(kept) + "\n")
    argv = [sys.executable, "-m", "askgate", "trust", root]
    done = subprocess.run(argv, capture_output=True, env=dict(env), timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"askgate trust failed: {done.stderr.decode()[-500:]}")


def measure(
    kind: str,
    *,
    sandbox: str = "auto",
    base: str | None = None,
    big_tree: bool = False,
    host_list: bool = True,
    public: bool = False,
) -> dict[str, Any]:
    """Decide the workload of `kind` under the policy `init --yes --sandbox SANDBOX` wrote
    (without its `[net]` host list unless `host_list`). Returns totals, per-class counts,
    the asked commands and whether the sandbox is on. `public`: the public traffic's
    commands of `kind` (classes are its sources) instead of the stand-in."""
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
        if not host_list:
            without_host_list(root, env)
        policy = Policy.load(root, env=env)
        if policy.errors:
            raise RuntimeError(f"the init policy does not load: {policy.errors[0]}")
        # With the sandbox required the hook asks about an allowed command whose plan is
        # incomplete: count those as the asks they are.
        plan_reason = plan_ask_reason(policy, root, env)
        data = traffic()
        if public:
            classes = public_workload(kind, root, env["HOME"])
        else:
            classes = {
                name: [(command, root) for command in commands]
                for name, commands in data.workload(kind, root, env["HOME"]).items()
            }
        per_class: dict[str, tuple[int, int]] = {}
        asked: list[str] = []
        reasons: dict[str, str] = {}
        allowed: set[str] = set()
        total = 0
        for name, commands in classes.items():
            asks = 0
            for command, cwd in commands:
                decision = policy.decide("bash", command, cwd=cwd)
                action = decision.action
                if action is Action.ALLOW and plan_reason is not None:
                    action = Action.ASK
                if action is Action.ASK:
                    asks += 1
                    asked.append(command)
                    reasons[command] = plan_reason or str(decision.reason)
                elif action is Action.ALLOW:
                    allowed.add(command)
            per_class[name] = (asks, len(commands))
            total += len(commands)
        must_not = [c.format(root=root, home=env["HOME"]) for c in data.MUST_NOT_ALLOW]
        return {
            "kind": kind,
            "sandboxed": policy.sandbox.bash == "required",
            "network": str(policy.sandbox.network),
            "plan_ask_reason": plan_reason,
            "total": total,
            "asks": len(asked),
            "share": len(asked) / total,
            "per_class": per_class,
            "asked": asked,
            "reasons": reasons,
            "wrongly_allowed": [c for c in must_not if c in allowed or _allowed(policy, c, root)],
        }
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)


def _allowed(policy: Any, command: str, root: str) -> bool:
    from askgate.policy.model import Action

    return bool(policy.decide("bash", command, cwd=root).action is Action.ALLOW)


def _mode_arguments(mode: str) -> dict[str, Any]:
    if mode == "no sandbox":
        return {"sandbox": "off"}
    return {"sandbox": "auto", "host_list": mode == "sandbox + net"}


def _row(measured: str, found: dict[str, Any]) -> Row:
    share = f"{found['share']:.1%} ({found['asks']} of {found['total']})"
    return Row(
        measured=measured,
        ours=Figure(name="askgate", note=share),
        target=f"<= {TARGET:.0%}" if found["sandboxed"] else "",
    )


def _label(kind: str, mode: str, found: dict[str, Any]) -> str:
    if mode != "no sandbox" and not found["sandboxed"]:
        mode = "no sandbox (the probe failed here)"
    return f"{kind} project, {mode}"


def run(quick: bool) -> AreaReport:
    import time

    started = time.perf_counter()
    rows: list[Row] = []
    notes: list[str] = []
    for kind in KINDS[:2] if quick else KINDS:
        for mode in MODES[:1] if quick else MODES:
            found = measure(kind, **_mode_arguments(mode))
            rows.append(_row(_label(kind, mode, found), found))
            if mode == MODES[0]:
                by_class = ", ".join(
                    f"{name} {asks}/{count}" for name, (asks, count) in found["per_class"].items()
                )
                notes.append(f"{kind} ({mode}) asks per class: {by_class}")
            if found["wrongly_allowed"]:
                notes.append(
                    f"{kind}, {mode}: ALLOWED what must not be: {found['wrongly_allowed']}"
                )
    notes += public_rows(rows, quick)
    if not quick:
        for mode in MODES[:2]:
            found = measure("node", big_tree=True, **_mode_arguments(mode))
            rows.append(
                _row(f"node project with {BIG_TREE_FILES} files in node_modules, {mode}", found)
            )
            if found["plan_ask_reason"]:
                notes.append(
                    f"node_modules: every allowed command asks: {found['plan_ask_reason']}"
                )
    notes += list(STAND_IN_LIMITS)
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )


def public_rows(rows: list[Row], quick: bool) -> list[str]:
    """Rows for the public traffic (per kind, sandbox on and off); notes per source."""
    if public_traffic_path() is None:
        return [
            f"public traffic not measured: no {PUBLIC_TRAFFIC_DEFAULT} (or "
            f"${PUBLIC_TRAFFIC_VARIABLE}); see docs/policy.md for where it comes from"
        ]
    notes: list[str] = []
    for kind in public_kinds():
        for mode in (MODES[0],) if quick else (MODES[0], MODES[2]):
            found = measure(kind, public=True, **_mode_arguments(mode))
            rows.append(_row("public traffic: " + _label(kind, mode, found), found))
            by_source = ", ".join(
                f"{name} {asks}/{count}" for name, (asks, count) in found["per_class"].items()
            )
            notes.append(f"public traffic, {kind} ({mode}) asks per source: {by_source}")
    return notes


# Where the stand-in may differ from real traffic (said under the table, every run).
STAND_IN_LIMITS = (
    "stand-in, not a replay: each command once; real sessions repeat a few (pytest after "
    "each edit) many times, so their share follows the commonest commands",
    "real traffic reads more and holds long one-off pipelines and inline scripts "
    "(python - <<EOF, node -e) this set has few of",
    "the projects are small and fresh (no origin remote, no lockfiles, few files): git "
    "remote work, lockfile-driven installs and real build trees may decide differently",
    "the agents' classes (claude code, codex, gemini cli, pi) are written from their own "
    "prompts' idioms, not from their sessions; Codex's apply_patch through the shell and "
    "long generated scripts are not in the set",
    "the lead's real figure (896 commands, 65% asks) was taken without the sandbox on an "
    "older policy; the public traffic rows replay real commands of public sessions "
    "(SWE-bench work, one developer's Claude Code, one Codex session: docs/policy.md)",
)

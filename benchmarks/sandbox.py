"""Area: the kernel sandbox — what `askgate sandbox -- true` adds over plain `true`.

All processes are measured whole (wall clock, fork to exit), taking turns in the same
run so machine load lands on every contender alike:

* `true` — the baseline;
* `bwrap … -- true` with the argument list askgate builds (the kernel's share);
* `askgate sandbox -- true` (Python start, policy load, plan, bwrap, cleanup);
* the wrapper an agent hook emits for `true` (askgate.sandbox.prepared: bash starts bwrap
  directly, no Python), run by bash as an agent's shell runs a command, against
  `bash -c true` in the same run (the hook's own time is the hook benchmark's);

for a typical profile (read deny `~/.ssh/**` and `**/.env*`, write deny `guarded/**`,
askgate's own state and `.git` protected) and for 200 hidden files. "Added" rows are
per-pair differences (askgate run minus the `true` run next to it). The I/O row times a
file-copy loop from inside the command (so start-up is not in it), inside and outside.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import NOT_BUILT, AreaReport, Figure, Row, Stats, run_process

NAME = "sandbox"
TITLE = "kernel sandbox: added latency per command and I/O inside"
TARGET_ADDED_MS = 10.0

POLICY = """\
default = "allow"
[read]
"~/.ssh/**" = "deny"
"**/.env*" = "deny"
[write]
"guarded/**" = "deny"
"""
COPY_LOOP = (
    "s=$(date +%s%N); for i in $(seq 300); do cp data.bin copy.bin; done; "
    "e=$(date +%s%N); echo $((e - s))"
)


def _base(prefix: str) -> str:
    """A directory for the world outside the scratch directories: a real HOME is not
    writable inside the sandbox, so the missing agent files there get no placeholders
    (under /tmp, the sandbox's scratch space, the world's HOME would be writable and
    every missing agent file would cost a mount no real setup has)."""
    parent = Path.home() / ".cache" / "askgate-bench"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return tempfile.mkdtemp(prefix=prefix, dir=parent)
    except OSError:
        return tempfile.mkdtemp(prefix=prefix)


def _world(base: Path, masks: int) -> tuple[dict[str, str], Path, Path]:
    home, project = base / "home", base / "proj"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret\n")
    (project / ".git").mkdir(parents=True)
    (project / ".env").write_text("X=1\n")
    (project / "guarded").mkdir()
    (project / "data.bin").write_bytes(os.urandom(64 * 1024))
    policy = POLICY
    if masks:
        (project / "keys").mkdir()
        for index in range(masks):
            (project / "keys" / f"k{index}.pem").write_text("k")
        policy += '[sandbox]\nhidden = ["keys/*.pem"]\n'
    (base / "policy.toml").write_text(policy)
    # PYTHONDONTWRITEBYTECODE is dropped: an installed askgate has its bytecode compiled,
    # and recompiling every module on each start would be measured otherwise.
    skip = ("ASKGATE_", "XDG_", "PYTHONDONTWRITEBYTECODE")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(skip)},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(base / "cfg"),
        "XDG_DATA_HOME": str(base / "data"),
        "ASKGATE_MANAGED_POLICY": str(base / "managed.toml"),
        "ASKGATE_AUDIT_LOG": str(base / "log.jsonl"),
    }
    return env, project, base / "policy.toml"


def _bwrap_argv(env: dict[str, str], project: Path, policy: Path) -> list[str]:
    """The argument list askgate would use, built in a child with the world's env."""
    script = (
        "import json, os, sys\n"
        "from askgate.policy.config import load_policy\n"
        "from askgate.policy.engine import Policy\n"
        "from askgate.sandbox.bwrap import bwrap_argv, find_bwrap\n"
        "from askgate.sandbox.placeholders import Registry, ensure_control_plane, state_directory\n"
        "from askgate.sandbox.plan import build_plan\n"
        "ensure_control_plane(os.environ)\n"
        "registry = Registry(state_directory(os.environ))\n"
        "with registry.locked():\n"
        "    empty = registry.ensure_empty_file()\n"
        "loaded = load_policy(sys.argv[1], config_files=[sys.argv[2]])\n"
        "plan = build_plan(Policy.from_loaded(loaded), loaded.sandbox, cwd=sys.argv[1])\n"
        "holes = [h for h in plan.write_holes if h.placeholder is None]\n"
        "hidden = [h for h in plan.read_denies if h.placeholder is None]\n"
        "import msgspec\n"
        "plan = msgspec.structs.replace(\n"
        "    plan, write_holes=tuple(holes), read_denies=tuple(hidden)\n"
        ")\n"
        "print(json.dumps(bwrap_argv(plan, ['/bin/true'], bwrap=find_bwrap(), empty_file=empty)))\n"
    )
    done = run_process(
        [sys.executable, "-c", script, str(project), str(policy)], env=env, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip().splitlines()[-1:])
    import json

    return list(json.loads(done.stdout))


def _askgate() -> list[str]:
    """The console script next to this Python (how an agent hook launches it), else -m."""
    script = Path(sys.executable).parent / "askgate"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "askgate"]


def _time(argv: list[str], env: dict[str, str], cwd: Path) -> int:
    start = time.perf_counter_ns()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=60)
    elapsed = time.perf_counter_ns() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed: {done.stderr.decode(errors='replace')[-300:]}")
    return elapsed


def _latency_rows(masks: int, runs: int, warmup: int) -> tuple[list[Row], list[str]]:
    base = Path(_base("askgate-bench-sandbox-"))
    try:
        env, project, policy = _world(base, masks)
        askgate = [*_askgate(), "sandbox", "--config", str(policy), "--"]
        contenders = {
            "true": ["/bin/true"],
            "bwrap": _bwrap_argv(env, project, policy),
            "askgate": [*askgate, "true"],
        }
        samples: dict[str, list[int]] = {key: [] for key in contenders}
        for _ in range(warmup):  # page cache, bytecode, probe cache
            for argv in contenders.values():
                _time(argv, env, project)
        for _ in range(runs):
            for key, argv in contenders.items():
                samples[key].append(_time(argv, env, project))
        added = [a - t for a, t in zip(samples["askgate"], samples["true"], strict=True)]
        added_bwrap = [b - t for b, t in zip(samples["bwrap"], samples["true"], strict=True)]
        label = "typical profile" if not masks else f"{masks} hidden files"
        # The 10 ms target is the hook-emitted wrapper's (what an agent's command runs): this
        # row starts a Python process per command, so it carries no target of its own.
        target = ""
        rows = [
            Row(
                measured=f"`askgate sandbox -- true`, {label} (whole process)",
                ours=Figure(name="askgate sandbox", stats=Stats.of(samples["askgate"])),
                peers=(
                    Figure(name="bwrap, same argv", stats=Stats.of(samples["bwrap"])),
                    Figure(name="plain true", stats=Stats.of(samples["true"])),
                ),
            ),
            Row(
                measured=f"added over plain `true`, {label}",
                ours=Figure(name="askgate sandbox", stats=Stats.of([float(x) for x in added])),
                peers=(
                    Figure(name="bwrap alone", stats=Stats.of([float(x) for x in added_bwrap])),
                ),
                target=target,
            ),
        ]
        bwrap_ms = Stats.of([float(x) for x in added_bwrap]).median_ns / 1e6
        notes = [
            f"{label}: the kernel sandbox (bwrap) adds {bwrap_ms:.1f} ms; the rest of the "
            "askgate figure is the Python process (start, imports, policy, plan)"
        ]
        return rows, notes
    finally:
        shutil.rmtree(base, ignore_errors=True)


BARE_BWRAP = (
    "bwrap", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev",
    "--proc", "/proc",
)  # fmt: skip
_PREPARE = """\
import json, os, sys
from askgate.policy.engine import Policy
from askgate.sandbox.plan import build_plan
from askgate.sandbox.prepared import ensure_state_directory, prepare_wrapper
ensure_state_directory(os.environ)
policy = Policy.load(sys.argv[1], config_files=[sys.argv[2]], env=os.environ)
plan = build_plan(policy, policy.sandbox, cwd=sys.argv[1], mode="on")
launcher = [sys.executable, "-m", "askgate"]
print(json.dumps([
    prepare_wrapper(plan, "true", env=os.environ, launcher=launcher, agent=None,
                    config_files=[sys.argv[2]])
    for _ in range(int(sys.argv[3]))
]))
"""


def _wrappers(env: dict[str, str], project: Path, policy: Path, count: int) -> list[str]:
    """`count` hook-prepared wrappers for `true` (each run is claimed once), made in a
    child with the world's env, as the hook process would."""
    done = run_process(
        [sys.executable, "-c", _PREPARE, str(project), str(policy), str(count)],
        env=env,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip().splitlines()[-1:])
    import json

    wrappers = json.loads(done.stdout)
    if not all(isinstance(w, str) for w in wrappers):
        raise RuntimeError("the prepared form does not apply here (bwrap unusable?)")
    return list(wrappers)


def _wrapper_row(masks: int, runs: int, warmup: int) -> tuple[Row, str]:
    base = Path(_base("askgate-bench-sandbox-hook-"))
    try:
        env, project, policy = _world(base, masks)
        wrappers = _wrappers(env, project, policy, runs + warmup)
        plain = ["/bin/bash", "-c", "true"]
        # The floor: bubblewrap alone, as bare as it gets, run by the same shell.
        bare = ["/bin/bash", "-c", f"{shlex.join(BARE_BWRAP)} /bin/true"]
        samples: dict[str, list[int]] = {"plain": [], "wrapper": [], "bare": []}
        for index, wrapped in enumerate(wrappers):
            times = (
                _time(plain, env, project),
                _time(["/bin/bash", "-c", wrapped], env, project),
                _time(bare, env, project),
            )
            if index >= warmup:
                for key, value in zip(("plain", "wrapper", "bare"), times, strict=True):
                    samples[key].append(value)
        added = [float(w - p) for w, p in zip(samples["wrapper"], samples["plain"], strict=True)]
        added_bare = [float(b - p) for b, p in zip(samples["bare"], samples["plain"], strict=True)]
        label = "typical profile" if not masks else f"{masks} masks"
        stats = Stats.of(added)
        row = Row(
            measured=f"hook-emitted wrapper, {label}: added over `bash -c true` (whole process)",
            ours=Figure(name="prepared wrapper", stats=stats),
            peers=(
                Figure(name="bare bwrap, added", stats=Stats.of(added_bare)),
                Figure(name="wrapper, whole", stats=Stats.of(samples["wrapper"])),
                Figure(name="bash -c true", stats=Stats.of(samples["plain"])),
            ),
            target=f"≤ {TARGET_ADDED_MS:.0f} ms added" if not masks else "",
        )
        note = (
            f"hook-emitted wrapper, {label}: adds {stats.median_ns / 1e6:.1f} ms (median of "
            f"{len(added)} interleaved runs) over the same `true` run by bash; bare bwrap "
            f"(`{shlex.join(BARE_BWRAP)}`) adds {Stats.of(added_bare).median_ns / 1e6:.1f} ms"
        )
        return row, note
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _io_row(runs: int) -> Row:
    base = Path(_base("askgate-bench-sandbox-io-"))
    try:
        env, project, policy = _world(base, 0)
        askgate = [*_askgate(), "sandbox", "--config", str(policy), "--"]
        inside: list[float] = []
        outside: list[float] = []
        for _ in range(runs):
            for argv, into in (
                ([*askgate, COPY_LOOP], inside),
                (["bash", "-c", COPY_LOOP], outside),
            ):
                done = subprocess.run(argv, env=env, cwd=project, capture_output=True, timeout=120)
                if done.returncode != 0:
                    raise RuntimeError(done.stderr.decode(errors="replace")[-300:])
                into.append(float(done.stdout.decode().strip().splitlines()[-1]))
        return Row(
            measured="300 × cp of 64 KiB inside the command (loop only)",
            ours=Figure(name="inside the sandbox", stats=Stats.of(inside)),
            peers=(Figure(name="outside", stats=Stats.of(outside)),),
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _unavailable() -> str | None:
    try:
        import askgate.sandbox.runner  # noqa: F401
    except ImportError:
        return NOT_BUILT
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed"
    done = run_process(["bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true"], timeout=30)
    return None if done.returncode == 0 else "bwrap cannot create a user namespace here"


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    missing = _unavailable()
    if missing is not None:
        return AreaReport(
            name=NAME,
            title=TITLE,
            status=NOT_BUILT if missing == NOT_BUILT else "partial",
            rows=(
                Row(
                    measured="`askgate sandbox -- true` (whole process)",
                    ours=Figure(name="askgate sandbox", note=missing),
                ),
            ),
            elapsed_s=time.perf_counter() - started,
        )
    runs, warmup = (2, 1) if quick else (30, 2)
    rows, notes = _latency_rows(0, runs, warmup)
    for masks, count in ((0, 3 if quick else 40), (200, 2 if quick else 20)):
        row, note = _wrapper_row(masks, count, 1 if quick else 3)
        rows.append(row)
        notes.append(note)
    more_rows, more_notes = _latency_rows(200, 1 if quick else 15, 0 if quick else 1)
    rows += more_rows
    notes += more_notes
    rows.append(_io_row(1 if quick else 10))
    return AreaReport(
        name=NAME,
        title=TITLE,
        status="ok",
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )

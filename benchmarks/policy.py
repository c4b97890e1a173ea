"""Area 1: policy evaluation — one decision per sample, askgate against cedarpy and casbin
evaluating the equivalent rule set on the same inputs in the same run.

askgate caches pattern containment per rule pair, so a decision that hits a rule for
the first time in a process costs more than a later one. Both are reported: "steady"
rows hit a fixed pool of rules that a warm-up has touched; "first hit" rows hit each
rule at most once (what a one-shot hook process sees).
"""

from __future__ import annotations

import gc
import importlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks import corpus
from benchmarks.harness import (
    NOT_BUILT,
    AreaReport,
    Budget,
    Figure,
    Row,
    Stats,
    sample_calls,
    sample_interleaved,
)
from benchmarks.peers import CasbinPeer, CedarPeer, available

NAME = "policy"
TITLE = "policy evaluation, one decision per sample"

SIZES = (100, 1_000, 10_000)
WARM_POOL = 64
PEERS_MISSING = "not installed (pip install -e '.[bench]')"


class Settings:
    def __init__(self, quick: bool) -> None:
        self.quick = quick
        if quick:
            self.ours = Budget(warmup=20, min_samples=50, max_samples=2_000, seconds=0.05)
            self.peer = Budget(warmup=1, min_samples=2, max_samples=200, seconds=0.05)
            self.load_runs = 1
            self.rounds = 1
        else:
            self.ours = Budget(warmup=300, min_samples=1_000, max_samples=50_000, seconds=1.0)
            self.peer = Budget(warmup=2, min_samples=15, max_samples=5_000, seconds=1.5)
            self.load_runs = 3
            self.rounds = 5


def _clamp(budget: Budget, inputs: int) -> Budget:
    """Never ask for more samples (plus warm-up) than there are distinct inputs."""
    warmup = min(budget.warmup, max(0, inputs - budget.min_samples))
    top = max(1, inputs - warmup)
    return Budget(
        warmup=warmup,
        min_samples=min(budget.min_samples, top),
        max_samples=min(budget.max_samples, top),
        seconds=budget.seconds,
    )


# --- askgate, found by import -----------------------------------------------------------


def _has(module: str, *names: str) -> bool:
    """Feature check: the module imports and defines the names (a half-written package
    that imports but lacks them counts as not built)."""
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return False
    return all(hasattr(loaded, n) for n in names)


def _askgate_missing(need_shell: bool) -> str | None:
    if not _has("askgate.policy.rules", "RuleSet"):
        return NOT_BUILT
    if need_shell and not (
        _has("askgate.policy.engine", "Policy") and _has("askgate.policy.shell", "analyze")
    ):
        return NOT_BUILT
    return None


def _rules(specs: Sequence[corpus.RuleSpec], surface: str) -> list[Any]:
    from askgate.policy.model import Action, Origin, Rule, Surface

    return [
        Rule(surface=Surface(surface), pattern=p, action=Action(a), origin=Origin.USER, rank=1)
        for p, a in specs
    ]


class Askgate:
    """askgate's engine: `Policy.decide` when the engine exists, else `RuleSet.evaluate`."""

    def __init__(self, rules: Sequence[Any], surface: str, root: str) -> None:
        from askgate.policy.model import Action, Surface

        self._surface = Surface(surface)
        self._root = root
        self._policy: Any = None
        self._ruleset: Any = None
        if _has("askgate.policy.engine", "Policy"):
            from askgate.policy.engine import Policy

            # HOME beside the project, not the project itself: a project root that is the
            # home directory (or above it) is no project at all (paths.bounded_project_root).
            env = {"HOME": root.rstrip("/") + "-home", "PATH": "/usr/bin:/bin"}
            self._policy = Policy.from_rules(rules, default=Action.ASK, project_root=root, env=env)
            self.api = "Policy.decide"
        else:
            from askgate.policy.rules import RuleSet

            self._ruleset = RuleSet(rules, home=root)
            self.api = "RuleSet.evaluate (engine not built yet)"

    def decide(self, value: str) -> object:
        if self._policy is not None:
            return self._policy.decide(self._surface, value, cwd=self._root)
        return self._ruleset.evaluate(self._surface, value, None)

    def action(self, value: str) -> str:
        result: Any = self.decide(value)
        return str(result.action) if result.action is not None else "ask"

    def units(self, value: str) -> tuple[str, ...]:
        result: Any = self.decide(value)
        return tuple(u.command for u in getattr(result, "units", ()))


def _timed_build(factory: Callable[[], Any], runs: int) -> tuple[Any, Stats]:
    samples: list[int] = []
    built: Any = None
    for _ in range(runs):
        start = time.perf_counter_ns()
        built = factory()
        samples.append(time.perf_counter_ns() - start)
    return built, Stats.of(samples)


# --- mcp rows: every size and contender sampled in turns ------------------------------------


class _Contenders:
    """The engines for one rule-set size, built (and the build timed) once."""

    def __init__(self, size: int, root: str, s: Settings, notes: list[str]) -> None:
        self.size = size
        specs = corpus.mcp_rules(size)
        runs = s.load_runs if size == SIZES[-1] else 1
        self.ours: Askgate | None = None
        self.missing = _askgate_missing(need_shell=False)
        self.load: dict[str, Stats] = {}
        if self.missing is None:
            rules = _rules(specs, "mcp")
            self.ours, self.load["askgate"] = _timed_build(
                lambda: Askgate(rules, "mcp", root), runs
            )
            if size == SIZES[0]:
                notes.append(f"askgate API measured: {self.ours.api}")
        self.cedar: CedarPeer | None = None
        self.casbin: CasbinPeer | None = None
        if available("cedarpy"):
            self.cedar, self.load["cedarpy"] = _timed_build(lambda: CedarPeer(specs), runs)
        if available("casbin"):
            self.casbin, self.load["casbin"] = _timed_build(
                lambda: CasbinPeer(specs, regex=False), runs
            )

    def calls(
        self, queries: list[str], s: Settings
    ) -> dict[str, tuple[Callable[[int], object], Budget]]:
        out: dict[str, tuple[Callable[[int], object], Budget]] = {}
        if (ours := self.ours) is not None:
            out["askgate"] = (lambda i: ours.decide(queries[i]), _clamp(s.ours, len(queries)))
        if (cedar := self.cedar) is not None:
            out["cedarpy"] = (
                lambda i: cedar.is_authorized(queries[i]),
                _clamp(s.peer, len(queries)),
            )
        if (casbin := self.casbin) is not None:
            out["casbin"] = (lambda i: casbin.enforce_ex(queries[i]), _clamp(s.peer, len(queries)))
        return out

    def answers(self, probes: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        if self.ours is not None:
            out["askgate"] = [self.ours.action(v) for v in probes]
        if self.cedar is not None:
            out["cedarpy"] = [self.cedar.decide(v) for v in probes]
        if self.casbin is not None:
            out["casbin"] = [self.casbin.decide(v) for v in probes]
        return out


def _row(measured: str, stats: dict[str, Stats], missing: str | None, target: str = "") -> Row:
    ours = (
        Figure(name="askgate", stats=stats["askgate"])
        if "askgate" in stats
        else Figure(name="askgate", note=missing or NOT_BUILT)
    )
    peers = tuple(
        Figure(name=name, stats=stats[name])
        if name in stats
        else Figure(name=name, note=PEERS_MISSING)
        for name in ("cedarpy", "casbin")
    )
    return Row(measured=measured, ours=ours, peers=peers, target=target)


def _mcp_rows(
    root: str, s: Settings, notes: list[str], medians: dict[str, dict[str, float]]
) -> list[Row]:
    engines = [_Contenders(size, root, s, notes) for size in SIZES]
    # Tens of thousands of long-lived rule objects: keep them out of every collection,
    # or each gc.collect() before a sampling slice costs more than the slice.
    gc.collect()
    gc.freeze()
    try:
        return _sample_mcp(engines, s, notes, medians)
    finally:
        gc.unfreeze()


def _sample_mcp(
    engines: list[_Contenders],
    s: Settings,
    notes: list[str],
    medians: dict[str, dict[str, float]],
) -> list[Row]:
    pools = {c.size: corpus.mcp_pools(c.size, WARM_POOL) for c in engines}

    # First hits go first, before anything has touched their rules.
    cold: dict[tuple[int, str], tuple[Callable[[int], object], Budget]] = {}
    for c in engines:
        queries = corpus.mcp_queries(pools[c.size][1], len(pools[c.size][1]), "c")
        cold.update({(c.size, name): call for name, call in c.calls(queries, s).items()})
    cold_stats = sample_interleaved(cold, s.rounds)

    warm: dict[tuple[int, str], tuple[Callable[[int], object], Budget]] = {}
    for c in engines:
        if c.ours is not None:
            for index in pools[c.size][0]:  # touch every steady-state rule once
                c.ours.decide(f"server_{index}:tool_warmup")
        queries = corpus.mcp_queries(pools[c.size][0], s.ours.max_samples + s.ours.warmup, "w")
        warm.update({(c.size, name): call for name, call in c.calls(queries, s).items()})
    warm_stats = sample_interleaved(warm, s.rounds)

    rows: list[Row] = []
    for c in engines:
        size = c.size
        by_kind = {
            kind: {name: st for (sz, name), st in found.items() if sz == size}
            for kind, found in (("steady", warm_stats), ("first hit", cold_stats))
        }
        target = "≤ 10 µs, ≥ 100× cedarpy" if size == SIZES[-1] else ""
        rows.append(_row(f"mcp, {size:,} rules, steady", by_kind["steady"], c.missing, target))
        rows.append(_row(f"mcp, {size:,} rules, first hit", by_kind["first hit"], c.missing))
        for kind, found in by_kind.items():
            for name, st in found.items():
                medians.setdefault(f"{name} {kind}", {})[str(size)] = st.median_ns
        probes = corpus.mcp_probes(size)[: 4 if s.quick else None]
        notes.extend(_agreement(f"mcp {size:,} rules", probes, c.answers(probes)))
    last = engines[-1]
    if last.load:
        rows.append(_row(f"policy load, {last.size:,} rules", last.load, last.missing))
    return rows


# --- bash ---------------------------------------------------------------------------------


def _bash_row(
    label: str,
    make: Callable[[int], tuple[str, tuple[str, ...]]],
    root: str,
    s: Settings,
    notes: list[str],
    target: str,
) -> Row:
    specs = corpus.bash_rules()
    inputs = [make(i) for i in range(s.ours.max_samples + s.ours.warmup)]
    sample_command, sample_units = inputs[0]
    answers: dict[str, list[str]] = {}

    missing = _askgate_missing(need_shell=True)
    if missing:
        ours = Figure(name="askgate", note=missing)
    else:
        engine = Askgate(_rules(specs, "bash"), "bash", root)
        found = engine.units(sample_command)
        if found != sample_units:
            notes.append(
                f"{label}: askgate found units {list(found)}, the peers were given "
                f"{list(sample_units)}"
            )
        answers["askgate"] = [engine.action(sample_command)]
        stats = sample_calls(lambda i: engine.decide(inputs[i][0]), s.ours)
        ours = Figure(name="askgate", stats=stats)

    n_units = len(sample_units)
    given = f"{n_units} units given"
    peers: list[Figure] = []
    if available("cedarpy"):
        cedar = CedarPeer(specs)
        answers["cedarpy"] = [cedar.decide_all(sample_units)]
        stats = sample_calls(lambda i: cedar.is_authorized_batch(inputs[i][1]), s.peer)
        peers.append(Figure(name="cedarpy", stats=stats, note=f"{given}, batch"))
    else:
        peers.append(Figure(name="cedarpy", note=PEERS_MISSING))
    if available("casbin"):
        casbin = CasbinPeer(specs, regex=True)
        answers["casbin"] = [casbin.decide_all(sample_units)]

        def casbin_all(i: int) -> None:
            for unit in inputs[i][1]:
                casbin.enforce_ex(unit)

        stats = sample_calls(casbin_all, s.peer)
        peers.append(Figure(name="casbin", stats=stats, note=given))
    else:
        peers.append(Figure(name="casbin", note=PEERS_MISSING))
    notes.extend(_agreement(f"bash {label}", [sample_command], answers))
    measured = f"bash {label}, {n_units} units, {len(sample_command)} chars, parse incl."
    return Row(measured=measured, ours=ours, peers=tuple(peers), target=target)


# --- notes ----------------------------------------------------------------------------------


def _agreement(label: str, probes: Sequence[str], answers: dict[str, list[str]]) -> list[str]:
    if len(answers) < 2:
        return []
    names = sorted(answers)
    differing = [
        (value, {n: answers[n][k] for n in names})
        for k, value in enumerate(probes)
        if len({answers[n][k] for n in names}) > 1
    ]
    if not differing:
        return [f"{label}: {', '.join(names)} give the same answer on {len(probes)} probe(s)"]
    value, got = differing[0]
    shown = ", ".join(f"{n}={a}" for n, a in got.items())
    value = value if len(value) <= 60 else value[:57] + "..."
    return [f"{label}: DISAGREE on {len(differing)}/{len(probes)} probes, e.g. {value!r}: {shown}"]


def _scaling_notes(medians: dict[str, dict[str, float]]) -> list[str]:
    out = []
    lo, hi = str(SIZES[0]), str(SIZES[-1])
    for name, by_size in medians.items():
        if lo in by_size and hi in by_size and by_size[lo] > 0:
            aim = " (target ≤ 1.5×)" if name == "askgate steady" else ""
            out.append(
                f"{name}: median at {SIZES[-1]:,} ÷ at {SIZES[0]:,} rules = "
                f"{by_size[hi] / by_size[lo]:.2f}×{aim}"
            )
    cedar = medians.get("cedarpy steady", {}).get(hi)
    for kind in ("steady", "first hit"):
        ours = medians.get(f"askgate {kind}", {}).get(hi)
        if ours and cedar:
            out.append(
                f"at {SIZES[-1]:,} rules askgate ({kind}) is {cedar / ours:,.1f}× faster than "
                "cedarpy (target ≥ 100×)"
            )
    return out


def run(quick: bool) -> AreaReport:
    started = time.perf_counter()
    s = Settings(quick)
    notes: list[str] = []
    medians: dict[str, dict[str, float]] = {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="askgate-bench-") as root:
        # A project like the one the commands were written for: `cd src` succeeds and
        # `ls ../docs` stays inside it (the analysis looks at which directories exist).
        for directory in ("src", "docs", ".git"):
            os.makedirs(os.path.join(root, directory), exist_ok=True)
        rows.extend(_mcp_rows(root, s, notes, medians))
        rows.append(_bash_row("typical", corpus.typical_command, root, s, notes, "≤ 100 µs"))
        rows.append(_bash_row("long", corpus.long_command, root, s, notes, ""))
    notes.extend(_scaling_notes(medians))
    policies = len([1 for _, a in corpus.mcp_rules(SIZES[-1]) if a != "ask"])
    notes.append(
        f"peers get the allow/deny rules (ask = no policy): {policies:,} Cedar policies at "
        f"{SIZES[-1]:,} rules; casbin matches with globMatch (mcp) / regexMatch (bash)"
    )
    ours_built = all(r.ours.stats is not None for r in rows)
    any_built = any(r.ours.stats is not None for r in rows)
    status = "ok" if ours_built else "partial" if any_built else NOT_BUILT
    return AreaReport(
        name=NAME,
        title=TITLE,
        status=status,
        rows=tuple(rows),
        notes=tuple(notes),
        elapsed_s=time.perf_counter() - started,
    )

"""The benchmark instrument itself: statistics, sampling, and the claim that the peers
evaluate the same rules as askgate (their translated patterns match the same values)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

# `benchmarks` is a top-level package of the repository, not of the installed project.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import corpus
from benchmarks.harness import (
    Budget,
    Figure,
    ProcessFailed,
    Row,
    Stats,
    ratio,
    sample_calls,
    sample_process,
)


def test_stats_median_and_nearest_rank_p99() -> None:
    s = Stats.of(list(range(1, 101)))  # 1..100
    assert s.n == 100
    assert s.median_ns == 50.5
    assert s.p99_ns == 99
    assert (s.min_ns, s.max_ns) == (1, 100)
    small = Stats.of([5, 1, 3])
    assert small.median_ns == 3
    assert small.p99_ns == 5  # with few samples p99 is the maximum
    with pytest.raises(ValueError):
        Stats.of([])


def test_sample_calls_feeds_fresh_indices_and_respects_counts() -> None:
    seen: list[int] = []
    budget = Budget(warmup=3, min_samples=5, max_samples=8, seconds=0.0)
    stats = sample_calls(seen.append, budget)
    # Warm-up indices come after the measured ones, so no measured input was seen before.
    assert seen[:3] == [8, 9, 10]
    assert seen[3:] == [0, 1, 2, 3, 4]
    assert stats.n == 5


def test_ratio_is_peer_over_ours_and_absent_without_both() -> None:
    ours = Figure(name="askgate", stats=Stats.of([10, 10]))
    peer = Figure(name="cedarpy", stats=Stats.of([250, 250]))
    assert ratio(peer, ours) == 25
    assert ratio(Figure(name="x", note="not built yet"), ours) is None
    row = Row(measured="m", ours=Figure(name="askgate", note="not built yet"), peers=(peer,))
    assert ratio(row.peers[0], row.ours) is None


def test_sample_process_rejects_a_wrong_answer() -> None:
    def want_yes(done: object) -> str | None:
        out = getattr(done, "stdout", b"")
        return None if out.strip() == b"yes" else f"said {out!r}"

    argv = [sys.executable, "-c", "print('yes')"]
    assert sample_process(argv, runs=2, warmup=0, check=want_yes).n == 2
    with pytest.raises(ProcessFailed):
        sample_process([sys.executable, "-c", "print('no')"], runs=1, check=want_yes)


def _values(rng: random.Random, pieces: list[str], count: int) -> list[str]:
    return ["".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6))) for _ in range(count)]


def test_casbin_regex_translation_matches_askgate_wildcards() -> None:
    import re

    from askgate.policy.model import Surface
    from askgate.policy.patterns import compile_pattern, kind_of

    rng = random.Random(1)
    pieces = ["git", " ", "status", "push", "--force", "--no-verify", "x", "rm", "-rf", "/"]
    values = [*_values(rng, pieces, 400), "git status", "git push --force now", "rm -rf /"]
    for pattern, _ in corpus.bash_rules(45):
        ours = compile_pattern(kind_of(Surface.BASH), pattern)
        theirs = re.compile(corpus.wildcard_regex(pattern))
        for value in values:
            assert ours.matches(value) == (theirs.match(value) is not None), (pattern, value)


def test_cedar_translation_matches_askgate_wildcards() -> None:
    cedarpy = pytest.importorskip("cedarpy")
    from askgate.policy.model import Surface
    from askgate.policy.patterns import compile_pattern, kind_of

    rules = corpus.bash_rules(45)
    values = ["git status", "git status -s", "git statusx", "rm -rf /", "git commit --no-verify"]
    for pattern, action in rules:
        if action == "ask":
            continue
        policy = cedarpy.PolicySet.from_str(corpus.cedar_policies([(pattern, "allow")]))
        ours = compile_pattern(kind_of(Surface.BASH), pattern)
        for value in values:
            got = cedarpy.is_authorized(corpus.cedar_request(value), policy, []).allowed
            assert got == ours.matches(value), (pattern, value)


def test_peers_answer_like_askgate_on_the_mcp_probes() -> None:
    pytest.importorskip("cedarpy")
    pytest.importorskip("casbin")
    from benchmarks.peers import CasbinPeer, CedarPeer

    rules = corpus.mcp_rules(100)
    cedar, casbin = CedarPeer(rules), CasbinPeer(rules, regex=False)
    expected = {"allow", "deny", "ask"}
    answers = {v: (cedar.decide(v), casbin.decide(v)) for v in corpus.mcp_probes(100)}
    assert {a for a, _ in answers.values()} == expected  # the probes cover every answer
    assert all(a == b for a, b in answers.values()), answers
    assert answers["unknown:thing"] == ("ask", "ask")
    assert answers["server_1:delete_repo"] == ("deny", "deny")


def test_queries_are_distinct_and_pools_disjoint() -> None:
    warm, cold = corpus.mcp_pools(1_000, 64)
    assert len(warm) == 64 and not set(warm) & set(cold)
    queries = corpus.mcp_queries(warm, 500, "w")
    assert len(set(queries)) == 500
    command, units = corpus.long_command(7)
    assert len(units) == 30 and "tail -n 8" in units and "tail -n 8" in command

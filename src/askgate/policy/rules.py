"""The evaluator: which rule wins for one (surface, value).

1. Collect every rule that matches the value.
2. Drop each rule that is overridden: another matching, trusted rule whose pattern
   is strictly narrower and whose rank is the same or higher, or an equivalent
   pattern from a strictly higher rank. A user-file deny is never overridden by a
   project file's rule (trusted or not).
3. The answer is the strictest action left standing (deny > ask > allow).

Order in a file never matters. Rules are indexed by the literal prefix of their
pattern in a dict per prefix, so a lookup probes each distinct prefix length once
and only tests the rules whose prefix the value actually starts with (plus the
rules with no literal prefix at all, such as ``*``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import msgspec

from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.patterns import (
    Pattern,
    compile_pattern,
    equivalent,
    kind_of,
    strictly_narrower,
)

__all__ = [
    "Action",
    "CompiledRule",
    "Evaluation",
    "Origin",
    "Rule",
    "RuleSet",
    "Surface",
    "expand_path_pattern",
]


def expand_path_pattern(pattern: str, *, home: str, base_dir: str | None) -> str:
    """Make a path glob absolute: ``~``/``$HOME`` expand, relative joins `base_dir`.

    A pattern that starts with ``**`` matches at any depth anywhere, so it is
    left alone rather than being pinned under the project root.
    """
    for prefix in ("${HOME}", "$HOME", "~"):
        if pattern == prefix:
            return home
        if pattern.startswith(prefix + "/"):
            return home.rstrip("/") + pattern[len(prefix) :]
    if pattern.startswith(("/", "**")):
        return pattern
    if base_dir:
        stripped = pattern[2:] if pattern.startswith("./") else pattern
        return base_dir.rstrip("/") + "/" + stripped
    return pattern


class CompiledRule(msgspec.Struct, frozen=True):
    rule: Rule
    pattern: Pattern


class Evaluation(msgspec.Struct, frozen=True):
    """The result of one lookup. `action`/`rule` are None when nothing matched."""

    action: Action | None
    rule: Rule | None
    matched: tuple[Rule, ...] = ()
    standing: tuple[Rule, ...] = ()


_NO_MATCH = Evaluation(None, None)
_MATCHED_CACHE_LIMIT = 65_536


class _PrefixIndex:
    """Rules bucketed by their literal prefix.

    A lookup tries each distinct prefix length once (a slice and a dict probe),
    so its cost follows the number of distinct prefix lengths that fit the
    value, never the number of rules.
    """

    __slots__ = ("buckets", "lengths")

    def __init__(self) -> None:
        self.buckets: dict[str, list[CompiledRule]] = {}
        self.lengths: list[int] = []

    def add(self, key: str, item: CompiledRule) -> None:
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = []
            if len(key) not in self.lengths:
                self.lengths.append(len(key))
                self.lengths.sort()
        bucket.append(item)

    def candidates(self, value: str) -> list[CompiledRule]:
        found: list[CompiledRule] = []
        buckets = self.buckets
        size = len(value)
        for length in self.lengths:
            if length > size:
                break
            bucket = buckets.get(value[:length])
            if bucket is not None:
                found.extend(bucket)
        return found


class RuleSet:
    """An indexed set of rules, built once per policy load. Its rules never change after
    construction (so answers can be cached); it keeps per-matched-set memos as it is
    used."""

    def __init__(self, rules: Iterable[Rule], *, home: str | None = None) -> None:
        self._home = home if home is not None else os.path.expanduser("~")
        self._index: dict[tuple[Surface, str | None], _PrefixIndex] = {}
        self._rules: list[Rule] = []
        self._by_matched: dict[tuple[int, ...], Evaluation] = {}
        for rule in rules:
            self._add(rule)

    @property
    def rules(self) -> tuple[Rule, ...]:
        return tuple(self._rules)

    def __len__(self) -> int:
        return len(self._rules)

    def compile(self, rule: Rule) -> Pattern:
        text = rule.pattern
        if rule.surface.is_path:
            text = expand_path_pattern(text, home=self._home, base_dir=rule.base_dir)
        return compile_pattern(kind_of(rule.surface), text)

    def _add(self, rule: Rule) -> None:
        pattern = self.compile(rule)
        key = (rule.surface, rule.agent)
        trie = self._index.get(key)
        if trie is None:
            trie = self._index[key] = _PrefixIndex()
        trie.add(pattern.literal_prefix, CompiledRule(rule, pattern))
        self._rules.append(rule)

    def matching(self, surface: Surface, value: str, agent: str | None) -> list[CompiledRule]:
        found: list[CompiledRule] = []
        for key in ((surface, None), (surface, agent)) if agent else ((surface, None),):
            index = self._index.get(key)
            if index is None:
                continue
            found.extend(c for c in index.candidates(value) if c.pattern.match(value))
        return found

    def evaluate(self, surface: Surface, value: str, agent: str | None = None) -> Evaluation:
        matched = self.matching(surface, value, agent)
        if not matched:
            return _NO_MATCH
        # Which rules stand depends only on the set that matched, not on the value:
        # remember the answer per set (values that hit the same rules share it).
        key = tuple(map(id, matched))
        evaluation = self._by_matched.get(key)
        if evaluation is None:
            standing = [c for c in matched if not _overridden(c, matched)]
            winner = max(standing, key=_winner_key)
            evaluation = Evaluation(
                winner.rule.action,
                winner.rule,
                tuple(c.rule for c in matched),
                tuple(c.rule for c in standing),
            )
            if len(self._by_matched) >= _MATCHED_CACHE_LIMIT:
                self._by_matched.clear()
            self._by_matched[key] = evaluation
        return evaluation


# A project file may tighten anything and loosen the user's asks and default, never the
# user's denies (a trusted project's `~/.ssh/config` allow must not lift `~/.ssh/**`).
_USER_ORIGINS = frozenset({Origin.USER, Origin.USER_AGENT})
_PROJECT_ORIGINS = frozenset({Origin.PROJECT, Origin.PROJECT_AGENT})


def overrides(other: CompiledRule, rule: CompiledRule) -> bool:
    """Does `other` override `rule`? (both already match the value)"""
    if not other.rule.trusted or other.rule.rank < rule.rule.rank:
        return False
    if (
        rule.rule.action is Action.DENY
        and rule.rule.origin in _USER_ORIGINS
        and other.rule.origin in _PROJECT_ORIGINS
    ):
        return False  # a user's deny is final over project files, trusted or not
    if strictly_narrower(other.pattern, rule.pattern):
        return True
    # An equivalent pattern overrides only from a strictly higher rank.
    return other.rule.rank > rule.rule.rank and equivalent(other.pattern, rule.pattern)


def _overridden(rule: CompiledRule, matched: list[CompiledRule]) -> bool:
    return any(other is not rule and overrides(other, rule) for other in matched)


def _winner_key(c: CompiledRule) -> tuple[int, int, int]:
    # Strictest first; among equals, report the highest-ranked, most literal rule.
    return (c.rule.action.strictness, c.rule.rank, len(c.pattern.literal_prefix))

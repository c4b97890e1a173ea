"""The peers (cedarpy, pycasbin) behind one small interface, with answers read as
allow / ask / deny so their decisions can be checked against askgate's.

Both are configured for their fastest reusable form: Cedar's policy set and an
empty entity set are parsed once (`PolicySet.from_str`, `Entities.from_json_str`),
Casbin's model and policies are loaded once into one `Enforcer`.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

from benchmarks.corpus import (
    CASBIN_MODEL,
    RuleSpec,
    casbin_policies,
    cedar_policies,
    cedar_request,
)


def available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class CedarPeer:
    name = "cedarpy"

    def __init__(self, rules: Sequence[RuleSpec]) -> None:
        import cedarpy

        self._cedarpy: Any = cedarpy
        self.policy_text = cedar_policies(rules)
        self._policies = cedarpy.PolicySet.from_str(self.policy_text)
        self._entities = cedarpy.Entities.from_json_str("[]")

    def is_authorized(self, value: str) -> object:
        return self._cedarpy.is_authorized(cedar_request(value), self._policies, self._entities)

    def is_authorized_batch(self, values: Sequence[str]) -> object:
        requests = [cedar_request(v) for v in values]
        return self._cedarpy.is_authorized_batch(requests, self._policies, self._entities)

    def decide(self, value: str) -> str:
        return self._read(self.is_authorized(value))

    def decide_all(self, values: Sequence[str]) -> str:
        results = self.is_authorized_batch(values)
        assert isinstance(results, list)
        return _strictest([self._read(r) for r in results])

    def _read(self, result: Any) -> str:
        if result.diagnostics.errors:
            return "deny"
        if result.allowed:
            return "allow"
        # Deny with a determining policy is a forbid; with none, nothing permitted: ask.
        return "deny" if result.diagnostics.reasons else "ask"


class CasbinPeer:
    name = "casbin"

    def __init__(self, rules: Sequence[RuleSpec], *, regex: bool) -> None:
        import casbin

        matcher = "regexMatch" if regex else "globMatch"
        model = casbin.Enforcer.new_model(text=CASBIN_MODEL.format(matcher=matcher))
        # enable_log=False (the default) keeps per-call logging out of the timing.
        self._enforcer: Any = casbin.Enforcer(model, enable_log=False)
        self.matcher = matcher
        policies = casbin_policies(rules, regex=regex)
        if policies:
            self._enforcer.add_policies(policies)

    def enforce_ex(self, value: str) -> tuple[bool, list[str]]:
        result: tuple[bool, list[str]] = self._enforcer.enforce_ex(value)
        return result

    def decide(self, value: str) -> str:
        allowed, explain = self.enforce_ex(value)
        if allowed:
            return "allow"
        return "deny" if explain and explain[-1] == "deny" else "ask"

    def decide_all(self, values: Sequence[str]) -> str:
        return _strictest([self.decide(v) for v in values])


_ORDER = {"allow": 0, "ask": 1, "deny": 2}


def _strictest(actions: Sequence[str]) -> str:
    return max(actions, key=_ORDER.__getitem__) if actions else "ask"

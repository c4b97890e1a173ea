"""The plan's network fields under `network = "policy"` (a leaf: plan.py imports it, and
netproxy.py, which runs the proxy, imports plan.py — so neither imports the other back)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from askgate.policy.model import Surface

if TYPE_CHECKING:
    from askgate.policy.engine import Policy


def plan_fields(policy: Policy, agent: str | None) -> dict[str, object]:
    """The plan's network fields under `network = "policy"`: the `[net]` rules that apply
    to `agent`, the default and yolo, so the proxy decides as the policy does."""
    import msgspec

    # An agent's own rules keep their rank (which is what makes them win) but are
    # matched for every connection: the plan is this agent's already.
    rules = tuple(
        msgspec.structs.replace(rule, agent=None)
        for rule in policy.rules.rules
        if rule.surface is Surface.NET and (rule.agent is None or rule.agent == agent)
    )
    return {
        "net_proxy": True,
        "net_rules": rules,
        "net_default": str(policy.default),
        "net_yolo": policy.yolo,
    }

"""The plan's network fields under `network = "policy"` (a leaf: plan.py imports it, and
netproxy.py, which runs the proxy, imports plan.py — so neither imports the other back)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from askgate.policy.model import Surface

if TYPE_CHECKING:
    from askgate.policy.engine import Policy

# askgate's own loopback ports: whatever `[net]` allows (`"localhost:*" = "allow"`), a
# sandboxed command never reaches them through the proxy — the daemon's http hook port
# (answering it, or probing it, is the guard's own channel) and the approval server's.
DAEMON_PORT_BASE = 47000  # the daemon's per-user default: 47000 + uid % 1000 (daemon/server.py)
DAEMON_STATE_NAME = "daemon.json"  # written by the daemon in its runtime directory
APPROVAL_SERVER_PORT = 8765  # `askgate server`'s default (server/cli.py)


def askgate_ports(env: Mapping[str, str]) -> tuple[int, ...]:
    """The loopback ports askgate itself listens on for this user: the daemon's default
    (`$ASKGATE_DAEMON_PORT`, else 47000 + uid % 1000), the port the running daemon
    recorded in its runtime directory (`daemon.json`), the approval server's default and
    the port of `$ASKGATE_SERVER` when that names this machine."""
    from askgate import locations
    from askgate.policy.net import LOOPBACK_NAMES, is_loopback

    ports = {APPROVAL_SERVER_PORT}
    configured = env.get("ASKGATE_DAEMON_PORT", "")
    if configured.isdigit() and 0 < int(configured) < 65536:
        ports.add(int(configured))
    ports.add(DAEMON_PORT_BASE + os.getuid() % 1000)
    try:
        path = os.path.join(locations.daemon_socket_dir(env), DAEMON_STATE_NAME)
        with open(path, "rb") as handle:
            recorded = json.loads(handle.read(65536)).get("port")
        if isinstance(recorded, int) and 0 < recorded < 65536:
            ports.add(recorded)
    except (OSError, ValueError, AttributeError):
        pass
    server = env.get("ASKGATE_SERVER", "").strip()
    if server:
        try:
            parts = urlsplit(server)
            host = (parts.hostname or "").lower()
            if host in LOOPBACK_NAMES or is_loopback(host) or host in ("0.0.0.0", "::"):
                ports.add(parts.port or (443 if parts.scheme == "https" else 80))
        except ValueError:
            pass
    return tuple(sorted(ports))


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
        "net_floor_ports": askgate_ports(policy.env),
    }

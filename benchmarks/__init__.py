"""Side-by-side performance suite: `python -m benchmarks` (see docs/performance.md).

Each area module has `NAME`, `TITLE` and `run(quick: bool) -> AreaReport`. An area
whose askgate part cannot be imported still runs and says "not built yet" for
askgate's figures, measuring whatever baselines it can.
"""

from __future__ import annotations

from benchmarks import (
    acp_proxy,
    approval,
    ask_share,
    forwarding,
    frameworks,
    hook,
    mcp_gateway,
    policy,
    rpc_codec,
    sandbox,
)

AREAS = (
    policy,
    hook,
    approval,
    forwarding,
    rpc_codec,
    acp_proxy,
    mcp_gateway,
    sandbox,
    ask_share,
    frameworks,
)

__all__ = ["AREAS"]

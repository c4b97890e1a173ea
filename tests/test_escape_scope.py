"""Fail-closed paths of the escape fixes that the kernel here cannot show by itself."""

from __future__ import annotations

import pytest

from askgate.sandbox import landlock, runner
from askgate.sandbox.plan import PlanEntry, SandboxPlan


def _plan(*, network: bool, hidden: bool) -> SandboxPlan:
    denies = (
        (PlanEntry(path="/h/.ssh", kind="dir", why='read "~/.ssh/**" = deny'),) if hidden else ()
    )
    return SandboxPlan(
        cwd="/p",
        project_root="/p",
        mode="required",
        network=network,
        hard_links="warn",
        writable=(),
        write_holes=(),
        read_denies=denies,
    )


def test_host_network_with_hidden_secrets_is_refused_without_landlock_scopes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(landlock, "abi_version", lambda: 5)
    with pytest.raises(landlock.LandlockError, match="abstract Unix sockets"):
        runner._host_network_scope(_plan(network=True, hidden=True))
    assert runner._host_network_scope(_plan(network=True, hidden=False)) is None
    assert runner._host_network_scope(_plan(network=False, hidden=True)) is None

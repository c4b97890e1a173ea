from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator

import pytest

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.prompters.base import PromptReply, PromptRequest, PromptState


@pytest.fixture(autouse=True)
def _askgate_logger_restored() -> Iterator[None]:
    """The in-process hook installs its one-line handler and stops propagation (for a real
    hook process, once); a later test's caplog must still see askgate's records."""
    logger = logging.getLogger("askgate")
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    yield
    logger.handlers[:] = handlers
    logger.propagate = propagate
    logger.setLevel(level)


def make_rule(
    surface: str,
    pattern: str,
    action: str,
    *,
    origin: Origin = Origin.USER,
    rank: int = 10,
    agent: str | None = None,
    base_dir: str | None = None,
    reason: str | None = None,
) -> Rule:
    return Rule(
        surface=Surface(surface),
        pattern=pattern,
        action=Action(action),
        origin=origin,
        rank=rank,
        agent=agent,
        base_dir=base_dir,
        reason=reason,
    )


class ScriptedPrompter:
    """A real Prompter that answers from a script and records what it was shown."""

    def __init__(self, replies: Iterable[PromptReply | PromptState], *, available: bool = True):
        self._replies = [r if isinstance(r, PromptReply) else PromptReply(state=r) for r in replies]
        self._available = available
        self.seen: list[PromptRequest] = []
        self._lock = threading.Lock()

    def available(self) -> bool:
        return self._available

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        with self._lock:
            self.seen.append(request)
            if not self._replies:
                raise AssertionError(f"unexpected prompt: {request.message}")
            return self._replies.pop(0)


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    return root


@pytest.fixture
def home(tmp_path):
    h = tmp_path / "home"
    h.mkdir()
    return h


def policy_for(project, home, rules: list[tuple], **kwargs) -> Policy:
    built = [
        make_rule(s, p, a, base_dir=str(project), **extra)
        for (s, p, a, *rest) in rules
        for extra in [rest[0] if rest else {}]
    ]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}
    return Policy(built, project_root=str(project), env=env, **kwargs)


# Hooks run by tests decide in-process: a resident daemon started by one test must not
# outlive it (tests of the daemon give each one its own runtime directory and turn it on).
import os as _os  # noqa: E402

_os.environ.setdefault("ASKGATE_DAEMON", "off")

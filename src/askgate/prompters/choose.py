"""Pick the prompter that can reach a human from where this process runs.

A subagent (seed 001's environment hints, or a session directory under the
subagent sessions dir) forwards to its parent session; a process with a
controlling terminal asks there; anything else cannot ask (every ask then
resolves as `confirmation_unavailable`, never as approved).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from askgate.prompters.base import NoPrompter, Prompter


def default_prompter(
    *,
    session: str | None,
    env: Mapping[str, str] | None = None,
    session_dir: str | None = None,
    tty_path: str = "/dev/tty",
) -> Prompter:
    from askgate.forwarding.env import is_subagent

    env = os.environ if env is None else env
    if is_subagent(env, session_dir):
        from askgate.forwarding.client import ForwardingPrompter

        # Resolution failures are logged once and make every prompt unavailable.
        return ForwardingPrompter.from_env(
            current_session_id=session, env=env, session_dir=session_dir
        )
    from askgate.prompters.terminal import TerminalPrompter

    terminal = TerminalPrompter(tty_path=tty_path)
    if terminal.available():
        return terminal
    from askgate.prompters.server import configured_prompter

    server = configured_prompter(env)
    if server is not None:
        return server
    return NoPrompter()

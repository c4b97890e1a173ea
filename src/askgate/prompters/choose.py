"""Pick the prompter that can reach a human from where this process runs.

The order is seed 001's resolver ("UI → local dialog; else subagent → forward"):

1. a process with its own UI asks there (`TerminalPrompter`). A subagent counts as
   having its own UI only when its standard input is a terminal too (its own pane or
   window): a headless child spawned with piped stdio can still open the parent's
   `/dev/tty`, and asking there would draw over the parent's screen;
2. else a subagent (seed 001's environment hints, or a session directory under the
   subagent sessions dir) forwards to its parent session (`ForwardingPrompter`);
3. else the approval server, when one is configured (see `_approval_server`);
4. else nothing can ask: every ask resolves as `confirmation_unavailable`, never as
   approved.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from askgate.prompt import NoPrompter, Prompter


def default_prompter(
    *,
    session: str | None,
    env: Mapping[str, str] | None = None,
    session_dir: str | None = None,
    tty_path: str = "/dev/tty",
    interactive: bool | None = None,
) -> Prompter:
    """`interactive`: whether this process's standard input is a terminal (detected when
    None); only consulted for a subagent."""
    from askgate.forwarding.env import is_subagent
    from askgate.prompters.terminal import TerminalPrompter

    env = os.environ if env is None else env
    subagent = is_subagent(env, session_dir)
    terminal = TerminalPrompter(tty_path=tty_path)
    # 1. Own UI first.
    if terminal.available() and (not subagent or _own_terminal(interactive)):
        return terminal
    # 2. A subagent forwards to its parent.
    if subagent:
        from askgate.forwarding.client import ForwardingPrompter

        # Resolution failures are logged once and make every prompt unavailable,
        # with the resolver's message as the reason (docs/forwarding.md).
        return ForwardingPrompter.from_env(
            current_session_id=session, env=env, session_dir=session_dir
        )
    # 3. The approval server.
    server = _approval_server(env, session)
    if server is not None:
        return server
    # 4. Nobody.
    return NoPrompter()


def _own_terminal(interactive: bool | None) -> bool:
    if interactive is not None:
        return interactive
    try:
        return os.isatty(0)
    except (OSError, ValueError):
        return False


def _approval_server(env: Mapping[str, str], session: str | None) -> Prompter | None:
    """The approval server's prompter (`prompters/server.py`) when the environment or the
    user/managed policy configures a server, else None."""
    from askgate.prompters.server import configured_prompter

    return configured_prompter(env)

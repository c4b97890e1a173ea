"""The hook process, `askgate hook AGENT [--config FILE]...`, the same for every agent.

Reads the hook's stdin and relays it to the resident daemon (`agent=AGENT`); when no daemon
answers, decides in this process with a plain policy load (askgate.hookrt.decide) and
starts a daemon for the next call (`ASKGATE_DAEMON=off`: never). Prints the reply.

The relay path imports `os`, `sys` and the relay (raw sockets, an import-free frame codec):
no msgspec, no policy, no adapter. Only a call decided here, or an error, loads the
adapter (askgate.adapters.registry).
"""

from __future__ import annotations

import os
import sys

from askgate.hookrt.reply import BLOCK, Reply, one_line

TYPE_CHECKING = False  # not `typing`: the relay path must stay lean
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_INPUT_BYTES = 10 * 1024 * 1024


def parse_args(argv: Sequence[str], agent: str) -> tuple[list[str], str | None]:
    """(absolute config files, error). `--config FILE` (repeatable) is the only option. A
    relative path is relative to this process's cwd, like every command-line file argument,
    never to the cwd the agent reports (a directory the agent can write)."""
    config_files: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--config" and args:
            value = args.pop(0)
        elif arg.startswith("--config=") and len(arg) > len("--config="):
            value = arg.split("=", 1)[1]
        else:
            return [], f"askgate hook {agent}: unknown argument {arg!r} (only --config FILE)"
        config_files.append(os.path.abspath(value))
    return config_files, None


def daemon_enabled(env: Mapping[str, str]) -> bool:
    return env.get("ASKGATE_DAEMON", "").lower() not in ("off", "0", "no", "false")


def one_line_logging() -> None:
    """askgate's log records (an internal error the gate caught and turned into a deny)
    as single stderr lines: Python's fallback handler would print a traceback. Installed
    when something first logs (askgate.lazylog)."""
    from askgate.lazylog import when_logging_loads

    when_logging_loads(_install_one_line_handler)


def _install_one_line_handler() -> None:
    import logging

    class OneLine(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            try:
                sys.stderr.write(f"askgate: {one_line(record.getMessage())}\n")
            except Exception:  # stderr gone: the decision stands
                return

    logger = logging.getLogger("askgate")
    if not logger.handlers:
        logger.addHandler(OneLine(logging.WARNING))
        logger.propagate = False


def decide_in_process(
    agent: str, data: bytes, config_files: Sequence[str], env: Mapping[str, str]
) -> Reply:
    """No daemon: a plain policy load in this process."""
    try:
        from askgate.adapters import registry
        from askgate.hookrt.decide import respond

        one_line_logging()
        adapter = registry.adapter(agent)
    except BaseException as exc:  # a half-upgraded install: msgspec or the adapter is broken
        why = f"askgate: blocked: hook {agent} is unavailable (the hook could not load): {exc!r}"
        return last_resort(agent, data, why)
    return respond(adapter, data, config_files=config_files, env=env)


# What each agent reads as "blocked" when not even the adapter loads, written with the
# standard library alone: exit 2 where the agent honours it; where it does not (Claude
# Code's PermissionRequest) or fails open without a verdict on stdout (Gemini), the deny
# JSON too.
def last_resort(agent: str, data: bytes | None, text: str) -> Reply:
    import json

    line = one_line(text) or "askgate: blocked"
    try:
        event = json.loads(data or b"").get("hook_event_name")
    except Exception:
        event = None
    if agent == "claude-code" and event == "PermissionRequest":
        decision = {"behavior": "deny", "message": line}
        body: dict[str, object] = {
            "hookSpecificOutput": {"hookEventName": event, "decision": decision}
        }
        return Reply(0, json.dumps(body, separators=(",", ":")).encode() + b"\n")
    if agent == "gemini":
        body = {"decision": "deny", "reason": line}
        return Reply(BLOCK, json.dumps(body, separators=(",", ":")).encode() + b"\n", line)
    return Reply(BLOCK, b"", line)


def answer(agent: str, data: bytes, config_files: Sequence[str], env: Mapping[str, str]) -> Reply:
    """Through the resident daemon when one answers, else in-process (starting a daemon for
    the next call unless ASKGATE_DAEMON=off)."""
    if not daemon_enabled(env):
        return decide_in_process(agent, data, config_files, env)
    from askgate.daemon import relay

    relayed = relay.relay(data, config_files, env, agent)
    if not isinstance(relayed, str):
        code, stdout, stderr = relayed
        return Reply(code, stdout, stderr.decode("utf-8", "replace"))
    reply = decide_in_process(agent, data, config_files, env)
    if relayed == relay.NO_DAEMON:
        relay.start_detached(env)
    return reply


def failure(agent: str, data: bytes | None, text: str) -> Reply:
    """The adapter's block for an error met before deciding."""
    try:
        from askgate.adapters import registry
        from askgate.hookrt.contract import sniff_event
        from askgate.hookrt.decide import fail

        adapter = registry.adapter(agent)
        event = sniff_event(data) if data else None
    except BaseException:
        return last_resort(agent, data, text)
    return fail(adapter, event, text)


def main(agent: str, argv: Sequence[str]) -> int:
    config_files, arg_error = parse_args(argv, agent)
    try:
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except BaseException as exc:
        reply = failure(agent, None, f"askgate: blocked: cannot read the hook input: {exc!r}")
    else:
        if arg_error is not None:
            reply = failure(agent, data, f"askgate: blocked: {arg_error}")
        else:
            reply = answer(agent, data, config_files, os.environ)
    try:
        if reply.stdout:
            sys.stdout.buffer.write(reply.stdout)
            sys.stdout.buffer.flush()
    except BaseException as exc:  # a half-written verdict is no verdict: exit 2 still blocks
        reply = Reply(BLOCK, b"", one_line(f"askgate: blocked: cannot write the answer: {exc!r}"))
    if reply.stderr:
        try:
            sys.stderr.write(reply.stderr + "\n")
            sys.stderr.flush()
        except BaseException:  # stderr gone: the exit code alone still blocks
            pass
    return reply.code

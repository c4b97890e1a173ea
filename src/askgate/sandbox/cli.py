"""`askgate sandbox`: run a command in a kernel sandbox derived from the policy.

    askgate sandbox [--config F]… [--agent A] [--required] -- COMMAND
    askgate sandbox --plan [--cwd D] [--json]
    askgate sandbox --probe [--json]
    askgate sandbox --cleanup

`--finish RUN STATUS` is the tail step of the wrapper a hook prepares (prepared.py): it
runs only after a non-zero status, explains it, cleans the run up, and runs the command
the long way when the prepared sandbox never started it.

One argument after `--` is a shell command, run as `bash -c COMMAND` exactly as written;
several are a program and its arguments. Exit status: the command's own; 125 when the
sandbox refused to start (the command did not run); 2 for bad usage or a bad policy file
(for --plan).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

EXIT_USAGE = 2


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="askgate sandbox",
        description="Run a command in a kernel sandbox derived from the askgate policy.",
        epilog="Exit status: the command's own; 125 if the sandbox refused to start.",
    )
    parser.add_argument("--config", action="append", default=[], metavar="FILE")
    parser.add_argument("--cwd", default=None, help="working directory (default: the current)")
    parser.add_argument("--agent", default=None, help="agent name ([agent.NAME.*] rules)")
    parser.add_argument(
        "--required", action="store_true", help="never run unsandboxed (as bash = 'required')"
    )
    parser.add_argument("--backend", choices=("auto", "bwrap", "landlock", "none"), default="auto")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true", help="show the sandbox plan and exit")
    what.add_argument("--probe", action="store_true", help="report the available backends")
    what.add_argument(
        "--cleanup", action="store_true", help="remove what finished sandboxes left behind"
    )
    what.add_argument("--finish", nargs=2, metavar=("RUN", "STATUS"), help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="with --plan or --probe")
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    args = list(argv)
    if "--" in args:
        index = args.index("--")
        return args[:index], args[index + 1 :]
    return args, None


def _load(options: argparse.Namespace) -> tuple[Any, Any, str]:
    from askgate.policy.config import load_policy
    from askgate.policy.engine import Policy
    from askgate.policy.schema import AGENT_NAME

    cwd = os.path.abspath(options.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        raise _UsageError(f"--cwd {options.cwd!r} is not a directory")
    if options.agent is not None and not AGENT_NAME.fullmatch(options.agent):
        raise _UsageError("--agent: an agent name is made of A-Z a-z 0-9 _ . -")
    files = [os.path.abspath(path) for path in options.config]
    for path in files:
        if not os.path.isfile(path):
            raise _UsageError(f"--config {path!r}: no such file")
    loaded = load_policy(cwd, config_files=files, agent=options.agent)
    return loaded, Policy.from_loaded(loaded), cwd


def _state_dir() -> str:
    from askgate.sandbox.placeholders import state_directory

    return state_directory(os.environ)


def _show_probe(as_json: bool) -> int:
    import msgspec

    from askgate.sandbox.runner import probe

    found = probe(_state_dir(), refresh=True)
    if as_json:
        data = msgspec.to_builtins(found)
        data.pop("key", None)
        print(msgspec.json.encode(data).decode())
        return 0
    print(f"backend:       {found.backend}")
    print(f"bwrap:         {found.bwrap.path or 'not installed'} {found.bwrap.version or ''}")
    print(
        f"bwrap usable:  {found.bwrap.usable}"
        + (f" ({found.bwrap.error})" if found.bwrap.error else "")
    )
    print(f"/proc mount:   {found.bwrap.proc}")
    print(f"network ns:    {found.bwrap.network_namespace}")
    print(f"Landlock ABI:  {found.landlock_abi or 'unavailable'}")
    print(f"Landlock enforced: {found.landlock_enforced}")
    return 0


def _show_plan(plan: Any, as_json: bool) -> int:
    import msgspec

    if as_json:
        print(msgspec.json.encode(plan).decode())
        return 0
    print(f"cwd:      {plan.cwd}")
    print(f"project:  {plan.project_root}")
    print(f"mode:     bash = {plan.mode!r}, network = {_network_mode(plan)}")
    sections = (
        ("writable", plan.writable),
        ("read-only inside writable (write holes)", plan.write_holes),
        ("hidden (read denied)", plan.read_denies),
    )
    for title, entries in sections:
        print(f"{title}:")
        for entry in entries:
            extra = f" [placeholder {entry.placeholder}]" if entry.placeholder else ""
            print(f"  {entry.path} ({entry.kind}){extra} <- {entry.why}")
        if not entries:
            print("  (none)")
    print("pinned (bound onto themselves: cannot be renamed away):")
    for path in plan.pinned:
        print(f"  {path}")
    if not plan.pinned:
        print("  (none)")
    print("tripwires (missing protected files: moved aside if the command makes them):")
    for entry in plan.tripwires:
        print(f"  {entry.path} <- {entry.why}")
    if not plan.tripwires:
        print("  (none)")
    if plan.unset_env:
        print(f"not passed in: {' '.join(plan.unset_env)}")
    if plan.environment is not None:
        print(f"environment (only these pass in): {' '.join(plan.environment) or '(none)'}")
    for label, lines in (("refused", plan.refusals), ("warning", plan.warnings)):
        for line in lines:
            print(f"{label}: {line}")
    if plan.ask_reason:
        print(f"ask: {plan.ask_reason}")
    for note in plan.notes:
        print(f"note: {note}")
    return 0


def _quiet_on_closed_pipe(show: Any, *args: Any) -> int:
    """`askgate sandbox --plan | head -1`: the reader left; nothing more to say (and no
    traceback when Python flushes stdout at exit)."""
    try:
        show(*args)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 0


def _finish(run: str, status_text: str) -> int | None:
    """The prepared wrapper's tail step: the status to exit with, or None to run the
    command the long way (the prepared sandbox never started it)."""
    from askgate.sandbox.prepared import finish

    try:
        status = None if status_text == "unclaimed" else int(status_text)
    except ValueError:
        raise _UsageError(f"--finish: {status_text!r} is not an exit status") from None
    try:
        finished = finish(run, status, _state_dir())
    except ValueError as error:
        raise _UsageError(f"--finish: {error}") from None
    if not finished.rerun:
        return finished.status
    print(
        "askgate sandbox: the prepared sandbox did not start the command; starting it again",
        file=sys.stderr,
        flush=True,
    )
    return None


def _main(argv: Sequence[str]) -> int:
    own, command = _split(argv)
    options = _parser().parse_args(own)
    if options.probe:
        return _quiet_on_closed_pipe(_show_probe, options.json)
    if not options.plan and not options.cleanup and not command:
        raise _UsageError("give a command after '--' (or --plan, --probe)")
    from askgate.sandbox.placeholders import Registry, SandboxSetupError
    from askgate.sandbox.plan import build_plan

    if options.cleanup:
        Registry(_state_dir()).sweep()
        return 0
    if options.finish:
        status = _finish(*options.finish)
        if status is not None:
            return status

    from askgate.sandbox.placeholders import ensure_control_plane

    ensure_control_plane(os.environ)
    try:
        # Before the plan: the state directory is one of the paths the plan protects.
        made = Registry(_state_dir())
        made.sweep()  # what finished runs left must not stand where the plan looks
        registry: Registry | None = made
    except SandboxSetupError as error:
        print(f"askgate sandbox: warning: {error}", file=sys.stderr)
        registry = None
    loaded, policy, cwd = _load(options)
    if options.plan and loaded.errors:
        raise _UsageError(str(loaded.errors[0]))
    mode = "required" if options.required else None
    if mode is None and loaded.sandbox.bash == "off":
        mode = "on"  # asked for explicitly: sandbox it, best effort
    plan = build_plan(policy, loaded.sandbox, cwd=cwd, agent=options.agent, mode=mode)
    if options.plan:
        return _quiet_on_closed_pipe(_show_plan, plan, options.json)
    assert command is not None
    from askgate.sandbox.bwrap import shell_command
    from askgate.sandbox.runner import run_sandboxed

    argv_inside = shell_command(command[0]) if len(command) == 1 else command
    return run_sandboxed(
        plan, argv_inside, env=os.environ, registry=registry, backend=options.backend
    )


def main(argv: Sequence[str]) -> int:
    try:
        return _main(argv)
    except _UsageError as error:
        print(f"askgate sandbox: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as error:  # never a traceback, never an unsandboxed run
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(f"askgate sandbox: internal error: {error!r}"[:600], file=sys.stderr)
        from askgate.sandbox.runner import EXIT_REFUSED

        return EXIT_REFUSED


def _network_mode(plan: Any) -> str:
    return (
        "policy ([net] hosts via askgate's proxy)"
        if plan.net_proxy
        else ("on" if plan.network else "off")
    )

"""The `askgate` command.

Exit codes: 0 whenever a question was evaluated (whatever the answer), 2 with a
one-line error on bad usage or a bad policy file, 1 for an unexpected failure
(reported in one line, never a traceback unless ASKGATE_DEBUG is set).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

SURFACES = ("tool", "bash", "read", "write", "external_directory", "mcp", "skill")


class UsageError(Exception):
    """Bad usage or bad configuration: exit 2 with this one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _policy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="policy file to use instead of discovery (repeatable; later files rank higher)",
    )
    p.add_argument("--cwd", default=None, help="working directory of the request")
    p.add_argument("--agent", default=None, help="agent name (selects [agent.NAME.*] rules)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="askgate", description="Permission gateway for AI coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for name, text in (
        ("check", "evaluate one value on one surface"),
        ("explain", "like check, with every candidate rule and why the winner won"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        _policy_options(p)
        if name == "check":
            p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument("surface", choices=SURFACES, metavar="SURFACE", help=" | ".join(SURFACES))
        p.add_argument("value", metavar="VALUE", help="command, path, tool name …")

    cfg = sub.add_parser("config", help="show, validate or locate policy files")
    cfg.add_argument("action", choices=("show", "validate", "paths"))
    _policy_options(cfg)
    cfg.add_argument("--json", action="store_true")

    schema = sub.add_parser("schema", help="print a JSON Schema")
    schema.add_argument("which", choices=("policy", "events"))

    for name, text in (("trust", "trust this project's policy file"), ("untrust", "revoke trust")):
        p = sub.add_parser(name, help=text)
        p.add_argument("directory", nargs="?", default=None)

    hook = sub.add_parser("hook", help="agent hooks: claude-code (PreToolUse)", add_help=False)
    hook.add_argument("rest", nargs=argparse.REMAINDER)
    fwd = sub.add_parser("forward", help="subagent forwarding: serve | status", add_help=False)
    fwd.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["hook", "claude-code"]:
        from askgate.adapters.claude_code import main as hook_main

        return hook_main(argv[2:])
    if argv[:1] == ["forward"]:
        from askgate.forwarding.cli import main as forward_main

        return forward_main(argv[1:])
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            build_parser().print_help(sys.stderr)
            return 2
        return _dispatch(args)
    except UsageError as exc:
        print(f"askgate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(f"askgate: internal error: {exc!r}", file=sys.stderr)
        return 1


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in ("check", "explain"):
        return _check(args)
    if args.command == "config":
        return _config(args)
    if args.command == "schema":
        return _schema(args.which)
    if args.command == "hook":
        raise UsageError("usage: askgate hook claude-code [--config FILE]... < hook.json")
    if args.command in ("trust", "untrust"):
        return _trust(args.command, args.directory)
    raise UsageError(f"unknown command {args.command!r}")


def _cwd(args: argparse.Namespace) -> str:
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd {args.cwd!r} is not a directory")
    return cwd


def _load(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from askgate.policy.config import load_policy
    from askgate.policy.engine import Policy

    for path in args.config:
        if not os.path.isfile(path):
            raise UsageError(f"--config {path!r}: no such file")
    cwd = _cwd(args)
    loaded = load_policy(cwd, config_files=args.config, agent=args.agent)
    if loaded.errors:
        raise UsageError(str(loaded.errors[0]))
    policy = Policy.from_loaded(loaded)
    return cwd, loaded, policy


def _check(args: argparse.Namespace) -> int:
    from askgate.report import decision_to_json, render_check, render_explain

    if "\x00" in args.value:
        raise UsageError("VALUE contains a NUL byte")
    cwd, loaded, policy = _load(args)
    decision = policy.decide(args.surface, args.value, cwd=cwd, agent=args.agent)
    for warning in loaded.warnings:
        print(f"askgate: warning: {warning}", file=sys.stderr)
    if args.command == "explain":
        render_explain(decision, policy, agent=args.agent)
    elif args.json:
        print(json.dumps(decision_to_json(decision), ensure_ascii=False))
    else:
        render_check(decision)
    return 0


def _config(args: argparse.Namespace) -> int:
    from askgate.policy.config import discover_paths, load_policy

    cwd = _cwd(args)
    if args.action == "paths":
        found = [("config", p) for p in args.config] if args.config else discover_paths(cwd)
        rows = [{"origin": str(o), "path": p, "exists": os.path.isfile(p)} for o, p in found]
        if args.json:
            print(json.dumps(rows))
        else:
            for row in rows:
                mark = "found  " if row["exists"] else "missing"
                print(f"{mark} {row['origin']:<10} {row['path']}")
        return 0
    loaded = load_policy(cwd, config_files=args.config, agent=args.agent)
    if args.action == "validate":
        for err in loaded.errors:
            print(f"askgate: error: {err}", file=sys.stderr)
        for warning in loaded.warnings:
            print(f"askgate: warning: {warning}", file=sys.stderr)
        if loaded.errors:
            return 2
        print(f"ok: {len(loaded.files)} file(s), {len(loaded.rules)} rule(s)")
        return 0
    if loaded.errors:
        raise UsageError(str(loaded.errors[0]))
    from askgate.report import render_config

    render_config(loaded, as_json=args.json)
    return 0


def _schema(which: str) -> int:
    schema: dict[str, Any]
    if which == "policy":
        from askgate.policy.config import policy_json_schema

        schema = policy_json_schema()
    else:
        from askgate.events import events_json_schema

        schema = events_json_schema()
    print(json.dumps(schema, indent=2))
    return 0


def _trust(command: str, directory: str | None) -> int:
    from askgate.policy.config import find_project_root, trust_project, untrust_project
    from askgate.policy.trust import TrustError

    start = os.path.abspath(directory or os.getcwd())
    if not os.path.isdir(start):
        raise UsageError(f"{directory!r} is not a directory")
    root = find_project_root(start)
    try:
        if command == "trust":
            policy_file = os.path.join(root, ".askgate", "policy.toml")
            if not os.path.isfile(policy_file):
                raise UsageError(f"no project policy file at {policy_file}")
            trust_project(root)
            print(f"trusted {policy_file} (editing the file revokes trust)")
        else:
            removed = untrust_project(root)
            print(f"untrusted {root}" if removed else f"{root} was not trusted")
    except TrustError as exc:
        raise UsageError(str(exc)) from None
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

"""The `askgate` command.

Exit codes: 0 whenever a question was evaluated (whatever the answer), 2 with a
one-line error on bad usage or a bad policy file, 1 for an unexpected failure
(reported in one line, never a traceback unless ASKGATE_DEBUG is set).
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from askgate.cli_support import error_line
from askgate.cli_support import tolerate_undecodable_output as _tolerate_undecodable_output

if TYPE_CHECKING:
    from askgate.policy.config import LoadedPolicy
    from askgate.policy.engine import Policy

SURFACES = ("tool", "bash", "read", "write", "external_directory", "mcp", "skill", "net")
COMMANDS = ("check", "explain", "config", "schema", "trust", "untrust", "hook")
# A VALUE read with --stdin larger than this is refused outright; anything over the
# engine's own limit (far smaller) is answered "ask" without being analysed.
MAX_STDIN_BYTES = 16 * 1024 * 1024


_INTERNAL = "  1  unexpected internal error (one line; ASKGATE_DEBUG=1 for the traceback)"
# Shown by `askgate COMMAND --help` and documented in docs/cli.md.
EXIT_CODES: dict[str, str] = {
    "askgate": "0  the command did its job (see askgate COMMAND --help)\n"
    "  2  bad usage (one line on stderr)\n" + _INTERNAL,
    "check": "0  the value was evaluated, whatever the answer (read the action)\n"
    "  2  bad usage, or a policy file that fails to load\n" + _INTERNAL,
    "config": "0  paths/show printed; validate found no error; test: every example passed\n"
    "  1  test: some rule example failed\n"
    "  2  bad usage, a policy file that fails to load, or validate found an error\n" + _INTERNAL,
    "schema": "0  the schema was printed\n  2  bad usage\n" + _INTERNAL,
    "trust": "0  trusted (untrust: revoked, or was not trusted)\n"
    "  2  not a directory, no project policy file, or the trust store refused\n" + _INTERNAL,
}
EXIT_CODES["explain"] = EXIT_CODES["check"]
EXIT_CODES["untrust"] = EXIT_CODES["trust"]


def _exit_codes(command: str) -> dict[str, Any]:
    """argparse keywords that print `command`'s exit codes at the end of its --help."""
    return {
        "epilog": f"exit codes:\n  {EXIT_CODES[command]}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


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
    parser = _Parser(
        prog="askgate",
        description="Permission gateway for AI coding agents.",
        **_exit_codes("askgate"),
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    for name, text in (
        ("check", "evaluate one value on one surface"),
        ("explain", "like check, with every candidate rule and why the winner won"),
    ):
        p = sub.add_parser(name, help=text, description=text, **_exit_codes(name))
        _policy_options(p)
        if name == "check":
            p.add_argument("--json", action="store_true", help="print one JSON object")
        p.add_argument(
            "--stdin",
            action="store_true",
            help="read VALUE from standard input (one trailing newline is dropped)",
        )
        p.add_argument("surface", choices=SURFACES, metavar="SURFACE", help=" | ".join(SURFACES))
        p.add_argument("value", nargs="?", metavar="VALUE", help="command, path, tool name …")

    cfg = sub.add_parser(
        "config", help="show, validate or locate policy files", **_exit_codes("config")
    )
    cfg.add_argument("action", choices=("show", "validate", "paths", "test"))
    _policy_options(cfg)
    cfg.add_argument("--json", action="store_true")
    cfg.add_argument(
        "--builtin", action="store_true", help="show: include askgate's built-in rules"
    )

    schema = sub.add_parser("schema", help="print a JSON Schema", **_exit_codes("schema"))
    schema.add_argument("which", choices=("policy", "events", "review-log"))

    for name, text in (("trust", "trust this project's policy file"), ("untrust", "revoke trust")):
        p = sub.add_parser(name, help=text, **_exit_codes(name))
        p.add_argument("directory", nargs="?", default=None)

    hook = sub.add_parser("hook", help="agent hooks: claude-code | codex | gemini", add_help=False)
    hook.add_argument("rest", nargs=argparse.REMAINDER)
    for word, text in ROUTED_HELP.items():
        routed = sub.add_parser(word, help=text, add_help=False)
        routed.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


# Commands that live in their own modules: word -> "module:function" (for reading; the
# import itself is explicit, in `_routed_function`). The function takes the arguments after
# the word, owns its argparse (and --help) and returns the exit code. Each command loads
# only what it needs.
ROUTED: dict[str, str] = {
    "forward": "askgate.forward_cli:main",
    "serve": "askgate.server.cli:serve_main",
    "user": "askgate.server.cli:user_main",
    "group": "askgate.server.cli:group_main",
    "enroll": "askgate.server.cli:enroll_main",
    "doctor": "askgate.cli:doctor_main",
    "daemon": "askgate.daemon.cli:main",
    "install": "askgate.install:main",
    "import": "askgate.importers:main",
    "pi": "askgate.adapters.pi_rpc.cli:main",
    "acp": "askgate.adapters.acp.cli:main",
    "mcp": "askgate.mcp.cli:main",
    "sandbox": "askgate.sandbox.cli:main",
    "init": "askgate.profiles.init_cli:main",
    "suggest": "askgate.profiles.suggest_cli:main",
    "log": "askgate.log_cli:main",
}

ROUTED_HELP: dict[str, str] = {
    "forward": "subagent forwarding: serve | status",
    "serve": "run the approval server (web page, phone, HTTP API)",
    "user": "approval server users: add | list | token",
    "group": "approval server approver groups: create | approver | member | leave | list",
    "enroll": "enroll a phone for a user (ntfy topic, QR code)",
    "doctor": "check the configuration: budgets, database, secret, notifier",
    "daemon": "the resident decider: start | status | stop | sweep",
    "install": "register askgate with an agent: claude-code | codex | gemini",
    "import": "convert an agent's permission settings: claude-code | codex | gemini | pi",
    "pi": "drive pi workers over RPC: run",
    "acp": "an ACP proxy in front of an ACP agent",
    "mcp": "an MCP gateway in front of an MCP server (stdio or Streamable HTTP)",
    "sandbox": "run a command in a kernel sandbox derived from the policy",
    "init": "write a starter policy for this project",
    "suggest": "suggest rules from what people approved",
    "log": "show the review log",
}


def doctor_main(rest: list[str]) -> int:
    """`askgate doctor`: the approval path's checks (server/doctor.py), then the project's
    own (tracked secrets: profiles/tracked_secrets.py), each one line."""
    from askgate.server.doctor import main as server_doctor

    code = server_doctor(rest)
    if "-h" in rest or "--help" in rest:
        return code
    from askgate.profiles.tracked_secrets import find_tracked_secrets, warning_lines

    cwd = rest[rest.index("--cwd") + 1] if "--cwd" in rest[:-1] else os.getcwd()
    try:
        from askgate.policy.config import find_project_root

        found = find_tracked_secrets(find_project_root(os.path.abspath(cwd)))
    except Exception as exc:  # one line, never a traceback
        print(f"skip tracked secrets: {type(exc).__name__}: {exc}"[:300])
        return code
    lines = warning_lines(found)
    if not lines:
        print(
            f"ok   tracked secrets: {found.note or 'git tracks no file the policy denies reading'}"
        )
    for line in lines:
        print(f"warn tracked secrets: {line}")
    return code


def _routed_function(word: str) -> Callable[[list[str]], int]:
    """The function behind a routed word, imported explicitly (so the import contracts
    see every arrow) and only when that word is run."""
    if word == "forward":
        from askgate.forward_cli import main as forward

        return forward
    if word in ("serve", "user", "enroll", "group"):
        from askgate.server import cli as server_cli

        return {
            "serve": server_cli.serve_main,
            "user": server_cli.user_main,
            "enroll": server_cli.enroll_main,
            "group": server_cli.group_main,
        }[word]
    if word == "doctor":
        return doctor_main
    if word == "daemon":
        from askgate.daemon.cli import main as daemon

        return daemon
    if word == "install":
        from askgate.install import main as install

        return install
    if word == "import":
        from askgate.importers import main as import_settings

        return import_settings
    if word == "pi":
        from askgate.adapters.pi_rpc.cli import main as pi

        return pi
    if word == "acp":
        from askgate.adapters.acp.cli import main as acp

        return acp
    if word == "mcp":
        from askgate.mcp.cli import main as mcp

        return mcp
    if word == "sandbox":
        from askgate.sandbox.cli import main as sandbox

        return sandbox
    if word == "init":
        from askgate.profiles.init_cli import main as init

        return init
    if word == "suggest":
        from askgate.profiles.suggest_cli import main as suggest

        return suggest
    if word == "log":
        from askgate.log_cli import main as review_log

        return review_log
    raise KeyError(word)


def _routed(word: str, rest: list[str]) -> int:
    module_name = ROUTED[word].partition(":")[0]
    try:
        function = _routed_function(word)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            print(f"askgate: error: '{word}' is not available in this build", file=sys.stderr)
            return 2
        raise
    result: int = function(rest)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:
        from askgate.hooks import run_hook

        return run_hook(argv[1:])
    if argv[:1] and argv[0] in ROUTED:
        return _routed(argv[0], argv[1:])
    if argv == ["--version"]:
        from askgate import __version__

        print(f"askgate {__version__}")
        return 0
    _tolerate_undecodable_output()
    try:
        args = build_parser().parse_args(argv)
        if args.version:
            raise UsageError("--version takes no other arguments")
        if args.command is None:
            commands = ", ".join((*COMMANDS, *ROUTED))
            raise UsageError(f"a command is required: {commands} (see askgate --help)")
        return _dispatch(args)
    except UsageError as exc:
        print(f"askgate: error: {error_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        print(f"askgate: internal error: {error_line(repr(exc))}", file=sys.stderr)
        return 1


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in ("check", "explain"):
        return _check(args)
    if args.command == "config":
        return _config(args)
    if args.command == "schema":
        return _schema(args.which)
    if args.command == "hook":
        raise UsageError("usage: askgate hook claude-code|codex|gemini [--config FILE]... < input")
    if args.command in ("trust", "untrust"):
        return _trust(args.command, args.directory)
    raise UsageError(f"unknown command {args.command!r}")


# --- shared option handling ----------------------------------------------------------


def _cwd(args: argparse.Namespace) -> str:
    if args.cwd == "":
        raise UsageError("--cwd is empty")
    from askgate.policy.paths import check_path_text

    cwd = os.path.abspath(os.getcwd() if args.cwd is None else args.cwd)
    name = "the working directory" if args.cwd is None else f"--cwd {args.cwd!r}"
    try:
        check_path_text(cwd)  # the engine refuses such paths; say so up front
    except ValueError as exc:
        raise UsageError(f"{name}: {exc}") from None
    if not os.path.isdir(cwd):
        raise UsageError(f"{name} is not a directory")
    return cwd


def _agent(args: argparse.Namespace) -> str | None:
    from askgate.policy.schema import AGENT_NAME, MAX_AGENT_NAME_LENGTH

    agent = args.agent
    if agent is not None and (
        len(agent) > MAX_AGENT_NAME_LENGTH or not AGENT_NAME.fullmatch(agent)
    ):
        raise UsageError(
            f"--agent {agent[:200]!r}: an agent name is 1-{MAX_AGENT_NAME_LENGTH}"
            " of A-Z a-z 0-9 _ . -"
        )
    return agent


def _config_files(args: argparse.Namespace) -> list[str]:
    # Relative to where the user typed the command, not to --cwd: that is what every
    # other command-line tool does with a file argument.
    return [os.path.abspath(path) if path else path for path in args.config]


def _require_config_files(files: Sequence[str]) -> None:
    for path in files:
        try:
            mode = os.stat(path).st_mode
        except FileNotFoundError:
            raise UsageError(f"--config {path!r}: no such file") from None
        except (OSError, ValueError) as exc:
            raise UsageError(f"--config {path!r}: cannot read: {exc}") from None
        if stat.S_ISDIR(mode):
            raise UsageError(f"--config {path!r} is a directory, not a policy file")
        if not stat.S_ISREG(mode):
            raise UsageError(f"--config {path!r} is not a regular file")


def _load(args: argparse.Namespace) -> tuple[str, LoadedPolicy, Policy]:
    from askgate.policy.config import load_policy
    from askgate.policy.engine import Policy

    files = _config_files(args)
    _require_config_files(files)
    cwd, agent = _cwd(args), _agent(args)
    loaded = load_policy(cwd, config_files=files, agent=agent)
    if loaded.errors:
        raise UsageError(str(loaded.errors[0]))
    return cwd, loaded, Policy.from_loaded(loaded)


def _read_value(args: argparse.Namespace) -> str:
    if args.stdin:
        if args.value is not None:
            raise UsageError("give VALUE as an argument or with --stdin, not both")
        data = sys.stdin.buffer.read(MAX_STDIN_BYTES + 1)
        if len(data) > MAX_STDIN_BYTES:
            raise UsageError(f"VALUE on stdin is larger than {MAX_STDIN_BYTES} bytes")
        # Same decoding as the command line: undecodable bytes become lone surrogates,
        # which the engine refuses to allow.
        value = data.decode("utf-8", "surrogateescape")
        return value[:-1] if value.endswith("\n") else value
    if args.value is None:
        raise UsageError("the following arguments are required: VALUE (or --stdin)")
    return args.value


# --- commands ------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    from askgate.report import dump_json, render_check, render_explain

    value = _read_value(args)
    cwd, loaded, policy = _load(args)
    # A NUL byte (only possible via --stdin) is a hostile value, not bad usage: the
    # engine answers it with ask like any other value it refuses to analyse.
    decision = policy.decide(args.surface, value, cwd=cwd, agent=loaded.agent)
    for warning in loaded.warnings:
        print(f"askgate: warning: {error_line(warning)}", file=sys.stderr)
    if args.command == "explain":
        render_explain(decision, policy, agent=loaded.agent)
        if args.surface == "bash" and loaded.sandbox.bash != "off":  # docs/sandbox.md
            print(
                f"sandbox: bash = {loaded.sandbox.bash!r}: an allowed command runs in the "
                "kernel sandbox; `askgate sandbox --plan` shows what it enforces"
            )
    elif args.json:
        from askgate.report import decision_to_json

        print(dump_json(decision_to_json(decision)))
    else:
        render_check(decision)
    return 0


def _config(args: argparse.Namespace) -> int:
    from askgate.policy.config import discover_paths, load_policy, managed_policy_path
    from askgate.report import dump_json

    cwd, agent, files = _cwd(args), _agent(args), _config_files(args)
    if args.action == "paths":
        if files:
            # --config replaces user and project discovery; the managed file still applies.
            found: Sequence[tuple[str, str]] = [
                *(("config", p) for p in files),
                ("managed", managed_policy_path()),
            ]
        else:
            found = discover_paths(cwd)
        rows = [{"origin": str(o), "path": p, "exists": os.path.isfile(p)} for o, p in found]
        if args.json:
            print(dump_json(rows))
        else:
            for row in rows:
                mark = "found  " if row["exists"] else "missing"
                print(f"{mark} {row['origin']:<10} {row['path']}")
        return 0
    if args.action == "test":
        from askgate.policy.config import run_examples
        from askgate.report import render_examples

        _require_config_files(files)
        return render_examples(run_examples(cwd, config_files=files), as_json=args.json)
    loaded = load_policy(cwd, config_files=files, agent=agent)
    if args.action == "validate":
        return _validate(loaded, as_json=args.json)
    if loaded.errors:
        raise UsageError(str(loaded.errors[0]))
    from askgate.report import render_config

    render_config(loaded, as_json=args.json, builtin=args.builtin)
    return 0


def _validate(loaded: Any, *, as_json: bool) -> int:
    import msgspec

    from askgate.profiles.broad_allows import broad_allow_warnings
    from askgate.report import dump_json

    # A broad allow without the sandbox required cannot keep its own denies.
    loaded = msgspec.structs.replace(
        loaded, warnings=(*loaded.warnings, *broad_allow_warnings(loaded))
    )

    if as_json:
        print(
            dump_json(
                {
                    "ok": not loaded.errors,
                    "files": [f.path for f in loaded.files],
                    "rules": len(loaded.rules),
                    "errors": [str(e) for e in loaded.errors],
                    "warnings": list(loaded.warnings),
                },
                indent=2,
            )
        )
    else:
        for err in loaded.errors:
            print(f"askgate: error: {error_line(str(err))}", file=sys.stderr)
        for warning in loaded.warnings:
            print(f"askgate: warning: {error_line(warning)}", file=sys.stderr)
        if not loaded.errors:
            print(f"ok: {len(loaded.files)} file(s), {len(loaded.rules)} rule(s)")
    return 2 if loaded.errors else 0


def _schema(which: str) -> int:
    from askgate.report import dump_json

    schema: dict[str, Any]
    if which == "policy":
        from askgate.policy.config import policy_json_schema

        schema = policy_json_schema()
    elif which == "review-log":
        from askgate.audit import review_log_json_schema

        schema = review_log_json_schema()
    else:
        from askgate.events import events_json_schema

        schema = events_json_schema()
    print(dump_json(schema, indent=2))
    return 0


def _trust(command: str, directory: str | None) -> int:
    from askgate.policy.config import find_project_root, trust_project, untrust_project
    from askgate.policy.trust import TrustError

    start = os.path.abspath(os.getcwd() if directory is None else directory)
    if directory == "" or not os.path.isdir(start):
        raise UsageError(f"{directory!r} is not a directory")
    try:
        root = find_project_root(start)
        if command == "trust":
            policy_file = os.path.join(root, ".askgate", "policy.toml")
            if not os.path.isfile(policy_file):
                raise UsageError(f"no project policy file at {policy_file}")
            trust_project(root)
            print(f"trusted {policy_file} (editing the file revokes trust)")
        else:
            removed = untrust_project(root)
            print(f"untrusted {root}" if removed else f"{root} was not trusted")
    except (TrustError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

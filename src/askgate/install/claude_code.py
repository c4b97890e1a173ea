"""`askgate install claude-code`: register askgate's hook in a Claude Code settings file.

    askgate install claude-code [--user | --project | --settings FILE]
                                [--http | --command] [--timeout S] [--event EVENT]
                                [--claude PATH] [--port N] [--uninstall] [--dry-run]

The form:

* the default is the command hook `'<abs path>/askgate' hook claude-code || exit 2`: it
  relays to the resident daemon over its 0600 Unix socket (peer uid checked with
  SO_PEERCRED) and decides in-process when none answers. The `|| exit 2` turns a missing or
  crashing askgate (exit 127, 1) into exit 2, which blocks; where the CLI has `onFailure`
  (2.1.295 and later) the entry also says `onFailure: "block"`.
* `--http` (explicit opt-in, 2.1.295 and later only): an http hook to the daemon on
  127.0.0.1 with the per-user secret in a header. Its risk: **any process that binds the
  port while the daemon is down answers Claude Code's http hook, and a forged `allow` makes
  the tool run** (`onFailure: "block"` does not help: the answer is well-formed; the secret
  authenticates Claude Code to the daemon, never the daemon to Claude Code). The settings
  file is then written mode 0600 (it holds the secret), `--project` is refused (a project
  file is shared) and so is a `--settings` file inside a git work tree (a commit would
  carry the secret), and `--dry-run` shows the secret masked. The header holds the secret
  itself, not `$VAR` with `allowedEnvVars`: a variable in Claude Code's environment is in
  every Bash command's environment too (readable by any command, where the settings file
  is hidden in the sandbox), and the user would have to start Claude Code with it set.

`--event` may be given twice (`--event PreToolUse --event PermissionRequest`): each named
event gets askgate's entry; entries for events not named are left as they are.

The hook timeout must exceed askgate's approval budget (an ask waiting for a phone must
be answered or denied by askgate before Claude Code gives up on the hook); the installer
prints the inequality and refuses a timeout that breaks it. Re-running replaces askgate's
entry (idempotent); `--uninstall` removes only askgate's entries; `--dry-run` prints the
diff and writes nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from askgate.install import settings_file
from askgate.install.settings_file import SettingsError

ON_FAILURE_SINCE = (2, 1, 295)
DEFAULT_BUDGET_S = 110.0  # the approval server's default budget (prompters/server.py)
TIMEOUT_MARGIN_S = 60
HOOK_PATH = "/hook/claude-code"
EVENTS = ("PreToolUse", "PermissionRequest")
VERSION_TIMEOUT_S = 30.0


class InstallError(Exception):
    """One line for the user; exit 2, nothing written."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise InstallError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="askgate install claude-code", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="~/.claude/settings.json (default)")
    where.add_argument("--project", action="store_true", help="<project>/.claude/settings.json")
    where.add_argument("--settings", metavar="FILE", help="this settings file")
    form = p.add_mutually_exclusive_group()
    form.add_argument(
        "--http",
        action="store_true",
        help="http hook to the resident daemon (opt-in: a process that takes the port while"
        " the daemon is down answers for it; docs/hooks.md)",
    )
    form.add_argument(
        "--command", action="store_true", help="command hook relaying to the daemon (default)"
    )
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="hook timeout")
    p.add_argument(
        "--event",
        choices=EVENTS,
        action="append",
        default=None,
        help="PreToolUse decides every call (default); PermissionRequest only the prompts;"
        " repeat to install both",
    )
    p.add_argument("--claude", metavar="PATH", help="the claude executable to ask its version")
    p.add_argument("--port", type=int, default=None, help="the daemon's port (http form)")
    p.add_argument("--uninstall", action="store_true", help="remove askgate's entries")
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    return p


# --- facts about this machine ---------------------------------------------------------------


def parse_version(text: str) -> tuple[int, int, int] | None:
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def claude_version(claude: str | None) -> tuple[tuple[int, int, int] | None, str]:
    """(version, how it was found) from `claude --version`; None when it cannot tell."""
    binary = claude or shutil.which("claude")
    if not binary:
        return None, "claude not found on PATH"
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{binary} --version failed: {exc}"
    version = parse_version(done.stdout)
    if done.returncode != 0 or version is None:
        return None, f"{binary} --version said {done.stdout.strip()[:80]!r}"
    return version, f"{binary} --version"


def approval_budget() -> float:
    """The approval server's budget as configured for this user, else its default. A
    server configured unusably leaves the default (the hook itself then refuses)."""
    from askgate.prompters.server import ApprovalConfigError, load_settings

    try:
        settings = load_settings(os.environ)
    except ApprovalConfigError:
        settings = None
    if settings is not None:
        return float(settings.budget)
    value = os.environ.get("ASKGATE_APPROVAL_BUDGET", "")
    try:
        return float(value) if value else DEFAULT_BUDGET_S
    except ValueError:
        return DEFAULT_BUDGET_S


def askgate_command() -> str:
    """`'<abs path>/askgate' hook claude-code || exit 2`, the executable next to this
    interpreter (where pip put it), else the one on PATH, else `python -m askgate`."""
    beside = Path(sys.executable).parent / "askgate"
    if beside.is_file() and os.access(beside, os.X_OK):
        argv = [str(beside.absolute())]
    elif shutil.which("askgate"):
        argv = [os.path.abspath(shutil.which("askgate") or "askgate")]
    else:
        argv = [os.path.abspath(sys.executable), "-m", "askgate"]
    return shlex.join([*argv, "hook", "claude-code"]) + " || exit 2"


def settings_path(args: argparse.Namespace) -> str:
    if args.settings:
        return os.path.abspath(args.settings)
    if args.project:
        from askgate.policy.config import find_project_root

        return os.path.join(find_project_root(os.getcwd()), ".claude", "settings.json")
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR", "")
    if config_dir.startswith("/"):
        return os.path.join(config_dir, "settings.json")
    return os.path.join(os.path.expanduser("~"), ".claude", "settings.json")


# --- the entry ------------------------------------------------------------------------------


def is_ours(handler: dict[str, Any]) -> bool:
    kind = handler.get("type")
    if kind == "command":
        command = handler.get("command")
        return isinstance(command, str) and "askgate" in command and "hook claude-code" in command
    if kind == "http":
        url = handler.get("url")
        return (
            isinstance(url, str)
            and url.startswith("http://127.0.0.1:")
            and url.split("?")[0].endswith(HOOK_PATH)
        )
    return False


def build_handler(
    *, http: bool, timeout: float, on_failure: bool, port: int, secret: str
) -> dict[str, Any]:
    handler: dict[str, Any]
    if http:
        handler = {
            "type": "http",
            "url": f"http://127.0.0.1:{port}{HOOK_PATH}",
            "headers": {"X-Askgate-Secret": secret},
            "timeout": timeout,
        }
    else:
        handler = {"type": "command", "command": askgate_command(), "timeout": timeout}
    if on_failure:
        handler["onFailure"] = "block"
    return handler


def _timeout(args: argparse.Namespace, budget: float) -> int | float:
    # The one budget rule, shared with `askgate doctor` (budget + MARGIN <= hook timeout).
    from askgate.server.doctor import budget_check

    timeout = args.timeout if args.timeout is not None else budget + TIMEOUT_MARGIN_S
    check = budget_check(budget, float(timeout), None, hook_source=" (--timeout)")
    if check.state != "ok":
        raise InstallError(
            f"--timeout {timeout:g} s must exceed the approval budget of {budget:g} s by the"
            f" margin ({check.detail}): a hook that times out first lets Claude Code decide alone"
        )
    return int(timeout) if float(timeout).is_integer() else timeout


SECRET_SHOWN = "<the secret in daemon.secret>"
HTTP_RISK = (
    "warning: with the http hook, any process that binds 127.0.0.1:{port} while the daemon"
    " is down answers Claude Code, and a forged allow makes the tool run; the command hook"
    " (the default) has no such port"
)


def _events(args: argparse.Namespace) -> list[str]:
    asked = args.event or ["PreToolUse"]
    return [e for e in EVENTS if e in asked]


def _plan(args: argparse.Namespace, settings: dict[str, Any]) -> tuple[list[str], str]:
    """Change `settings` as asked; returns the lines to print and the secret written (to
    mask in a dry run; "" for the command hook)."""
    events = EVENTS if args.uninstall else _events(args)
    removed = sum(settings_file.remove_hooks(settings, e, is_ours) for e in events)
    if args.uninstall:
        return [f"removed {removed} askgate hook entr{'y' if removed == 1 else 'ies'}"], ""
    version, source = claude_version(args.claude)
    on_failure = version is not None and version >= ON_FAILURE_SINCE
    shown = ".".join(map(str, version)) if version else "unknown"
    if args.http and not on_failure:
        raise InstallError(
            f"--http needs Claude Code 2.1.295 or later (onFailure), found {shown} ({source}):"
            " a failed http hook would let calls through; use the command hook"
        )
    if args.http and args.project:
        raise InstallError(
            "--http writes the daemon's secret into the settings file: not into a project"
            " file others share (use --user or --settings FILE)"
        )
    http = bool(args.http)
    budget = approval_budget()
    timeout = _timeout(args, budget)
    port = args.port
    secret = ""
    if http:
        from askgate.daemon import server

        port = server.default_port() if port is None else port
        secret = server.load_or_create_secret(os.environ)
    handler = build_handler(
        http=http, timeout=timeout, on_failure=on_failure, port=port or 0, secret=secret
    )
    for event in events:
        settings_file.hook_groups(settings, event).append({"matcher": "*", "hooks": [handler]})
    form = "http hook to 127.0.0.1:" + str(port) if http else "command hook"
    lines = [
        f"Claude Code {shown} ({source}): "
        + ("onFailure supported" if on_failure else "no onFailure, so `|| exit 2` blocks"),
        f"{' and '.join(events)}: {form}"
        + (f" (replaced {removed} old entr{'y' if removed == 1 else 'ies'})" if removed else ""),
        f"budget: approval budget {budget:g} s < hook timeout {timeout:g} s",
    ]
    if http:
        lines.append("the daemon must be running: askgate daemon start")
        lines.append("the settings file holds the daemon's secret: written mode 0600")
        lines.append(HTTP_RISK.format(port=port))
    return lines, secret


def _work_tree_of(path: str) -> str | None:
    """The git work tree `path` lies in (a directory above it holds `.git`), or None."""
    current = os.path.dirname(os.path.realpath(path))
    while True:
        if os.path.lexists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _shared_file_check(args: argparse.Namespace, path: str) -> list[str]:
    """The secret must not go into a file a repository could carry to others: a
    `--settings` file inside a git work tree is refused; the user's own settings file in
    one (a dotfiles home) gets a warning."""
    if not args.http or args.uninstall:
        return []
    tree = _work_tree_of(path)
    if tree is None:
        return []
    if args.settings:
        raise InstallError(
            f"--http writes the daemon's secret into the settings file: {path} is inside the"
            f" git work tree {tree}, which others may clone (use --user or a file outside it)"
        )
    return [
        f"warning: {path} lies in the git work tree {tree}: keep it out of commits"
        " (it holds the daemon's secret)"
    ]


def _readable_by_others(path: str) -> bool:
    try:
        return bool(os.stat(path).st_mode & 0o077)
    except FileNotFoundError:
        return False


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(list(argv))
        path = settings_path(args)
        shared = _shared_file_check(args, path)
        settings, old_text = settings_file.load(path)
        lines, secret = _plan(args, settings)
        lines += shared
        new_text = settings_file.render(settings) if settings or old_text else ""
        if args.uninstall and not settings and not old_text:
            new_text = ""
        if args.dry_run:
            shown = settings_file.diff(path, old_text, new_text) or "no change"
            if secret:
                shown = shown.replace(secret, SECRET_SHOWN)
            print(shown, end="")
            print("\n".join(["", "(dry run: nothing written)", *lines]))
            return 0
        exposed = bool(secret) and _readable_by_others(path)
        if new_text != old_text or exposed:
            settings_file.write(path, new_text, private=bool(secret))
        changed = new_text != old_text or exposed
        print(f"{'updated' if changed else 'unchanged'}: {path}")
        print("\n".join(lines))
        return 0
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (InstallError, SettingsError) as exc:
        print(f"askgate install claude-code: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, PermissionError) as exc:
        print(f"askgate install claude-code: error: {exc}", file=sys.stderr)
        return 2

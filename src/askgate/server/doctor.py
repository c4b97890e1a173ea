"""`askgate doctor`: is the approval path configured so that it fails closed?

Checks, each printed as one line (`ok`, `FAIL` or `skip`):

* budget inequality: approval budget + margin <= hook timeout, and hook timeout + margin <= the
  agent's turn limit and the worker's drain budget (margin: MARGIN, 10 s, justified below). A
  hook the agent kills for running too long is a non-blocking error in Claude Code: the tool
  would run unapproved. The hook timeout is read from the Claude Code settings that register
  `askgate hook claude-code` (600 s when the entry sets none, or when none is found), or given
  with --hook-timeout; the turn limit with --turn-limit or ASKGATE_TURN_LIMIT; the drain budget
  with --drain-budget or ASKGATE_DRAIN_BUDGET. The budget itself is bounded at load
  (askgate.prompters.server.MAX_BUDGET, 590 s).
* the approval server: reachable, and the token accepted (GET /v1/me).
* the database (ASKGATE_DATABASE_URL or the data dir's SQLite): opens, migrates, answers.
* the server secret: present and readable by its owner only.
* notifiers (ASKGATE_NTFY_URL, ASKGATE_WEBHOOK_URL): reachable.

Exit 0 when nothing failed, 1 when a check failed, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn

CLAUDE_DEFAULT_HOOK_TIMEOUT = 600.0
# Required between an approval budget and the hook timeout (and between the hook timeout and
# a turn limit or drain budget). The hook's run is its interpreter start and policy load (under
# 1 s here, measured up to ~3 s on two loaded cores), then at most the budget: every network
# step runs under one deadline, enforced by a watchdog (askgate.prompters.server), and the
# server releases the wait a little before it. 10 s is over three times the worst start seen.
MARGIN = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    state: str  # ok | FAIL | skip
    detail: str


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"askgate doctor: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def claude_hook_timeouts(paths: Sequence[str]) -> list[tuple[str, float]]:
    """(settings file, timeout) of every `askgate hook claude-code` PreToolUse/
    PermissionRequest entry in the given Claude Code settings files."""
    found: list[tuple[str, float]] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                settings = json.load(handle)
        except (OSError, ValueError):
            continue
        hooks = settings.get("hooks") if isinstance(settings, dict) else None
        if not isinstance(hooks, dict):
            continue
        for event in ("PreToolUse", "PermissionRequest"):
            for group in hooks.get(event) or []:
                for hook in (group or {}).get("hooks") or []:
                    command = str((hook or {}).get("command", ""))
                    if "askgate" in command and "claude-code" in command:
                        timeout = hook.get("timeout", CLAUDE_DEFAULT_HOOK_TIMEOUT)
                        found.append((path, float(timeout)))
    return found


def _settings_files(env: Mapping[str, str], cwd: str) -> list[str]:
    config_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME", "~"), ".claude")
    return [
        os.path.join(config_dir, "settings.json"),
        os.path.join(cwd, ".claude", "settings.json"),
        os.path.join(cwd, ".claude", "settings.local.json"),
    ]


def budget_check(
    budget: float | None,
    hook_timeout: float | None,
    turn: float | None,
    drain: float | None = None,
    *,
    hook_source: str = "",
) -> Check:
    """budget + margin <= hook timeout, and hook timeout + margin <= the turn limit and the
    drain budget (each when known). A hook timeout that no settings file names is Claude
    Code's default, 600 s."""
    if budget is None:
        return Check("budget", "skip", "no approval server configured (asks stay local)")
    if hook_timeout is None:
        hook_timeout, hook_source = CLAUDE_DEFAULT_HOOK_TIMEOUT, " (Claude Code's default)"
    shown = f"approval budget {budget:g}s + {MARGIN:g}s <= hook timeout {hook_timeout:g}s"
    shown += hook_source
    for name, limit in (("turn limit", turn), ("drain budget", drain)):
        if limit is not None:
            shown += f"; hook timeout + {MARGIN:g}s <= {name} {limit:g}s"
    if budget + MARGIN > hook_timeout:
        return Check(
            "budget",
            "FAIL",
            shown + ": the agent could kill the hook first (the tool would then run unapproved)",
        )
    for name, limit in (("turn limit", turn), ("drain budget", drain)):
        if limit is not None and hook_timeout + MARGIN > limit:
            return Check("budget", "FAIL", shown + f": the {name} ends before the hook does")
    return Check("budget", "ok", shown)


def secret_check(path: str) -> Check:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Check("secret", "skip", f"{path} does not exist yet (created at first start)")
    except OSError as exc:
        return Check("secret", "FAIL", f"{path}: {exc.strerror}")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return Check("secret", "FAIL", f"{path} is mode {mode & 0o777:o}; run chmod 600 {path}")
    return Check("secret", "ok", f"{path} is mode {mode & 0o777:o}")


def database_check(url: str) -> Check:
    from askgate.server.store import Store

    async def probe() -> None:
        store = await Store.open(url)
        try:
            await store.ping()
        finally:
            await store.close()

    shown = url.split("@")[-1] if "@" in url else url
    try:
        asyncio.run(asyncio.wait_for(probe(), 15))
    except Exception as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        return Check("database", "FAIL", f"{shown}: {type(exc).__name__}: {first}")
    return Check("database", "ok", f"{shown}: migrated and answering")


def reachable_check(name: str, url: str, token: str | None = None) -> Check:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(url, headers=headers, timeout=5.0)
    except httpx.HTTPError as exc:
        return Check(name, "FAIL", f"{url}: unreachable ({type(exc).__name__})")
    if token and response.status_code in (401, 403):
        return Check(name, "FAIL", f"{url}: the token was refused (HTTP {response.status_code})")
    if token and response.status_code >= 400:
        return Check(name, "FAIL", f"{url}: HTTP {response.status_code}")
    return Check(name, "ok", f"{url}: HTTP {response.status_code}")


def run_checks(args: argparse.Namespace, env: Mapping[str, str]) -> list[Check]:
    from askgate.prompters.server import ApprovalConfigError, load_settings
    from askgate.server.store import database_url, default_data_dir

    checks: list[Check] = []
    try:
        settings = load_settings(env)
    except ApprovalConfigError as exc:
        settings = None
        checks.append(Check("approvals", "FAIL", f"misconfigured: {exc}"))
    hook_timeout = args.hook_timeout
    if hook_timeout is None:
        found = claude_hook_timeouts(_settings_files(env, args.cwd))
        hook_timeout = min((t for _, t in found), default=None)
    hook_source = " (--hook-timeout)" if args.hook_timeout is not None else ""
    if args.hook_timeout is None and hook_timeout is not None:
        hook_source = " (Claude Code settings)"
    limits: dict[str, float | None] = {"turn": args.turn_limit, "drain": args.drain_budget}
    for key, var in (("turn", "ASKGATE_TURN_LIMIT"), ("drain", "ASKGATE_DRAIN_BUDGET")):
        if limits[key] is None and env.get(var):
            try:
                limits[key] = float(env[var])
            except ValueError:
                checks.append(Check("budget", "FAIL", f"{var} is not a number"))
    checks.append(
        budget_check(
            settings.budget if settings else None,
            hook_timeout,
            limits["turn"],
            limits["drain"],
            hook_source=hook_source,
        )
    )
    if settings is not None:
        checks.append(reachable_check("server", f"{settings.url}/v1/me", settings.token))
    data_dir = args.data_dir or default_data_dir(env)
    if env.get("ASKGATE_DATABASE_URL") or os.path.isdir(data_dir):
        checks.append(database_check(database_url(data_dir, env)))
        checks.append(secret_check(env.get("ASKGATE_SECRET_FILE") or f"{data_dir}/secret"))
    else:
        checks.append(Check("database", "skip", f"no server data in {data_dir}"))
    for name, var in (("ntfy", "ASKGATE_NTFY_URL"), ("webhook", "ASKGATE_WEBHOOK_URL")):
        if env.get(var):
            checks.append(reachable_check(name, env[var]))
    return checks


def main(argv: Sequence[str]) -> int:
    parser = _Parser(prog="askgate doctor", description=__doc__.splitlines()[0])
    parser.add_argument("--hook-timeout", type=float, default=None, help="seconds")
    parser.add_argument("--turn-limit", type=float, default=None, help="seconds")
    parser.add_argument(
        "--drain-budget",
        type=float,
        default=None,
        help="seconds a worker may take to drain before it is stopped (ASKGATE_DRAIN_BUDGET)",
    )
    parser.add_argument("--data-dir", default=None, help="the approval server's data dir")
    parser.add_argument("--cwd", default=os.getcwd(), help="project whose .claude/ to read")
    args = parser.parse_args(list(argv))
    try:
        checks = run_checks(args, os.environ)
    except Exception as exc:  # a doctor that crashes must still say so in one line
        print(f"askgate doctor: error: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
        return 1
    for check in checks:
        print(f"{check.state:<4} {check.name}: {check.detail}")
    return 1 if any(c.state == "FAIL" for c in checks) else 0

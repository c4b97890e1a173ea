"""Shared by the installers that write a JSON hook file (Codex hooks.json, Gemini
settings.json): the askgate hook command, idempotent merging, and the CLI around it.

Both agents use the same shape: ``{"hooks": {EVENT: [{"matcher": …, "hooks": [HANDLER]}]}}``.
askgate's groups are recognised by the hook command (``… hook AGENT``); installing replaces
them, uninstalling removes them, and everything else in the file is kept as it was.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Group = dict[str, Any]


class InstallError(Exception):
    """A one-line reason the file cannot be changed."""


def hook_command(
    agent: str, *, config_files: Sequence[str] = (), program: str | None = None
) -> str:
    """The shell command an agent runs. ``|| exit 2``: if askgate cannot start at all
    (not on PATH, a broken interpreter), the shell's own error on stderr and exit 2 still
    block the call in Codex and Gemini, where a missing command would otherwise fail open."""
    if program is None:
        found = shutil.which("askgate")
        argv = [found] if found else [sys.executable, "-m", "askgate"]
    else:
        argv = shlex.split(program)
    argv += ["hook", agent]
    for config in config_files:
        argv += ["--config", os.path.abspath(config)]
    return f"{shlex.join(argv)} || exit 2"


def is_ours(handler: Any, agent: str) -> bool:
    command = handler.get("command") if isinstance(handler, Mapping) else None
    return isinstance(command, str) and "askgate" in command and f"hook {agent}" in command


def read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object")
    return data


def merged(
    document: Mapping[str, Any], agent: str, groups: Mapping[str, Group] | None
) -> dict[str, Any]:
    """`document` with askgate's groups removed, then `groups` (event -> group) added."""
    out = dict(document)
    hooks = out.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError('"hooks" is not a JSON object')
    hooks = dict(hooks)
    for event, entries in list(hooks.items()):
        if not isinstance(entries, list):
            continue
        kept = [
            g
            for g in entries
            if not (
                isinstance(g, Mapping)
                and isinstance(g.get("hooks"), list)
                and any(is_ours(h, agent) for h in g["hooks"])
            )
        ]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    for event, group in (groups or {}).items():
        entries = hooks.get(event, [])
        hooks[event] = [*(entries if isinstance(entries, list) else [entries]), group]
    if hooks:
        out["hooks"] = hooks
    else:
        out.pop("hooks", None)
    return out


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """Atomically (tmp + rename), keeping the old file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2)
            out.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Target:
    """Where and what one agent's installer writes."""

    agent: str  # the word after `askgate hook`
    display: str  # "Codex", "Gemini CLI"
    user_file: Callable[[Mapping[str, str]], Path]
    project_file: Callable[[Path], Path]
    groups: Callable[[str], dict[str, Group]]  # hook command -> event -> group
    notes: Callable[[bool], list[str]]  # project? -> lines told to the user after installing


def parse_args(target: Target, argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=f"askgate install {target.agent}",
        description=f"Register askgate's hook with {target.display}.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for every project (default)")
    where.add_argument(
        "--project",
        nargs="?",
        const=".",
        metavar="DIR",
        help="for one project only (default: the current directory)",
    )
    parser.add_argument("--uninstall", action="store_true", help="remove askgate's hook")
    parser.add_argument("--dry-run", action="store_true", help="print the file, change nothing")
    parser.add_argument(
        "--config", action="append", default=[], metavar="FILE", help="policy file for the hook"
    )
    parser.add_argument(
        "--command", metavar="PROGRAM", help="how to run askgate (default: found on PATH)"
    )
    return parser.parse_args(list(argv))


def run(target: Target, argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        args = parse_args(target, argv)
    except SystemExit as exc:  # argparse printed the usage line
        return int(exc.code or 0)
    project = args.project is not None
    path = target.project_file(Path(args.project).resolve()) if project else target.user_file(env)
    command = hook_command(target.agent, config_files=args.config, program=args.command)
    try:
        before = read_json(path)
        after = merged(before, target.agent, None if args.uninstall else target.groups(command))
    except InstallError as exc:
        print(f"askgate: error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(f"# {path} would become:")
        print(json.dumps(after, indent=2))
        return 0
    if after == before:
        state = "not installed" if args.uninstall else "already installed"
        print(f"askgate: {target.display} hook {state} in {path}")
        return 0
    try:
        write_json(path, after)
    except OSError as exc:
        print(f"askgate: error: cannot write {path}: {exc}", file=sys.stderr)
        return 2
    if args.uninstall:
        print(f"askgate: removed the {target.display} hook from {path}")
        return 0
    print(f"askgate: installed the {target.display} hook in {path}")
    for line in target.notes(project):
        print(line)
    return 0

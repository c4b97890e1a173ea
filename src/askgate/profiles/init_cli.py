"""`askgate init`: write a starter policy for this project (or the user) with the profiles
that fit what the project is, and trust it when it is a project file.

Exit codes: 0 written (or already up to date), 1 not written (exists and differs without
--force, or declined), 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import sys

from askgate.cli_support import OneLineParser, confirm, write_atomically
from askgate.profiles.detect import detect_profiles, starter_policy


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="askgate init",
        description="Write a starter policy with the profiles that fit this project.",
        epilog="exit codes: 0 written or already up to date, 1 not written, 2 bad usage",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--project", action="store_true", help="<root>/.askgate/policy.toml")
    scope.add_argument("--user", action="store_true", help="the user policy file")
    parser.add_argument(
        "--profile",
        action="append",
        default=[],
        metavar="NAME",
        help="select this profile (repeatable; replaces detection)",
    )
    parser.add_argument("--yes", action="store_true", help="write without asking")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.add_argument(
        "--sandbox",
        choices=("auto", "on", "off"),
        default="auto",
        help="require the kernel sandbox: auto (where it works here, the default), on, off",
    )
    parser.add_argument("--cwd", default=None, help="project directory (default: here)")
    return parser


def sandbox_available() -> tuple[bool, str]:
    """(usable, why) as `askgate sandbox --probe` sees this machine. Only bubblewrap counts:
    Landlock cannot hide a secret inside the project (a `.env`), so under `required` it
    refuses every command there."""
    import subprocess

    # `profiles` and `sandbox` are sibling layers: ask the command the user would run.
    argv = [sys.executable, "-m", "askgate", "sandbox", "--probe", "--json"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return False, "`askgate sandbox --probe` failed"
    return read_probe(done.returncode, done.stdout)


def read_probe(returncode: int, stdout: bytes) -> tuple[bool, str]:
    """(usable, why) from `askgate sandbox --probe --json`'s exit status and output."""
    import json

    try:
        found = json.loads(stdout) if returncode == 0 else None
    except ValueError:
        found = None
    if not isinstance(found, dict):  # a probe that breaks says "no sandbox", never "yes"
        return False, "`askgate sandbox --probe` failed"
    value = found.get("bwrap")
    bwrap: dict[str, object] = value if isinstance(value, dict) else {}
    if found.get("backend") == "bwrap":
        return True, f"bubblewrap {bwrap.get('version') or ''}".strip() + " works here"
    if found.get("backend") == "landlock":
        return False, "only Landlock works here, and it cannot hide secrets inside the project"
    error = bwrap.get("error")
    return False, str(error or "bubblewrap is not installed or cannot create namespaces")


def _sandboxed(args: argparse.Namespace) -> tuple[bool, str]:
    if args.sandbox == "on":
        return True, "--sandbox on"
    if args.sandbox == "off":
        return False, "--sandbox off"
    return sandbox_available()


def explain_choice(sandboxed: bool, why: str) -> list[str]:
    """The two lines `init` prints before it asks."""
    if sandboxed:
        return [
            f"sandbox: {why}: shell commands will run in the kernel sandbox"
            ' ([sandbox] bash = "required"),',
            "so the sandboxed-project profile lets them run the project's code and write"
            " inside it; secrets stay hidden.",
        ]
    return [
        f"sandbox: not used ({why}): commands are decided by rules alone,",
        "so running the project's code, deleting and the network stay questions"
        " (the stricter project-write profile).",
    ]


def _profiles(args: argparse.Namespace, root: str, sandboxed: bool) -> list[tuple[str, str]]:
    from askgate.policy.builtin import profile_names

    if not args.profile:
        return detect_profiles(root, sandboxed=sandboxed)
    unknown = [name for name in args.profile if name not in profile_names()]
    if unknown:
        known = ", ".join(profile_names())
        raise ValueError(f"unknown profile {unknown[0]!r} (known: {known})")
    return [(name, "--profile") for name in dict.fromkeys(args.profile)]


def main(argv: list[str]) -> int:
    from askgate.policy.config import find_project_root, parse_policy_text, user_policy_path
    from askgate.policy.model import Origin
    from askgate.policy.trust import project_policy_path

    args = build_parser().parse_args(argv)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        print(f"askgate: error: {cwd} is not a directory", file=sys.stderr)
        return 2
    root = find_project_root(cwd)
    sandboxed, why = _sandboxed(args)
    try:
        chosen = _profiles(args, root, sandboxed)
    except ValueError as error:
        print(f"askgate: error: {error}", file=sys.stderr)
        return 2
    path = user_policy_path() if args.user else project_policy_path(root)
    text = starter_policy([name for name, _ in chosen], sandboxed=sandboxed)
    # What init writes must load: a starter file that clamps would be worse than none.
    parse_policy_text(text, path=path, origin=Origin.USER, rank_base=0, trusted=True, base_dir=root)

    print(f"project root: {root}")
    for name, found in chosen:
        print(f"  profile {name:<17} ({'always' if found == 'always' else 'found ' + found})")
    if args.yes:
        print(f"sandbox: {'required' if sandboxed else 'not used'} ({why})")
    else:
        print(*explain_choice(sandboxed, why), sep="\n")
    existing = _read(path)
    if existing == text:
        print(f"{path} is already up to date")
        return _trust(args, root, path)
    if existing is not None and not args.force:
        print(f"askgate: {path} exists and differs; not overwritten (use --force)", file=sys.stderr)
        return 1
    if not args.yes and not confirm(f"write {path}?"):
        print("not written (rerun with --yes to write without asking)", file=sys.stderr)
        return 1
    write_atomically(path, text)
    print(f"wrote {path}")
    code = _trust(args, root, path)
    _warn_tracked_secrets(root)
    if sandboxed:
        _warn_incomplete_plan(root)
    return code


def _warn_incomplete_plan(root: str) -> None:
    """The sandbox plan searches the project for anywhere-patterns within a budget; past it
    the hook asks about every command. Say so now rather than at every command."""
    import json
    import subprocess

    argv = [sys.executable, "-m", "askgate", "sandbox", "--plan", "--json", "--cwd", root]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
        reason = json.loads(done.stdout).get("ask_reason") if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, AttributeError):
        return
    if isinstance(reason, str) and reason:
        print(
            f"askgate: warning: every sandboxed command here will ask: {reason}",
            file=sys.stderr,
        )


def _warn_tracked_secrets(root: str) -> None:
    from askgate.profiles.tracked_secrets import find_tracked_secrets, warning_lines

    for line in warning_lines(find_tracked_secrets(root)):
        print(f"askgate: warning: {line}", file=sys.stderr)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _trust(args: argparse.Namespace, root: str, path: str) -> int:
    from askgate.policy.trust import trust_project

    if args.user:
        print("the user policy applies to every project; no trust step is needed")
        return 0
    # The user just made this file: trust its current bytes (any later edit, by an agent
    # or anyone, needs `askgate trust` again).
    trust_project(root)
    print(f"trusted {path} (after editing it, run `askgate trust` again)")
    return 0

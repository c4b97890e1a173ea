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
    parser.add_argument("--cwd", default=None, help="project directory (default: here)")
    return parser


def _profiles(args: argparse.Namespace, root: str) -> list[tuple[str, str]]:
    from askgate.policy.builtin import profile_names

    if not args.profile:
        return detect_profiles(root)
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
    try:
        chosen = _profiles(args, root)
    except ValueError as error:
        print(f"askgate: error: {error}", file=sys.stderr)
        return 2
    path = user_policy_path() if args.user else project_policy_path(root)
    text = starter_policy([name for name, _ in chosen])
    # What init writes must load: a starter file that clamps would be worse than none.
    parse_policy_text(text, path=path, origin=Origin.USER, rank_base=0, trusted=True, base_dir=root)

    print(f"project root: {root}")
    for name, why in chosen:
        print(f"  profile {name:<14} ({'always' if why == 'always' else 'found ' + why})")
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
    return _trust(args, root, path)


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

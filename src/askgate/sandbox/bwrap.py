"""The bubblewrap backend: a plan becomes one argument list (never a quoted string).

    bwrap --new-session --die-with-parent --unshare-user [--disable-userns] --unshare-pid
          --cap-drop ALL [--seccomp FD] [--unsetenv VAR]… [network flags]
          --ro-bind / / --dev /dev
          --bind W W                      each writable root
          --bind P P                      each pinned ancestor of a hole (cannot be renamed)
          --ro-bind H H                   each write hole (placeholders already made)
          --perms 0555 --tmpfs D --remount-ro D    each hidden directory (reads as empty)
          --ro-bind EMPTY F               each hidden file (EMPTY: an empty read-only file)
          [--proc /proc] --chdir CWD -- /bin/bash -c COMMAND

Order matters: writable binds first, pinned ancestors and holes on top of them
(shallowest first), masks last so a hole bound from the host cannot bring a hidden path
back. `--unshare-user --cap-drop ALL` are not optional: bwrap creates a user namespace by
itself only when it is not run by root, and a root command with capabilities can unmount
the masks. Without capabilities a read-only mask stays read-only even for uid 0 inside,
and `--disable-userns` (bwrap 0.8+) with the seccomp filter keeps the command from making
a namespace of its own to get capabilities back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence

import msgspec

from askgate.sandbox.plan import PlanEntry, SandboxPlan

BASH = "/bin/bash"
_PROC_ERROR = re.compile(r"can'?t mount proc|mount(ing)? (of )?/?proc", re.IGNORECASE)
PROBE_TIMEOUT_S = 5.0


class BwrapProbe(msgspec.Struct, frozen=True, kw_only=True):
    """What bubblewrap can do here."""

    path: str | None
    version: str | None = None
    usable: bool = False  # user + pid namespaces and the mounts askgate needs work
    proc: bool = False  # a fresh /proc can be mounted
    network_namespace: bool = False
    disable_userns: bool = False  # bwrap 0.8+: --disable-userns works here
    error: str | None = None


def find_bwrap(env_path: str | None = None) -> str | None:
    """bubblewrap on PATH (the system's, never one inside a writable project)."""
    found = shutil.which("bwrap", path=env_path or "/usr/local/bin:/usr/bin:/bin")
    return os.path.realpath(found) if found else None


def is_proc_error(stderr: str) -> bool:
    """bwrap's complaint that it cannot mount /proc, in any of its wordings."""
    return _PROC_ERROR.search(stderr) is not None


def _run_probe(argv: Sequence[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=PROBE_TIMEOUT_S,
            close_fds=True,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return 127, str(error)
    return done.returncode, done.stdout.decode("utf-8", "replace").strip()


def probe(bwrap: str | None) -> BwrapProbe:
    """Run `/bin/true` under the namespaces askgate needs; retry without /proc only when
    bwrap says it cannot mount one."""
    if bwrap is None:
        return BwrapProbe(path=None, error="bubblewrap (bwrap) is not installed")
    code, out = _run_probe([bwrap, "--version"])
    version = out.split()[-1] if code == 0 and out else None
    base = [bwrap, "--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid"]
    base += ["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev"]
    code, err = _run_probe([*base, "--proc", "/proc", "--", "/bin/true"])
    proc = code == 0
    if code != 0:
        if not is_proc_error(err):
            return BwrapProbe(path=bwrap, version=version, error=err or f"exit status {code}")
        code, err = _run_probe([*base, "--", "/bin/true"])
        if code != 0:
            return BwrapProbe(path=bwrap, version=version, error=err or f"exit status {code}")
    net_code, _ = _run_probe([*base, "--unshare-net", "--", "/bin/true"])
    userns_code, _ = _run_probe([*base, "--disable-userns", "--", "/bin/true"])
    return BwrapProbe(
        path=bwrap,
        version=version,
        usable=True,
        proc=proc,
        network_namespace=net_code == 0,
        disable_userns=userns_code == 0,
    )


def network_flags(plan: SandboxPlan) -> list[str]:
    """bwrap's network arguments for this plan: the one place the network mode becomes
    flags (the network proxy hooks in here)."""
    return [] if plan.network else ["--unshare-net"]


def bwrap_argv(
    plan: SandboxPlan,
    command: Sequence[str],
    *,
    bwrap: str,
    empty_file: str,
    proc: bool = True,
    status_fd: int | None = None,
    seccomp_fd: int | None = None,
    disable_userns: bool = False,
) -> list[str]:
    """The full argument list: `bwrap … -- /bin/bash -c COMMAND` (or the given argv).
    `status_fd`: where bwrap reports JSON status (an `"exit-code"` only if the command ran);
    `seccomp_fd`: a descriptor bwrap reads the seccomp filter from (`seccomp.py`)."""
    argv = [bwrap]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    argv += ["--new-session", "--die-with-parent", "--unshare-user"]
    if disable_userns:
        argv.append("--disable-userns")
    argv += ["--unshare-pid", "--cap-drop", "ALL"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    for name in plan.unset_env:
        argv += ["--unsetenv", name]
    argv += network_flags(plan)
    argv += ["--ro-bind", "/", "/", "--dev", "/dev"]
    # Writable roots, pinned ancestors and holes shallowest first, so a deeper one wins
    # where they nest (`guarded/**` deny with `guarded/tmp/**` allow); at equal depth the
    # hole wins.
    layers = [("--bind", entry.path) for entry in plan.writable]
    layers += [("--bind", path) for path in plan.pinned]
    # A missing hole is frozen at its placeholder (its first missing component).
    layers += [("--ro-bind", entry.placeholder or entry.path) for entry in plan.write_holes]
    # Several holes may share one placeholder (`~/.pi` for three missing files): one mount.
    for flag, path in sorted(
        dict.fromkeys(layers), key=lambda layer: (layer[1].count("/"), layer[0] == "--ro-bind")
    ):
        argv += [flag, path, path]
    masked: set[str] = set()
    dir_masks: list[str] = []
    for entry in plan.read_denies:
        if entry.redirect:
            continue  # a symlink into the hidden holding directory: no mount needed
        target = entry.placeholder or entry.path
        if target in masked or any(target.startswith(d + "/") for d in dir_masks):
            continue  # below a directory mask: hidden by it already (and not creatable)
        masked.add(target)
        if _mask_is_dir(entry):
            dir_masks.append(target)
            argv += ["--perms", "0555", "--tmpfs", target, "--remount-ro", target]
        else:
            argv += ["--ro-bind", empty_file, target]
    if proc:
        argv += ["--proc", "/proc"]
    argv += ["--chdir", plan.cwd, "--"]
    return argv + list(command)


def _mask_is_dir(entry: PlanEntry) -> bool:
    if entry.placeholder is None:
        return entry.kind == "dir"
    return entry.placeholder != entry.path or entry.pattern.endswith("/**")


def shell_command(command: str) -> list[str]:
    """What runs inside: bash given the command string exactly as it was written."""
    return [BASH, "-c", command]

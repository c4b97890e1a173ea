"""The hook-prepared wrapper: a sandboxed command whose success path starts no Python.

The hook process has the policy loaded already, so it computes the plan, makes the
placeholders, records the run (`placeholders.Registry.prepare_run`) and hands the agent a
command that starts bubblewrap directly:

    command /bin/bash -c 'SCRIPT' askgate-sandbox /usr/bin/bwrap --json-status-fd 3 … \\
        -- /bin/bash -c '<original>'

Everything after `askgate-sandbox` is bwrap's argument vector, one shell word each (so
`"$@"` in SCRIPT is that vector, never a re-parsed string); the last word is the original
command byte for byte. SCRIPT runs in the wrapper's own bash (whatever shell the agent
uses) and starts no program but bwrap and tee on the success path (askgate's static
tee, `static_tee.py`, where it is built; coreutils' otherwise):

1. it closes every inherited descriptor but 0, 1 and 2 (bwrap passes them all on);
2. if the shell is not in the directory the plan was made for, it runs the launcher form
   (`askgate sandbox … -- '<original>'`), which plans for where it really is;
3. it prints the plan's warnings (a builtin);
4. it claims the run: creates `RUN/status` exclusively (`set -C`, a builtin) with its
   own PID in it (`{"wrapper-pid": N}`: a sweep knows the tail step cannot come once
   this shell is gone). A run
   claimed already — by a sweep that found it too old, or by an earlier execution of the
   same words — goes the long way (`--finish RUN unclaimed`);
5. `bwrap …` (under `network = "on"` through the Landlock scope helper,
   `scope_exec.py`, which execs it: no host abstract socket, no signal out) with its JSON
   status appended to `RUN/status` (fd 3), the seccomp filter read from fd 4, and
   stderr copied to the agent and to `RUN/stderr` by tee through a pipe (stdout goes
   round it on fd 5; no process substitution, which agents such as Gemini CLI refuse as
   command injection);
6. only when the status is not 0, or a tripwire sprung (`[ -e NAME ]`, a builtin: a
   protected file that did not exist appeared): `askgate sandbox --finish RUN STATUS …
   -- '<original>'`
   explains the failure in one line (`blocked.py`), cleans the run up, and, when bwrap
   never started the command (no `"exit-code"` in its status and not killed by a
   signal), runs it the long way — which refuses with 125 under `bash = "required"` when
   no sandbox can be built, never running it unsandboxed.

While the sandbox lives, its placeholders stay: a sweep keeps every run whose sandbox
process (bwrap's `"child-pid"`) exists, or that may still start (`placeholders.py`).

`prepare_wrapper` returns None whenever this form does not apply (bwrap not usable here,
no flock, a plan too large for one shell argument): the caller then emits the launcher
form, which handles every case itself.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
from collections.abc import Mapping, Sequence

import msgspec

from askgate.sandbox.placeholders import PreparedRun, Registry, SandboxSetupError
from askgate.sandbox.plan import SandboxPlan

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# The agent hands the whole wrapper to its shell as one argument; the kernel caps one
# argument at MAX_ARG_STRLEN (128 KiB). Leave room for the agent's own wrapping.
MAX_WRAPPER_BYTES = 96 * 1024
SCRIPT_NAME = "askgate-sandbox"
STATUS_FD = 3
SECCOMP_FD = 4
EXIT_NOT_STARTED = 125

_CLOSE_INHERITED = (
    'for f in /proc/self/fd/*; do f=${f##*/}; [ "$f" -gt 2 ] 2>/dev/null && eval "exec $f>&-"; done'
)


def _q(word: str) -> str:
    return shlex.quote(word)


def _words(argv: Sequence[str]) -> str:
    return " ".join(_q(word) for word in argv)


def wrapper_script(
    *,
    run: PreparedRun,
    cwd: str,
    launcher_argv: Sequence[str],
    finish_argv: Sequence[str],
    options: Sequence[str],
    warnings: Sequence[str],
    tee: str,
    seccomp: str | None = None,
    tripwire_test: str | None = None,
    env_filter: str | None = None,
    scope: str | None = None,
) -> str:
    """SCRIPT for `/bin/bash -c SCRIPT askgate-sandbox BWRAP-ARGV…` (pure).
    `launcher_argv`: the askgate command of step 2 up to its options; `finish_argv`:
    step 6's (`askgate sandbox --finish RUN`), to which SCRIPT appends the status,
    `options`, `--` and the original command (`"${@: -1}"`, bwrap's last word)."""
    rest = f'{_words([*options, "--"])} "${{@: -1}}"'
    status = _q(run.status)
    lines = [
        _CLOSE_INHERITED,
        f'if [ "$PWD" != {_q(cwd)} ]; then {_words(launcher_argv)} {rest}',
        f'elif set -C; ! {{ printf \'{{"wrapper-pid": %s}}\\n\' "$$" >{status}; }} '
        f"2>/dev/null; then set +C; "
        f"{_words(finish_argv)} unclaimed {rest}",
        "else set +C",
    ]
    lines += [f"printf '%s\\n' {_q('askgate sandbox: warning: ' + w)} >&2" for w in warnings]
    seccomp_redirect = f" {SECCOMP_FD}<{_q(seccomp)}" if seccomp else ""
    failed = '[ "$s" -ne 0 ]' + (f" || {tripwire_test}" if tripwire_test else "")
    # `scope`: the Landlock scope helper (scope_exec.py), which execs bwrap's argv.
    run_bwrap = f'{_q(scope)} "$@"' if scope else '"$@"'
    start = f"( {env_filter}; exec {run_bwrap} )" if env_filter else run_bwrap
    # stderr reaches tee through a pipe (stdout goes round it on fd 5), not a process
    # substitution: agents refuse `>(…)` as command injection (Gemini CLI does), and bash
    # waits for both ends of a pipeline. pipefail: the pipeline's status is bwrap's.
    lines.append(
        f"set -o pipefail; {{ {start} {STATUS_FD}>>{status}{seccomp_redirect} 2>&1 >&5 5>&- "
        f"| {_q(tee)} {_q(run.stderr)} >&2 5>&-; }} 5>&1; "
        f's=$?; if {failed}; then {_words(finish_argv)} "$s" {rest}; fi'
    )
    lines.append("fi")
    return "\n".join(lines)


def wrapper_command(script: str, bwrap_argv: Sequence[str]) -> str:
    """The command the agent runs: the script and bwrap's argv, one shell word each.

    It starts with the `command` builtin: Gemini CLI rewrites a command that starts with
    `<shell> -c ` into what follows it (and strips a quote at each end), which would run
    the script's text as a program name."""
    return f"command /bin/bash -c {_q(script)} {SCRIPT_NAME} {_words(bwrap_argv)}"


def askgate_options(agent: str | None, config_files: Sequence[str]) -> list[str]:
    options: list[str] = []
    if agent:
        options += ["--agent", agent]
    for path in config_files:
        options += ["--config", os.path.abspath(path)]
    return options


def ensure_state_directory(env: Mapping[str, str]) -> None:
    """Create askgate's sandbox state directory if it can be, and sweep the runs that are
    over — before planning: the plan freezes the directory (a placeholder must not stand
    where it belongs) and must see the tree as it is without their placeholders."""
    from askgate.sandbox.placeholders import ensure_control_plane, state_directory

    ensure_control_plane(env)
    with contextlib.suppress(SandboxSetupError, OSError):
        Registry(state_directory(env)).sweep()


def prepare_wrapper(
    plan: SandboxPlan,
    command: str,
    *,
    env: Mapping[str, str],
    launcher: Sequence[str],
    agent: str | None,
    config_files: Sequence[str],
) -> str | None:
    """The prepared wrapper for `command` under `plan`, or None (use the launcher form).
    Raises SandboxSetupError when a placeholder cannot be made (the caller asks)."""
    from askgate.sandbox import bwrap as bwrap_backend
    from askgate.sandbox.environment import shell_filter
    from askgate.sandbox.placeholders import state_directory
    from askgate.sandbox.runner import probe
    from askgate.sandbox.tripwires import shell_test

    if not plan.startable or plan.mode == "off" or plan.net_proxy:
        return None  # (network = "policy": the launcher form runs askgate's proxy)
    try:
        registry = Registry(state_directory(env))
    except SandboxSetupError:
        return None  # the launcher form reports it (and refuses under "required")
    found = probe(registry.directory)
    if found.backend != "bwrap" or not found.bwrap.usable or found.bwrap.path is None:
        return None  # Landlock, or nothing: the launcher form decides
    with registry.locked():
        empty = registry.ensure_empty_file()
        seccomp = registry.ensure_seccomp_file()
        scope = _host_network_scope(plan, registry)
        # askgate's static tee (no dynamic loader to start), else coreutils'.
        tee = registry.ensure_static_tee() or shutil.which("tee", path=SYSTEM_PATH)
        unchanged = registry.ensure_unchanged_check()
    if tee is None:
        return None
    if scope is False:
        return None  # the launcher form scopes bwrap itself, or refuses
    run = registry.prepare_run([*plan.write_holes, *plan.read_denies])
    try:
        with open(run.plan, "wb") as handle:
            handle.write(msgspec.json.encode(plan))
        watched = _record_watched(plan, run)  # once the placeholders stand
        argv = bwrap_backend.bwrap_argv(
            plan,
            bwrap_backend.shell_command(command),
            bwrap=found.bwrap.path,
            empty_file=empty,
            proc=found.bwrap.proc,
            status_fd=STATUS_FD,
            seccomp_fd=SECCOMP_FD if seccomp else None,
            disable_userns=found.bwrap.disable_userns,
        )
        options = askgate_options(agent, config_files)
        script = wrapper_script(
            run=run,
            cwd=plan.cwd,
            launcher_argv=[*launcher, "sandbox"],
            finish_argv=[*launcher, "sandbox", "--finish", run.directory],
            options=options,
            warnings=plan.warnings,
            tee=tee,
            seccomp=seccomp,
            tripwire_test=shell_test(
                plan.tripwires,
                unchanged=unchanged,
                watched=watched,
                index=run.index,
            ),
            env_filter=shell_filter(plan),
            scope=scope if isinstance(scope, str) else None,
        )
        wrapped = wrapper_command(script, argv)
    except OSError as error:  # the run's plan or snapshot cannot be written: ask
        registry.finish_run(run)
        raise SandboxSetupError(f"cannot record the run in {run.directory}: {error}") from None
    except BaseException:
        registry.finish_run(run)
        raise
    if len(wrapped.encode("utf-8", "surrogateescape")) > MAX_WRAPPER_BYTES:
        registry.finish_run(run)
        return None
    return wrapped


def _record_watched(plan: SandboxPlan, run: PreparedRun) -> str | None:
    """Write the watched directories' change times (and the index's) for the wrapper's
    `unchanged` check and the tail; the list's path, or None when nothing is watched."""
    from askgate.sandbox.treewatch import snapshot
    from askgate.sandbox.unchanged import snapshot as record

    index = [t.path for t in plan.tripwires if t.kind == "index"]
    if index:
        with open(run.index, "wb") as handle:
            handle.write(record(index))
    if plan.watch is None and not any(t.kind == "glob" for t in plan.tripwires):
        return None
    globs = dict.fromkeys(t.named or t.path for t in plan.tripwires if t.kind == "glob")
    with open(run.watched, "wb") as handle:
        handle.write(snapshot(plan.watch, *globs))
    return run.watched


def _host_network_scope(plan: SandboxPlan, registry: Registry) -> str | bool | None:
    """Under `network = "on"` the command shares the host's abstract Unix sockets (X11,
    D-Bus): the scope helper's path when it can put a Landlock scope on bwrap (as
    `askgate sandbox` does); None when no scope is needed (an own network namespace) or
    none is possible and the policy hides nothing; False when the launcher form must
    decide (the policy hides secrets and this wrapper cannot scope: the CLI scopes with
    Python, or refuses on a kernel without Landlock ABI 6)."""
    from askgate.sandbox import landlock
    from askgate.sandbox.plan import _secrets

    if not plan.network:
        return None
    scopes = landlock.abi_version() >= landlock.SCOPE_ABI
    helper = registry.ensure_scope_helper() if scopes else None
    if helper is not None:
        return helper
    return False if _secrets(plan.read_denies) else None


class Finished(msgspec.Struct, frozen=True):
    """What the tail step found: the status to exit with, or `rerun` (never started)."""

    status: int
    rerun: bool = False


def finish(run_directory: str, status: int | None, state_dir: str) -> Finished:
    """Step 6 of the wrapper (after a non-zero status), or step 4's `unclaimed` (None):
    explain, clean up, and say whether the command never started (so the caller may run
    it the long way)."""
    from askgate.sandbox.placeholders import exit_code_of

    runs = os.path.join(state_dir, "runs")
    if os.path.dirname(os.path.abspath(run_directory)) != runs:
        raise ValueError(f"{run_directory} is not a run of {runs}")
    run = PreparedRun(os.path.abspath(run_directory))
    if status is None:
        return Finished(status=EXIT_NOT_STARTED, rerun=True)  # not ours to clean up
    try:
        with open(run.status, "rb") as handle:
            text: bytes | None = handle.read()
    except OSError:
        text = None
    ran = text is not None and exit_code_of(text) is not None
    plan = _plan(run)
    lines = _disarm(plan, run)  # every process of the command is gone: before any cleanup
    if ran and status != 0 and plan is not None:
        lines.append(_explanation(run, plan))
    if status != 0:
        # A run that exited 0 (the tail came for a tripwire or a watched directory) is
        # left to the next sweep, as one that needed no tail step: its record says how
        # it ended, and the sweep's second look at its tripwires finds them disarmed.
        with contextlib.suppress(SandboxSetupError):
            Registry(state_dir).finish_run(run)
    for line in lines:
        if line is not None:
            print(f"askgate sandbox: {line}", file=sys.stderr, flush=True)
    # No status file: whether it ran cannot be told, so it is not run again. Killed by a
    # signal (128+N) without an exit code: it may have run.
    return Finished(status=status, rerun=text is not None and not ran and 0 < status < 128)


def _plan(run: PreparedRun) -> SandboxPlan | None:
    try:
        with open(run.plan, "rb") as handle:
            return msgspec.json.decode(handle.read(), type=SandboxPlan)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _disarm(plan: SandboxPlan | None, run: PreparedRun) -> list[str | None]:
    from askgate.sandbox.treewatch import disarm_watch, read_snapshot
    from askgate.sandbox.tripwires import disarm

    if plan is None:
        return []
    recorded, since = read_snapshot(run.watched)
    return [*disarm(plan.tripwires), *disarm_watch(plan.watch, recorded, since)]


def _explanation(run: PreparedRun, plan: SandboxPlan) -> str | None:
    from askgate.sandbox.blocked import explain_failure
    from askgate.sandbox.runner import STDERR_TAIL_BYTES

    try:
        with open(run.stderr, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - STDERR_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    return explain_failure(plan, tail)

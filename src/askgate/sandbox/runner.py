"""Run one command inside the sandbox a plan describes (the imperative shell).

Backend choice: bubblewrap when its probe passes; else Landlock when the kernel has it;
else none. Exit status: the command's own (128+N when killed by signal N), or
`EXIT_REFUSED` (125) when the sandbox could not be built and the command did not run.
A command runs without a sandbox only when the mode is not `required`, and then with a
warning on stderr.

The command's stderr passes through a pipe so that, after a failure, one line can name
the path the sandbox blocked and the rule behind it (`blocked.py`). Its stdin and stdout
are inherited; every other descriptor is closed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import msgspec

from askgate.sandbox import bwrap as bwrap_backend
from askgate.sandbox import landlock
from askgate.sandbox.blocked import explain_failure
from askgate.sandbox.placeholders import Registry, SandboxSetupError
from askgate.sandbox.plan import SandboxPlan
from askgate.sandbox.tripwires import arm, disarm, unarm

if TYPE_CHECKING:
    from askgate.sandbox.netproxy import ProxiedRun

EXIT_REFUSED = 125
STDERR_TAIL_BYTES = 64 * 1024
RELAY_DRAIN_S = 1.0
BACKENDS = ("auto", "bwrap", "landlock", "none")


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """What this machine offers, as `askgate sandbox --probe` reports it."""

    backend: str  # "bwrap" | "landlock" | "none"
    bwrap: bwrap_backend.BwrapProbe
    landlock_abi: int
    landlock_enforced: bool = False  # a forked child failed to read what it was denied
    key: str = ""


def _probe_key(bwrap: str | None) -> str:
    parts = ["probe-v3", str(os.getuid())]
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id") as handle:
        parts.append(handle.read().strip())
    if bwrap:
        with contextlib.suppress(OSError):
            info = os.stat(bwrap)
            parts += [bwrap, str(info.st_mtime_ns), str(info.st_size)]
    return "|".join(parts)


def probe(state_dir: str | None = None, *, refresh: bool = False) -> Probe:
    """Probe the backends; a *successful* bwrap probe is cached per boot, bwrap binary and
    user in `state_dir` (hidden inside every sandbox, so a command cannot forge it). A
    failure is never cached: a failure a command caused on purpose (exhausting the
    user's processes) must not downgrade the commands after it to a weaker backend."""
    path = bwrap_backend.find_bwrap()
    key = _probe_key(path)
    cache = os.path.join(state_dir, "probe.json") if state_dir else None
    if cache and not refresh:
        with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError):
            with open(cache, "rb") as handle:
                cached = msgspec.json.decode(handle.read(), type=Probe)
            if cached.key == key:
                return cached
    found = bwrap_backend.probe(path)
    abi = landlock.abi_version()
    enforced = landlock.verify_enforced(abi)
    backend = "bwrap" if found.usable else "landlock" if enforced else "none"
    result = Probe(
        backend=backend, bwrap=found, landlock_abi=abi, landlock_enforced=enforced, key=key
    )
    if cache and backend == "bwrap":
        with contextlib.suppress(OSError):
            temporary = f"{cache}.{os.getpid()}.tmp"
            with open(temporary, "wb") as handle:
                handle.write(msgspec.json.encode(result))
            os.replace(temporary, cache)
    return result


def _say(text: str) -> None:
    print(f"askgate sandbox: {text}", file=sys.stderr, flush=True)


class _StderrRelay:
    """Copies the child's stderr to ours as it comes, keeping the tail for `blocked.py`."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.tail = bytearray()
        self._thread = threading.Thread(target=self._pump, daemon=True)

    def start(self) -> None:
        os.close(self.write_fd)
        self._thread.start()

    def _pump(self) -> None:
        out = sys.stderr.buffer
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            with contextlib.suppress(OSError, ValueError):
                out.write(chunk)
                out.flush()
            self.tail += chunk
            del self.tail[:-STDERR_TAIL_BYTES]
        os.close(self.read_fd)

    def finish(self) -> str:
        # Under bwrap every process of the command is gone when it exits (its PID
        # namespace ends), so the pipe closes at once. Without bwrap a background job may
        # hold stderr open: do not wait for it beyond a moment.
        self._thread.join(timeout=RELAY_DRAIN_S)
        return bytes(self.tail).decode("utf-8", "replace")


def _spawn_and_wait(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    preexec: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
) -> tuple[int, str]:
    relay = _StderrRelay()
    try:
        child = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stderr=relay.write_fd,
            close_fds=True,
            pass_fds=tuple(pass_fds),
            preexec_fn=preexec,
        )
    except BaseException:
        os.close(relay.write_fd)
        os.close(relay.read_fd)
        raise
    finally:
        for fd in pass_fds:  # the child has its copy; ours would keep the pipe open
            os.close(fd)
    relay.start()
    forwarded = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
    previous = {}
    for number in forwarded:
        with contextlib.suppress(ValueError):  # not the main thread
            previous[number] = signal.signal(
                number, lambda signum, _frame: child.send_signal(signum)
            )
    try:
        status = child.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    tail = relay.finish()
    return (128 - status if status < 0 else status), tail


def _unsandboxed(
    plan: SandboxPlan, command: Sequence[str], env: Mapping[str, str], why: str
) -> int:
    if plan.mode == "required":
        _say(f'refused: {why}; [sandbox] bash = "required" never runs a command unsandboxed')
        return EXIT_REFUSED
    if plan.net_proxy:  # unsandboxed would mean the whole network: never (netproxy.py)
        _say(f'refused: {why}; [sandbox] network = "policy" never runs a command unsandboxed')
        return EXIT_REFUSED
    _say(f"warning: running WITHOUT a sandbox: {why}")
    status, _ = _spawn_and_wait(command, env=env, cwd=plan.cwd)
    return status


def _report(plan: SandboxPlan, status: int, tail: str) -> None:
    if status != 0:
        line = explain_failure(plan, tail)
        if line is not None:
            _say(line)


def run_sandboxed(
    plan: SandboxPlan,
    command: Sequence[str],
    *,
    env: Mapping[str, str],
    registry: Registry | None,
    backend: str = "auto",
) -> int:
    """Run `command` (an argv) under `plan`; returns the exit status to pass on."""
    if plan.refusals:
        for reason in plan.refusals:
            _say(f"refused: {reason}")
        return EXIT_REFUSED
    if plan.ask_reason is not None:
        _say(f"refused: {plan.ask_reason}")
        return EXIT_REFUSED
    for warning in plan.warnings:
        _say(f"warning: {warning}")
    from askgate.sandbox.environment import inside_env

    env = inside_env(plan, env)
    if registry is None:
        return _unsandboxed(plan, command, env, "askgate's sandbox state directory is unusable")
    found = probe(registry.directory)
    chosen = found.backend if backend == "auto" else backend
    if chosen == "bwrap" and found.bwrap.usable and found.bwrap.path:
        return _run_bwrap(plan, command, env, registry, found.bwrap)
    if chosen == "landlock" and found.landlock_enforced:
        return _run_landlock(plan, command, env, found.landlock_abi, registry)
    why = found.bwrap.error or "no sandbox backend"
    if chosen != "none":
        why = f"no usable sandbox ({chosen}: {why}; Landlock ABI {found.landlock_abi})"
    else:
        why = "the sandbox backend is 'none'"
    return _unsandboxed(plan, command, env, why)


def _run_bwrap(
    plan: SandboxPlan,
    command: Sequence[str],
    env: Mapping[str, str],
    registry: Registry,
    found: bwrap_backend.BwrapProbe,
) -> int:
    assert found.path is not None
    try:
        scope = _host_network_scope(plan)
    except landlock.LandlockError as error:
        _say(f"refused: {error}")
        return EXIT_REFUSED
    try:
        return _run_bwrap_scoped(plan, command, env, registry, found, scope)
    finally:
        if scope is not None:
            os.close(scope)


def _host_network_scope(plan: SandboxPlan) -> int | None:
    """`network = "on"` shares the host's network namespace, and with it the host's
    abstract Unix sockets (an X server's `@/tmp/.X11-unix/X0`, a D-Bus session bus):
    a Landlock scope on bwrap keeps the command from connecting to one made outside
    (and from signalling processes outside). None when not needed or not available;
    raises LandlockError (refuse) when the policy hides secrets and the kernel cannot
    scope (Landlock ABI < 6): the sockets would be the way around the masks."""
    from askgate.sandbox.plan import _secrets

    if not plan.network:
        return None  # an own network namespace: no host abstract socket is in it
    abi = landlock.abi_version()
    if abi >= landlock.SCOPE_ABI:
        return landlock.scope_ruleset(abi)
    if not _secrets(plan.read_denies):
        return None
    raise landlock.LandlockError(
        'network = "on" would leave the host\'s abstract Unix sockets (X11, D-Bus) '
        f"reachable: this kernel's Landlock cannot scope them (ABI {abi} < "
        f'{landlock.SCOPE_ABI}); use network = "policy" or "off"'
    )


def _run_bwrap_scoped(
    plan: SandboxPlan,
    command: Sequence[str],
    env: Mapping[str, str],
    registry: Registry,
    found: bwrap_backend.BwrapProbe,
    scope: int | None,
) -> int:
    assert found.path is not None
    try:
        with registry.locked():
            empty = registry.ensure_empty_file()
            seccomp = registry.ensure_seccomp_file()
        registry.acquire([*plan.write_holes, *plan.read_denies])
        watching = _Watching(plan)  # once the placeholders stand
        armed = arm(registry.directory, plan.tripwires, plan.watch, watching.recorded)
    except OSError as error:
        with contextlib.suppress(SandboxSetupError):
            registry.release()
        _say(f"refused: cannot record the run's tripwires: {error.strerror}")
        return EXIT_REFUSED
    except SandboxSetupError as error:
        with contextlib.suppress(SandboxSetupError):
            registry.release()
        _say(f"refused: {error}")
        return EXIT_REFUSED
    options = _BwrapOptions(found.path, empty, seccomp, found.disable_userns, scope)
    try:
        with _network(plan) as network:
            status, tail, ran = _bwrap_once(
                plan, command, env, options, proc=found.proc, network=network
            )
            if not ran and found.proc and bwrap_backend.is_proc_error(tail):
                # The command never started, so trying again without /proc is safe.
                status, tail, ran = _bwrap_once(
                    plan, command, env, options, proc=False, network=network
                )
    finally:
        # Every process of the command is gone (its PID namespace ended): what it left at
        # a tripwire is moved aside before anything else can read it.
        watching.disarm()
        unarm(armed)
        registry.release()
    if not ran:
        # The cached probe stays: a failure the command may have caused on purpose must
        # not downgrade later commands (`askgate sandbox --probe` probes afresh).
        _say("refused: bubblewrap could not set up the sandbox (its message is above)")
        return EXIT_REFUSED
    _report(plan, status, tail)
    return status


@contextlib.contextmanager
def _network(plan: SandboxPlan) -> Iterator[ProxiedRun | None]:
    """`network = "policy"`: askgate's proxy for this run (netproxy.py), whose bridge
    goes in front of the command; otherwise None and nothing changes."""
    if not plan.net_proxy:
        yield None
        return
    from askgate.sandbox.netproxy import network_through_proxy

    with network_through_proxy(plan) as proxied:
        yield proxied


class _BwrapOptions(msgspec.Struct, frozen=True):
    bwrap: str
    empty: str
    seccomp: str | None
    disable_userns: bool
    scope: int | None = None  # a Landlock scope-only ruleset put on bwrap (host network)


def _bwrap_once(
    plan: SandboxPlan,
    command: Sequence[str],
    env: Mapping[str, str],
    options: _BwrapOptions,
    *,
    proc: bool,
    network: ProxiedRun | None = None,
) -> tuple[int, str, bool]:
    """One bwrap run: (status, stderr tail, whether the command started). bwrap writes
    `"exit-code"` to its status descriptor only for a command that ran; a setup failure
    leaves it out."""
    status_read, status_write = os.pipe()
    passed = [status_write]
    if network is not None:  # the bridge and its descriptor, fresh for each attempt
        command, fds = network.attempt(command)
        passed += fds
    try:
        seccomp_fd = None
        if options.seccomp is not None:
            seccomp_fd = os.open(options.seccomp, os.O_RDONLY | os.O_CLOEXEC)
            passed.append(seccomp_fd)
        argv = bwrap_backend.bwrap_argv(
            plan,
            command,
            bwrap=options.bwrap,
            empty_file=options.empty,
            proc=proc,
            status_fd=status_write,
            seccomp_fd=seccomp_fd,
            disable_userns=options.disable_userns,
        )
        scope = options.scope
        preexec = None if scope is None else lambda: landlock.restrict_scope_in_child(scope)
        status, tail = _spawn_and_wait(
            argv, env=env, cwd="/", pass_fds=tuple(passed), preexec=preexec
        )
        os.set_blocking(status_read, False)
        report = b""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(status_read, 65536):
                report += chunk
    finally:
        os.close(status_read)
    return status, tail, b'"exit-code"' in report


class _Watching:
    """A run's tripwires and watched directories (treewatch.py): recorded before the
    command starts, checked once every process of it is gone."""

    def __init__(self, plan: SandboxPlan) -> None:
        from askgate.sandbox.treewatch import snapshot

        self.plan = plan
        self.since = time.time()
        self.recorded = snapshot(plan.watch)

    def disarm(self) -> None:
        from askgate.sandbox.treewatch import disarm_watch

        for line in [
            *disarm(self.plan.tripwires),
            *disarm_watch(self.plan.watch, self.recorded, self.since),
        ]:
            _say(line)


def _run_landlock(
    plan: SandboxPlan,
    command: Sequence[str],
    env: Mapping[str, str],
    abi: int,
    registry: Registry,
) -> int:
    if os.geteuid() == 0:
        # Landlock restricts paths, not privilege: root keeps what root can do outside
        # them (other users' processes, kernel interfaces). bubblewrap can hold root.
        _say("refused: the Landlock fallback does not run commands as root (use bubblewrap)")
        return EXIT_REFUSED
    rules = landlock.landlock_plan(plan, abi)
    for reason in rules.refusals:
        _say(f"refused: {reason}")
    if rules.refusals:
        return EXIT_REFUSED
    for warning in rules.warnings:
        _say(f"warning: {warning}")
    try:
        ruleset = landlock.create_ruleset(rules, abi)
    except landlock.LandlockError as error:
        return _unsandboxed(plan, command, env, str(error))
    from askgate.sandbox.seccomp import program

    # Landlock cannot hide a socket (it does not govern connect(); abstract sockets have
    # no path): no new Unix socket at all under this backend (seccomp.py).
    filter_code = program(unix_sockets=False)
    try:
        # The tripwires, as under bubblewrap: recorded before the command starts (a kill of
        # askgate leaves them to the next sweep), checked when it ends.
        watching = _Watching(plan)
        armed = arm(registry.directory, plan.tripwires, plan.watch, watching.recorded)
    except OSError as error:
        os.close(ruleset)
        _say(f"refused: cannot record the run's tripwires: {error.strerror}")
        return EXIT_REFUSED
    try:
        status, tail = _spawn_and_wait(
            command,
            env=env,
            cwd=plan.cwd,
            preexec=lambda: landlock.restrict_in_child(ruleset, filter_code),
        )
    except subprocess.SubprocessError as error:
        _say(f"refused: Landlock could not be enforced: {error}")
        return EXIT_REFUSED
    finally:
        os.close(ruleset)
        # What the command left at a tripwire is moved aside before anything outside reads
        # it (a background job it started outlives it here: no PID namespace).
        watching.disarm()
        unarm(armed)
    _report(plan, status, tail)
    return status

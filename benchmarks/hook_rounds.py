"""The hook area's one-shot processes, round robin, wall-clock AND cpu time.

`python -m benchmarks.hook_rounds [ROUNDS]` (default 15): the children of the hook area's
in-process row (bare python, the cedarpy and casbin one-shot scripts, `askgate hook
claude-code` with ASKGATE_DAEMON=off: a plain policy load), same fixtures and
environment as benchmarks/hook.py, each run once per round in turn. Per child: the median
wall time (exec to exit, output read) and the median cpu time (user + system of the child,
from wait4), so a busy machine shows up as wall > cpu instead of skewing the comparison.
Every answer is checked; a child that answers wrong stops the run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import hook
from benchmarks.peers import available


def _run(
    argv: list[str], env: dict[str, str], stdin: bytes, cwd: str, *, expect: bytes | None
) -> tuple[float, float]:
    """One child: wall and cpu milliseconds. The child is reaped with wait4 (not by
    subprocess) so its own resource usage can be read; `expect` must be in its stdout."""
    start = time.perf_counter()
    read_in, write_in = os.pipe()
    read_out, write_out = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: stdin/stdout from the pipes, stderr discarded
        try:
            os.chdir(cwd)
            os.dup2(read_in, 0)
            os.dup2(write_out, 1)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            for fd in (read_in, write_in, read_out, write_out, null):
                os.close(fd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    os.close(read_in)
    os.close(write_out)
    os.write(write_in, stdin)
    os.close(write_in)
    chunks = []
    while chunk := os.read(read_out, 65536):
        chunks.append(chunk)
    os.close(read_out)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    out = b"".join(chunks)
    if os.waitstatus_to_exitcode(status) != 0 or (expect is not None and expect not in out):
        raise SystemExit(f"{argv[:3]} answered {out[:120]!r} (exit {status})")
    return wall * 1e3, (usage.ru_utime + usage.ru_stime) * 1e3


def main(argv: list[str]) -> int:
    rounds = int(argv[0]) if argv else 15
    with tempfile.TemporaryDirectory(prefix="askgate-bench-rounds-") as tmp:
        base = Path(tmp)
        files = hook._write_fixtures(base)
        env = hook._env(base)
        (base / "run").mkdir(mode=0o700)
        env["ASKGATE_RUNTIME_DIR"] = str(base / "run")
        env["ASKGATE_DAEMON"] = "off"
        cwd = str(files["project"])
        stdin = json.dumps(
            {
                "session_id": "s",
                "cwd": cwd,
                "hook_event_name": "PreToolUse",
                "tool_name": "Bash",
                "tool_input": {"command": hook.COMMAND},
            }
        ).encode()
        python = sys.executable
        askgate = hook._askgate_argv()
        children: dict[str, tuple[list[str], dict[str, str], bytes]] = {
            "python -c pass": ([python, "-c", "pass"], env, b""),
        }
        if available("cedarpy"):
            children["cedarpy one-shot"] = (
                [python, str(files["cedar_cli"]), str(files["cedar"])],
                env,
                stdin,
            )
        if available("casbin"):
            children["casbin one-shot"] = (
                [python, str(files["casbin_cli"]), str(files["model"]), str(files["csv"])],
                env,
                stdin,
            )
        children["askgate in-process"] = ([*askgate, "hook", "claude-code"], env, stdin)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in children}
        for round_ in range(rounds + 1):  # round 0 warms up (.pyc files)
            for name, (command, child_env, data) in children.items():
                expect = None if name == "python -c pass" else b'"allow"'
                result = _run(command, child_env, data, cwd, expect=expect)
                if round_:
                    samples[name].append(result)
    print(f"{rounds} rounds, medians (wall = exec to exit; cpu = the child's user + system)")
    for name, values in samples.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        print(f"  {name:24s} wall {wall:7.1f} ms   cpu {cpu:7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

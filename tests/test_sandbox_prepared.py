"""The wrapper a hook prepares (askgate.sandbox.prepared): bwrap started by bash, with no
Python on the success path — and everything that keeps it as safe as `askgate sandbox`.

Real bash, real bwrap, real kernel. The corpus test replaces bwrap by `printf` to show the
argument vector bwrap receives ends in `/bin/bash -c <original>` byte for byte; the others
run the real thing and assert what the command could (not) do and what is left on disk.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import msgspec
import pytest

from askgate.sandbox.placeholders import UNSTARTED_S, PreparedRun, Registry, run_is_over
from askgate.sandbox.prepared import SCRIPT_NAME, wrapper_command, wrapper_script
from data.bash_corpus import GROUPS
from sandbox_world import SECRET, World, require_bwrap
from waits import wait_until

CORPUS = [case.command for cases in GROUPS.values() for case in cases]


@pytest.fixture
def world(tmp_path: Path) -> World:
    require_bwrap()
    return World(tmp_path, mode="hook")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bash(world: World, wrapped: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["/bin/bash", "-c", wrapped],
        capture_output=True,
        cwd=cwd or world.project,
        env=world.env,
        timeout=120,
    )


def _prepared(world: World, command: str, cwd: Path | None = None) -> str:
    wrapped = world.prepared(command, cwd=cwd)
    assert wrapped is not None
    return wrapped


def _runs(world: World) -> list[str]:
    runs = world.base / "xdg-data" / "askgate" / "sandbox" / "runs"
    return sorted(p.name for p in runs.iterdir() if p.name.startswith("w-"))


# --- what bash runs inside is the original -------------------------------------------------


def test_the_corpus_reaches_bwrap_and_bash_byte_for_byte(tmp_path: Path) -> None:
    carried = [c for c in CORPUS if "\x00" not in c and _utf8(c)]
    assert len(carried) > 400
    lines = []
    for index, command in enumerate(carried):
        run = PreparedRun(str(tmp_path / f"w-{index}"))
        os.mkdir(run.directory)
        script = wrapper_script(
            run=run,
            cwd=str(tmp_path),
            launcher_argv=["false"],
            finish_argv=["false"],
            options=[],
            warnings=[],
            tee="/usr/bin/tee",
        )
        # `printf` stands in for bwrap: it prints the argument vector it was given.
        argv = ["printf", "%s\\0", "--chdir", str(tmp_path), "--", "/bin/bash", "-c", command]
        lines.append(wrapper_command(script, argv) + "\nprintf '%s\\0' ---END---")
    all_in_one = tmp_path / "all.sh"
    all_in_one.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        ["/bin/bash", str(all_in_one)], capture_output=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[:500]
    received = done.stdout.split(b"\0---END---\0")
    assert received[-1] == b""
    for command, words in zip(carried, received[:-1], strict=True):
        assert words.split(b"\0")[-3:] == [b"/bin/bash", b"-c", command.encode("utf-8")]


def test_bash_inside_the_real_sandbox_runs_the_original_string(world: World) -> None:
    originals = [
        'echo "a  b" \'$HOME\'; printf "[%s]" "$BASH_EXECUTION_STRING"',
        'printf \'[%s]\' "$BASH_EXECUTION_STRING" # it\'s \\ "odd" $(x) `y` \\\n',
    ]
    for original in originals:
        done = _bash(world, _prepared(world, original))
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().endswith(f"[{original}]")


def test_the_wrapper_is_shell_words_bwrap_first_and_the_original_last(world: World) -> None:
    wrapped = _prepared(world, "echo 'hi there'")
    words = shlex.split(wrapped)
    # `command` first: Gemini CLI rewrites a command that starts with `<shell> -c`.
    assert words[:3] == ["command", "/bin/bash", "-c"] and words[4] == SCRIPT_NAME
    assert os.path.basename(words[5]) == "bwrap"
    assert words[-3:] == ["/bin/bash", "-c", "echo 'hi there'"]
    for flag in ("--unshare-user", "--unshare-pid", "--cap-drop", "--die-with-parent"):
        assert flag in words


# --- the policy holds through it -------------------------------------------------------------


def test_the_secret_the_guarded_dir_and_the_exit_status(world: World) -> None:
    (world.project / "Makefile").write_text(
        f"ssh:\n\t@cat {world.ssh_key}\nguard:\n\t@echo x > guarded/new.txt\n"
    )
    done = _bash(world, _prepared(world, "make -s ssh; make -s guard; echo ok > ok.txt; exit 7"))
    assert done.returncode == 7
    assert SECRET.encode() not in done.stdout + done.stderr
    assert b"No such file or directory" in done.stderr and b"Read-only file system" in done.stderr
    assert not (world.guarded / "new.txt").exists()
    assert (world.project / "ok.txt").read_text() == "ok\n"  # the project stays writable
    # After the failure, one line names the blocked path and its rule (the tail step).
    assert b"askgate sandbox: blocked reading " in done.stderr
    assert b'"~/.ssh/**" = deny' in done.stderr


def test_stdout_and_stderr_reach_the_caller_as_they_are(world: World) -> None:
    done = _bash(world, _prepared(world, "printf 'out\\n'; printf 'err\\n' >&2"))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"out\n", b"err\n")


# --- placeholders ------------------------------------------------------------------------------


def test_a_failed_run_cleans_up_after_itself_at_once(world: World) -> None:
    hooks = world.project / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    wrapped = _prepared(world, "echo x > .git/hooks/pre-commit")
    assert hooks.is_dir()  # the placeholder, made by the hook
    done = _bash(world, wrapped)
    assert done.returncode != 0 and b"Read-only file system" in done.stderr
    assert not hooks.exists() and _runs(world) == []


def test_a_successful_run_is_cleaned_by_the_next_askgate_process(world: World) -> None:
    hooks = world.project / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    done = _bash(world, _prepared(world, "true"))
    assert done.returncode == 0
    assert hooks.is_dir() and len(_runs(world)) == 1  # nothing of Python ran after it
    world.sweep()
    assert not hooks.exists() and _runs(world) == []


def test_placeholders_stay_while_a_prepared_sandbox_uses_them(world: World) -> None:
    hooks = world.project / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    started, go = world.base / "started", world.base / "go"
    first = subprocess.Popen(
        [
            "/bin/bash",
            "-c",
            _prepared(
                world,
                f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; "
                "echo x > .git/hooks/pre-commit; ls -d .git/hooks",
            ),
        ],
        cwd=world.project,
        env=world.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(started.exists, "the first sandbox to start", process=first)
        world.sweep()  # another askgate process sweeps while the first sandbox runs
        second = _bash(world, _prepared(world, "echo second"))
        assert second.returncode == 0 and second.stdout == b"second\n"
        world.sweep()
        assert hooks.is_dir()  # still the first sandbox's mount point
        go.touch()
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()
    assert b"Read-only file system" in err  # the mount held to the end
    assert out == b".git/hooks\n"
    assert not (hooks / "pre-commit").exists()
    world.sweep()
    assert not hooks.exists() and _runs(world) == []


def test_an_unstarted_run_is_kept_then_revoked_and_then_goes_the_long_way(world: World) -> None:
    wrapped = _prepared(world, f"echo $((1 + 1)) >> count.txt; cat {world.ssh_key}")
    (run_name,) = _runs(world)
    run = PreparedRun(str(world.base / "xdg-data" / "askgate" / "sandbox" / "runs" / run_name))
    assert not run_is_over(run, time.time())  # young: the agent may be about to run it
    old = time.time() - UNSTARTED_S - 5
    os.utime(run.record, (old, old))
    world.sweep()  # claims it: its own claim will fail
    assert _runs(world) == []
    done = _bash(world, wrapped)
    assert done.returncode != 0  # the cat failed: still sandboxed the long way
    assert SECRET.encode() not in done.stdout + done.stderr
    assert (world.project / "count.txt").read_text() == "2\n"  # and run exactly once


def test_running_the_same_wrapper_twice_goes_the_long_way_the_second_time(world: World) -> None:
    wrapped = _prepared(world, f"echo run >> runs.txt; cat {world.ssh_key}")
    for _ in range(2):
        done = _bash(world, wrapped)
        assert done.returncode == 1 and SECRET.encode() not in done.stdout + done.stderr
    assert (world.project / "runs.txt").read_text() == "run\nrun\n"


# --- fail closed -----------------------------------------------------------------------------


def test_a_sandbox_that_does_not_start_runs_the_command_once_the_long_way(world: World) -> None:
    hooks = world.project / ".git" / "hooks"
    subprocess.run(["rm", "-rf", str(hooks)], check=True)
    wrapped = _prepared(world, f"echo x >> ran.txt; cat {world.ssh_key}")
    hooks.rmdir()  # the placeholder vanished: bwrap cannot bind it and stops before the command
    done = _bash(world, wrapped)
    assert b"did not start the command; starting it again" in done.stderr
    assert (world.project / "ran.txt").read_text() == "x\n"
    assert SECRET.encode() not in done.stdout + done.stderr


def _unusable_probe(world: World) -> None:
    """Make the cached probe say no backend works here (as after bwrap was removed)."""
    from askgate.sandbox.runner import Probe, probe

    state = world.base / "xdg-data" / "askgate" / "sandbox"
    found = probe(str(state))
    broken = msgspec.structs.replace(
        found,
        backend="none",
        bwrap=msgspec.structs.replace(found.bwrap, usable=False, error="gone"),
        landlock_enforced=False,
    )
    (state / "probe.json").write_bytes(msgspec.json.encode(broken))
    assert isinstance(broken, Probe)


def test_required_never_runs_unsandboxed_when_the_prepared_sandbox_cannot_start(
    world: World,
) -> None:
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "required"\n')
    wrapped = world.prepared("touch ran.txt", mode="required")
    assert wrapped is not None
    # bwrap disappears between the hook's answer and the run.
    broken = wrapped.replace(shlex.quote(shlex.split(wrapped)[5]), "/nonexistent/bwrap", 1)
    assert broken != wrapped
    _unusable_probe(world)
    done = _bash(world, broken)
    assert done.returncode == 125
    assert b"never runs a command unsandboxed" in done.stderr
    assert not (world.project / "ran.txt").exists()


def test_the_hook_falls_back_to_the_launcher_form_without_bwrap(world: World) -> None:
    from askgate.sandbox.wrap import sandbox_rewrite

    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "required"\n')
    (world.base / "xdg-data" / "askgate" / "sandbox").mkdir(parents=True)
    _unusable_probe(world)
    rewrite = sandbox_rewrite(
        "Bash",
        {"command": "touch ran.txt"},
        cwd=str(world.project),
        config_files=[str(world.policy)],
        env=world.env,
        launcher=[sys.executable, "-m", "askgate"],
    )
    assert rewrite is not None and rewrite.updated_input is not None
    wrapped = rewrite.updated_input["command"]
    assert "/bwrap" not in wrapped and wrapped.endswith(" -- 'touch ran.txt'")
    done = _bash(world, wrapped)
    assert done.returncode == 125 and not (world.project / "ran.txt").exists()


def test_inherited_descriptors_are_closed(world: World) -> None:
    secret_fd = os.open(world.ssh_key, os.O_RDONLY)
    try:
        done = subprocess.run(
            ["/bin/bash", "-c", _prepared(world, f"cat <&{secret_fd}; cat /dev/fd/{secret_fd}")],
            capture_output=True,
            cwd=world.project,
            env=world.env,
            pass_fds=(secret_fd,),
            timeout=120,
        )
    finally:
        os.close(secret_fd)
    assert SECRET.encode() not in done.stdout + done.stderr
    assert b"Bad file descriptor" in done.stderr or b"No such file" in done.stderr


def test_run_from_another_directory_it_plans_again_for_that_directory(world: World) -> None:
    sub = world.project / "sub"
    sub.mkdir()
    wrapped = _prepared(world, f"pwd; cat {world.ssh_key}")
    done = _bash(world, wrapped, cwd=sub)
    assert done.stdout == f"{sub}\n".encode()  # the launcher form ran, in `sub`
    assert SECRET.encode() not in done.stdout + done.stderr


def test_the_registry_sweep_keeps_a_live_run(world: World) -> None:
    go = world.base / "go"  # the sandbox lives until the test has swept, however slow it is
    wrapped = _prepared(world, f"while [ ! -e {go} ]; do sleep 0.01; done")
    proc = subprocess.Popen(["/bin/bash", "-c", wrapped], cwd=world.project, env=world.env)
    try:
        (run_name,) = _runs(world)
        state = world.base / "xdg-data" / "askgate" / "sandbox"
        status = state / "runs" / run_name / "status"
        wait_until(
            lambda: status.exists() and b"child-pid" in status.read_bytes(),
            "the run's status to name its sandbox's pid",
            process=proc,
        )
        Registry(str(state)).sweep()
        assert _runs(world) == [run_name]  # its sandbox lives
    finally:
        go.touch()
        assert proc.wait(timeout=60) == 0
    Registry(str(state)).sweep()
    assert _runs(world) == []


# --- the daemon ------------------------------------------------------------------------------


def test_the_daemon_prepares_a_wrapper_the_client_can_run(world: World, tmp_path: Path) -> None:
    """The resident daemon answers Claude Code hooks too: the run it prepares lives in the
    client's own state directory (its env is forwarded), with absolute paths only."""
    import json
    import threading

    from askgate.daemon import relay
    from askgate.daemon.server import Daemon

    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    (world.project / "Makefile").write_text(f"ssh:\n\t@cat {world.ssh_key}\n")
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {**world.env, "ASKGATE_RUNTIME_DIR": str(runtime), "ASKGATE_DAEMON": "on"}
    daemon = Daemon(env, port=0)
    daemon.bind()
    thread = threading.Thread(target=daemon.serve_forever, daemon=True)
    thread.start()
    try:
        payload = {
            "session_id": "s1",
            "cwd": str(world.project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "make -s ssh; exit 3"},
            "tool_use_id": "toolu_1",
        }
        reply = relay.relay(json.dumps(payload).encode(), [str(world.policy)], env)
        assert not isinstance(reply, str), reply
        assert daemon.requests == 1
    finally:
        daemon.stopping.set()
        thread.join(timeout=30)
    out = json.loads(reply[1])["hookSpecificOutput"]
    wrapped = out["updatedInput"]["command"]
    assert "/bwrap " in wrapped and str(world.base / "xdg-data") in wrapped
    done = _bash(world, wrapped)
    assert done.returncode == 3
    assert SECRET.encode() not in done.stdout + done.stderr
    assert b"askgate sandbox: blocked reading " in done.stderr
    assert _runs(world) == []


# --- redirect placeholders (a missing read deny in a read-only HOME: no mount) -------------


def test_a_redirect_placeholder_hides_what_appears_and_puts_it_back() -> None:
    """~/.aws is missing and HOME is read-only inside: its placeholder is a symlink into
    the hidden holding directory. Credentials the user writes meanwhile are not readable
    inside, and once the run is over they sit at ~/.aws, a real directory again."""
    import shutil

    from unprivileged_rerun import outside_scratch_dir

    require_bwrap()
    base = Path(outside_scratch_dir("askgate-redirect-"))
    try:
        world = World(base, mode="hook")
        aws = world.home / ".aws"
        world.sweep()
        assert not os.path.lexists(aws)
        wrapped = _prepared(world, "cat ~/.aws/credentials; ls -a ~/.aws; echo done")
        assert aws.is_symlink(), "expected a redirect placeholder, not a mount"
        (aws / "credentials").write_text("aws_secret_access_key=redirected-77\n")  # meanwhile
        run = _bash(world, wrapped)
        assert b"redirected-77" not in run.stdout + run.stderr
        assert b"done" in run.stdout, run
        world.sweep()
        assert not aws.is_symlink() and aws.is_dir()
        assert (aws / "credentials").read_text() == "aws_secret_access_key=redirected-77\n"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_mount_below_another_placeholder_does_not_break_bwrap(tmp_path: Path) -> None:
    """A mask whose target lies below another entry's directory placeholder is covered
    by it: bwrap must not be asked to create it inside a read-only mount."""
    from askgate.sandbox.bwrap import bwrap_argv
    from askgate.sandbox.plan import PlanEntry, SandboxPlan, _outermost

    require_bwrap()
    project, cfg = tmp_path / "proj", tmp_path / "home" / ".cfg"
    project.mkdir()
    cfg.mkdir(parents=True)
    empty = tmp_path / "empty"
    empty.write_text("")
    outer = PlanEntry(
        path=f"{cfg}/a/b", kind="missing", why="r", pattern="x/**", placeholder=str(cfg)
    )
    inner = PlanEntry(path=f"{cfg}/gh", kind="missing", why="r", placeholder=f"{cfg}/gh")
    denies = _outermost([inner, outer])
    assert denies == [outer]
    plan = SandboxPlan(
        cwd=str(project), project_root=str(project), mode="on", network=False,
        hard_links="warn", writable=(PlanEntry(path=str(project), kind="dir", why="root"),),
        write_holes=(), read_denies=(outer, inner),
    )  # fmt: skip
    argv = bwrap_argv(plan, ["/bin/true"], bwrap="bwrap", empty_file=str(empty))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_run_that_cannot_be_recorded_is_an_ask_and_leaves_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot of the watched directories cannot be written (a full disk): the
    hook asks about the command instead of handing out a wrapper that could not check."""
    from askgate.sandbox import prepared
    from askgate.sandbox.wrap import sandbox_rewrite

    def full_disk(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    monkeypatch.setattr(prepared, "_record_watched", full_disk)
    rewrite = sandbox_rewrite(
        "Bash",
        {"command": "touch ran.txt"},
        cwd=str(world.project),
        config_files=[str(world.policy)],
        env=world.env,
        launcher=[sys.executable, "-m", "askgate"],
    )
    assert rewrite is not None and rewrite.updated_input is None
    assert rewrite.ask_reason is not None and "No space left" in rewrite.ask_reason
    assert _runs(world) == []

"""`askgate sandbox` against the real kernel and real programs (bubblewrap backend).

Policy: default allow, read deny `~/.ssh/**` and `**/.env*`, write deny `guarded/**`.
Every test asserts what the program could (not) do: the secret never reaches the output,
files never appear on the host, and the exit status is the program's own.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_world import ENV_SECRET, SECRET, World, require_bwrap
from waits import wait_until

pytestmark = pytest.mark.usefixtures("bwrap_available")


@pytest.fixture(scope="module")
def bwrap_available() -> None:
    require_bwrap()


@pytest.fixture(params=["cli", "hook"])
def world(tmp_path: Path, request: pytest.FixtureRequest) -> World:
    """Every test runs through `askgate sandbox --` and through the wrapper a hook
    prepares (where the test's form applies to it)."""
    return World(tmp_path, mode=request.param)


@pytest.fixture
def cli_world(tmp_path: Path) -> World:
    """For forms only `askgate sandbox` has (its options, a program with arguments)."""
    return World(tmp_path, mode="cli")


def _no_secret(run: object) -> None:
    text = str(run)
    assert SECRET not in text
    assert "hunter2" not in text


PY = sys.executable


def test_python_reading_the_ssh_key_finds_no_key(world: World) -> None:
    # A hidden directory reads as an empty one: the key is simply not there.
    run = world.sandbox(f"{PY} -c \"print(open('{world.ssh_key}').read())\"")
    assert run.returncode == 1, run
    assert "FileNotFoundError" in run.stderr
    _no_secret(run)
    # One line names the path and the rule that hid it.
    assert f"askgate sandbox: blocked reading {world.ssh_key}" in run.stderr
    assert '"~/.ssh/**" = deny' in run.stderr


def test_python_reading_a_dotenv_file_reads_it_as_empty(world: World) -> None:
    run = world.sandbox(f"{PY} -c \"print(repr(open('.env').read()))\"")
    assert run.returncode == 0, run
    assert run.stdout == "''\n"
    _no_secret(run)


def test_a_recursive_grep_and_git_status_go_on_past_hidden_files(world: World) -> None:
    """Hidden reads as empty, not as an error: `grep -r` does not exit 2 and a tracked
    hidden file does not make `git status` exit 128 (it shows as modified)."""
    world.outside("git add -f .env && git -c user.name=t -c user.email=t@t commit -qm env")
    (world.project / "notes.txt").write_text("hunter is a word\n")
    run = world.sandbox("grep -r hunter . ; echo grep=$?; git status --porcelain; echo git=$?")
    assert "./notes.txt:hunter is a word" in run.stdout
    assert "grep=0" in run.stdout and "git=0" in run.stdout, run
    assert " M .env" in run.stdout
    assert "hunter2" not in run.stdout


def test_nested_dotenv_files_are_hidden_too(world: World) -> None:
    nested = world.project / "services" / "api"
    nested.mkdir(parents=True)
    (nested / ".env.production").write_text(ENV_SECRET)
    run = world.sandbox("cat services/api/.env.production")
    assert run.returncode == 0, run
    assert run.stdout == ""
    _no_secret(run)


def test_python_writing_the_guarded_directory_fails(world: World) -> None:
    target = world.guarded / "new.txt"
    run = world.sandbox(f"{PY} -c \"open('{target}', 'w').write('x')\"")
    assert run.returncode == 1, run
    assert "Read-only file system" in run.stderr
    assert not target.exists()
    assert "blocked writing" in run.stderr and '"guarded/**" = deny' in run.stderr
    run = world.sandbox("echo changed > guarded/existing.txt; rm guarded/existing.txt")
    assert run.returncode != 0
    assert (world.guarded / "existing.txt").read_text() == "frozen\n"


def test_writes_inside_the_project_succeed(world: World) -> None:
    run = world.sandbox("echo hi > out.txt && mkdir -p build/x && cp out.txt build/x/ && echo done")
    assert run.returncode == 0, run
    assert run.stdout == "done\n"
    assert (world.project / "build" / "x" / "out.txt").read_text() == "hi\n"


def test_writes_outside_the_writable_roots_fail(world: World) -> None:
    outside = Path("/opt") / f"askgate-sandbox-test-{os.getpid()}"
    run = world.sandbox(f"echo x > {outside}")
    assert run.returncode != 0
    assert "Read-only file system" in run.stderr
    assert not outside.exists()
    assert f"blocked writing {outside}: outside the writable directories" in run.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_makefile_recipe_is_stopped_by_the_kernel(world: World) -> None:
    (world.project / "Makefile").write_text(
        f"ssh:\n\tcat {world.ssh_key}\n"
        "env:\n\tcat .env\n"
        "guard:\n\techo x > guarded/made.txt\n"
        "ok:\n\techo fine > made.txt\n"
    )
    run = world.sandbox("make -k ssh env guard ok")
    assert run.returncode == 2, run  # make: some targets failed
    assert "No such file or directory" in run.stderr  # ~/.ssh reads as empty
    assert "Read-only file system" in run.stderr
    _no_secret(run)
    assert not (world.guarded / "made.txt").exists()
    assert (world.project / "made.txt").read_text() == "fine\n"


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_an_npm_script_is_stopped_by_the_kernel(world: World) -> None:
    scripts = {
        "ssh": f"node -e \"console.log(require('fs').readFileSync('{world.ssh_key}', 'utf8'))\"",
        "env": "node -e \"console.log(require('fs').readFileSync('.env', 'utf8'))\"",
        "guard": "node -e \"require('fs').writeFileSync('guarded/npm.txt', 'x')\"",
    }
    (world.project / "package.json").write_text(json.dumps({"name": "t", "scripts": scripts}))
    results = []
    for name in scripts:
        run = world.sandbox(f"npm run --silent {name}")
        results.append(run)
        _no_secret(run)
    assert results[0].returncode != 0 and "ENOENT" in results[0].stderr  # ~/.ssh is empty
    assert results[1].returncode == 0 and results[1].stdout.strip() == ""  # .env is empty
    assert results[2].returncode != 0 and "EROFS" in results[2].stderr
    assert not (world.guarded / "npm.txt").exists()


def test_git_status_behaves_as_outside(world: World) -> None:
    (world.project / "tracked.txt").write_text("a\n")
    world.outside("git add tracked.txt && git -c user.name=t -c user.email=t@t commit -qm one")
    (world.project / "tracked.txt").write_text("b\n")
    command = "git status --porcelain=v1 --untracked-files=all; git diff --stat"
    inside, outside = world.sandbox(command), world.outside(command)
    assert inside.returncode == outside.returncode == 0, inside
    assert inside.stdout == outside.stdout
    assert " M tracked.txt" in inside.stdout


def test_pytest_on_a_small_project_behaves_as_outside(world: World) -> None:
    (world.project / "test_small.py").write_text(
        "def test_add():\n    assert 1 + 1 == 2\n\ndef test_tmp(tmp_path):\n"
        "    (tmp_path / 'f').write_text('x')\n"
    )
    command = f"{PY} -m pytest -q -p no:cacheprovider test_small.py"
    inside, outside = world.sandbox(command), world.outside(command)
    assert inside.returncode == outside.returncode == 0, inside
    assert "2 passed" in inside.stdout and "2 passed" in outside.stdout


def test_pipelines_and_redirects_behave_as_outside(world: World) -> None:
    command = (
        "printf 'b\\na\\nc\\n' | sort > sorted.txt; cat sorted.txt | wc -l; "
        "ls nope 2>&1 >/dev/null | tr a-z A-Z; echo $? ${PIPESTATUS[@]}; "
        "{ echo out; echo err >&2; } 2>&1 | cat -n; exit 3"
    )
    inside, outside = world.sandbox(command), world.outside(command)
    assert inside.returncode == outside.returncode == 3
    assert inside.stdout == outside.stdout
    assert (world.project / "sorted.txt").read_text() == "a\nb\nc\n"


def test_several_arguments_run_as_a_program_without_a_shell(cli_world: World) -> None:
    run = cli_world.sandbox("printf", "%s|", "a b", "$HOME", ";")
    assert run.returncode == 0, run
    assert run.stdout == "a b|$HOME|;|"


def test_exit_status_and_signals_pass_through(world: World) -> None:
    assert world.sandbox("exit 7").returncode == 7
    assert world.sandbox("kill -TERM $$").returncode == 128 + 15


def test_masks_hold_when_running_as_root(world: World) -> None:
    if os.getuid() != 0:
        pytest.skip("the root case needs root")
    command = (
        f"id -u; umount {world.home}/.ssh; umount .env; umount -l {world.home}/.ssh; "
        f"mount -t tmpfs none {world.home}/.ssh; chmod 755 {world.home}/.ssh; "
        f"cat {world.ssh_key}; cat .env; "
        f"unshare -Urm sh -c 'umount {world.home}/.ssh; cat {world.ssh_key}'; "
        "cat /proc/self/status | grep CapEff"
    )
    run = world.sandbox(command)
    assert run.stdout.startswith("0\n"), run  # uid 0 inside…
    assert "CapEff:\t0000000000000000" in run.stdout  # …without capabilities
    assert "must be superuser to unmount" in run.stderr or "Operation not permitted" in run.stderr
    _no_secret(run)


def test_proc_of_the_parent_does_not_reach_the_secret(world: World) -> None:
    parent = os.getpid()
    rel = str(world.ssh_key).lstrip("/")
    command = (
        f"cat /proc/{parent}/root/{rel}; cat /proc/1/root/{rel}; "
        f"for p in /proc/[0-9]*; do cat $p/root/{rel} 2>/dev/null; done; "
        f"ls /proc/{parent}/fd; true"
    )
    run = world.sandbox(command)
    _no_secret(run)
    assert run.returncode == 0


def test_inherited_descriptors_do_not_reach_the_secret(world: World) -> None:
    secret_fd = os.open(world.ssh_key, os.O_RDONLY)
    env_fd = os.open(world.env_file, os.O_RDONLY)
    try:
        command = (
            f"cat <&{secret_fd}; cat /proc/self/fd/{secret_fd}; cat /dev/fd/{env_fd}; "
            f"{PY} -c 'import os; print(os.read({secret_fd}, 100))'; "
            "ls /proc/self/fd | wc -l"
        )
        run = world.sandbox(command, pass_fds=(secret_fd, env_fd))
    finally:
        os.close(secret_fd)
        os.close(env_fd)
    _no_secret(run)
    assert "Bad file descriptor" in run.stderr


def _installed(*programs: str) -> None:
    missing = [p for p in programs if shutil.which(p) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")


@pytest.mark.parametrize(
    ("program", "command"),
    [
        ("openssl", "openssl rand -out {dir}/w.txt -hex 4"),
        ("git", "git diff --no-index --output={dir}/w.txt /dev/null Makefile.absent"),
        ("sqlite3", "printf '.output {dir}/w.txt\\nselect 42;\\n' | sqlite3 :memory:"),
        ("awk", "awk 'BEGIN {{ print 1 > \"{dir}/w.txt\" }}'"),
        ("perl", 'perl -e \'open(my $f, ">", "{dir}/w.txt") or die "$!\\n"; print $f 1\''),
    ],
)
def test_programs_writing_through_their_own_options_are_stopped(
    world: World, program: str, command: str
) -> None:
    _installed(program)
    run = world.sandbox(command.format(dir="guarded"))
    assert not (world.guarded / "w.txt").exists(), run
    # The same command writing into the project works: only the rule stopped it.
    (world.project / "open").mkdir()
    world.sandbox(command.format(dir="open"))
    assert (world.project / "open" / "w.txt").exists()


@pytest.mark.parametrize(
    "command",
    [
        "openssl enc -base64 -in {key}",
        "awk '{{ print }}' {key}",
        "perl -ne print {key}",
        "sqlite3 :memory: \"select readfile('{key}')\"",
        "git hash-object {key}",
    ],
)
def test_programs_reading_through_their_own_options_are_stopped(world: World, command: str) -> None:
    _installed(command.split()[0])
    run = world.sandbox(command.format(key=world.ssh_key))
    _no_secret(run)
    assert "U1NILVBSSVZBVEU" not in run.stdout  # base64 of the secret's start


def test_git_config_and_hooks_are_read_only(world: World) -> None:
    config = (world.project / ".git" / "config").read_text()
    run = world.sandbox(
        "git config core.pager 'sh -c evil'; echo x >> .git/config; "
        "echo '#!/bin/sh' > .git/hooks/pre-commit; echo ok > .git/description"
    )
    assert (world.project / ".git" / "config").read_text() == config
    assert not (world.project / ".git" / "hooks" / "pre-commit").exists()
    assert (world.project / ".git" / "description").read_text() == "ok\n", run


def test_askgate_state_is_read_only_and_missing_state_gets_no_ghost(world: World) -> None:
    run = world.sandbox(
        "mkdir -p .askgate && echo 'default = \"allow\"' > .askgate/policy.toml; "
        f"mkdir -p {world.base}/xdg-config/askgate; ls -a .git/hooks | wc -l"
    )
    assert run.returncode == 0, run
    assert not (world.project / ".askgate" / "policy.toml").exists()
    # The placeholders (.askgate, ~/.config/askgate, …) are gone after the run (a
    # successful prepared run leaves them to the next askgate process: a sweep).
    world.sweep()
    assert not (world.project / ".askgate").exists()
    assert not (world.base / "xdg-config" / "askgate").exists()


def test_network_off_cuts_the_loopback_of_the_host(world: World) -> None:
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nnetwork = "off"\n')
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"
        run = world.sandbox(f'{PY} -c "{probe}"')
    assert run.returncode == 1
    assert "ConnectionRefusedError" in run.stderr or "OSError" in run.stderr, run


def test_a_denied_path_through_a_writable_symlink_is_refused(world: World) -> None:
    real = world.base / "keys-real" / "ssh"
    real.mkdir(parents=True)
    (real / "id").write_text(SECRET)
    (world.home / "keys").symlink_to(real.parent)
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nhidden = ["~/keys/ssh/**"]\n')
    run = world.sandbox("touch ran.txt")
    assert run.returncode == 125, run
    assert "passes through the symlink" in run.stderr
    assert not (world.project / "ran.txt").exists()


def test_a_hidden_file_with_other_hard_links_warns_or_refuses(world: World) -> None:
    os.link(world.env_file, world.base / "env-link")
    run = world.sandbox("touch ran.txt")
    assert run.returncode == 0
    assert "other hard link" in run.stderr
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nhard_links = "refuse"\n')
    (world.project / "ran.txt").unlink()
    run = world.sandbox("touch ran.txt")
    assert run.returncode == 125
    assert not (world.project / "ran.txt").exists()


def test_required_mode_never_runs_unsandboxed(cli_world: World) -> None:
    run = cli_world.sandbox("touch ran.txt", options=("--backend", "none", "--required"))
    assert run.returncode == 125
    assert "never runs a command unsandboxed" in run.stderr
    assert not (cli_world.project / "ran.txt").exists()
    cli_world.policy.write_text(cli_world.policy.read_text() + '\n[sandbox]\nbash = "required"\n')
    run = cli_world.sandbox("touch ran.txt", options=("--backend", "none"))
    assert run.returncode == 125
    assert not (cli_world.project / "ran.txt").exists()


def test_on_mode_without_a_backend_runs_with_a_warning(cli_world: World) -> None:
    run = cli_world.sandbox("touch ran.txt", options=("--backend", "none"))
    assert run.returncode == 0
    assert "running WITHOUT a sandbox" in run.stderr
    assert (cli_world.project / "ran.txt").exists()


def test_a_broken_policy_refuses_to_start(world: World) -> None:
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "maybe"\n')
    run = world.sandbox("touch ran.txt")
    assert run.returncode == 125
    assert "policy.toml:11: sandbox.bash" in run.stderr
    assert not (world.project / "ran.txt").exists()


def test_placeholders_stay_while_another_sandbox_uses_them(world: World) -> None:
    hooks = world.project / ".git" / "hooks"
    shutil.rmtree(hooks)
    started, go = world.base / "a-started", world.base / "go"
    argv = [sys.executable, "-m", "askgate.cli", "sandbox", "--config", str(world.policy), "--"]
    first = subprocess.Popen(
        [
            *argv,
            f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; "
            "echo x > .git/hooks/pre-commit; ls -d .git/hooks",
        ],
        cwd=world.project,
        env=world.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(started.exists, "the first sandbox to start", process=first)
        assert hooks.is_dir()  # the placeholder of the first run
        second = world.sandbox("echo second")
        assert second.returncode == 0 and second.stdout == "second\n"
        assert hooks.is_dir()  # the second run did not remove the first run's mount point
        go.touch()
        out, err = first.communicate(timeout=120)
    finally:
        first.kill()
        first.wait()
    assert b"Read-only file system" in err
    assert out == b".git/hooks\n"
    assert not (hooks / "pre-commit").exists()
    assert not hooks.exists()  # removed once nobody uses it


def test_probe_reports_backend_bwrap_version_and_landlock_abi(world: World) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "sandbox", "--probe", "--json"],
        capture_output=True,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["backend"] == "bwrap"
    assert data["bwrap"]["version"] and data["bwrap"]["usable"] is True
    assert isinstance(data["landlock_abi"], int)
    assert data["landlock_enforced"] is (data["landlock_abi"] >= 1)


def test_plan_shows_roots_holes_and_hidden_paths(world: World) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "askgate.cli",
            "sandbox",
            "--config",
            str(world.policy),
            "--plan",
            "--json",
            "--cwd",
            str(world.project),
        ],
        capture_output=True,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    hidden = {entry["path"] for entry in plan["read_denies"]}
    assert {str(world.home / ".ssh"), str(world.env_file)} <= hidden
    holes = {entry["path"] for entry in plan["write_holes"]}
    assert {str(world.guarded), str(world.project / ".git" / "config")} <= holes
    assert str(world.project) in {entry["path"] for entry in plan["writable"]}


def test_a_bwrap_setup_failure_exits_125_without_running_the_command(world: World) -> None:
    from askgate.sandbox.placeholders import Registry
    from askgate.sandbox.plan import PlanEntry, SandboxPlan
    from askgate.sandbox.runner import EXIT_REFUSED, run_sandboxed

    marker = world.project / "ran.txt"
    plan = SandboxPlan(
        cwd=str(world.project),
        project_root=str(world.project),
        mode="on",
        network=True,
        hard_links="warn",
        writable=(PlanEntry(path=str(world.base / "vanished"), kind="dir", why="test"),),
        write_holes=(),
        read_denies=(),
    )
    registry = Registry(str(world.base / "state"))
    status = run_sandboxed(
        plan, ["/bin/bash", "-c", f"touch {marker}"], env=world.env, registry=registry
    )
    assert status == EXIT_REFUSED
    assert not marker.exists()


def test_a_nested_write_allow_stays_writable_inside_a_denied_directory(world: World) -> None:
    (world.guarded / "tmp").mkdir()
    world.policy.write_text(world.policy.read_text() + '"guarded/tmp/**" = "allow"\n')
    run = world.sandbox("echo a > guarded/tmp/ok.txt; echo b > guarded/no.txt")
    assert (world.guarded / "tmp" / "ok.txt").read_text() == "a\n", run
    assert not (world.guarded / "no.txt").exists()


def test_an_agent_denied_every_write_cannot_write_the_project(cli_world: World) -> None:
    cli_world.policy.write_text(
        cli_world.policy.read_text() + '\n[agent.reviewer.write]\n"**" = "deny"\n'
    )
    run = cli_world.sandbox("touch ran.txt", options=("--agent", "reviewer"))
    assert run.returncode == 1 and "Read-only file system" in run.stderr
    assert not (cli_world.project / "ran.txt").exists()
    assert cli_world.sandbox("touch ran.txt").returncode == 0  # other agents still can


def test_links_made_before_or_inside_the_sandbox_do_not_reach_the_secret(world: World) -> None:
    (world.project / "key-link").symlink_to(world.ssh_key)
    (world.project / "env-link").symlink_to(world.env_file)
    run = world.sandbox(
        f"cat key-link; cat env-link; ln -s {world.ssh_key} fresh; cat fresh; "
        "ln .env hard; cat hard; cp .env copy; cat copy; mv .env moved"
    )
    _no_secret(run)
    assert "Device or resource busy" in run.stderr  # the masked .env cannot be moved
    assert world.env_file.read_text().startswith("DATABASE_PASSWORD")

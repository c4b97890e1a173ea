"""Wrapping an allowed command as `askgate sandbox -- <command>`, and the Claude Code hook's
`updatedInput`.

The corpus test runs every wrapped command through a real bash with a launcher that prints
the arguments it receives, so it proves the last argument — what `askgate sandbox` hands
to `bash -c` — is byte for byte the original.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.sandbox.wrap import sandbox_rewrite, wrap_command
from data.bash_corpus import GROUPS
from sandbox_world import SECRET, World, require_bwrap

CORPUS = [case.command for cases in GROUPS.values() for case in cases]
PRINT_ARGS = ["printf", "%s\\0"]  # the launcher: prints each argument NUL-terminated
EXTRA = [
    "echo 'it'\"'\"'s' $HOME `id -u` $(pwd) \\\n && printf '%s\\n' \"$@\"",
    "cat <<'EOF'\n$HOME 'q' \"d\"\nEOF\n",
    "echo ünïcødé ☃ '\t' \"\\n\" ; :",
    "'" * 7 + '"' * 3 + "\\" * 5,
    "-c",
    "--",
    "  leading and trailing spaces  ",
]


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _received(wrapped: str) -> list[bytes]:
    done = subprocess.run(["/bin/bash", "-c", wrapped], capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split(b"\0")[:-1]


def test_the_corpus_reaches_bash_byte_for_byte() -> None:
    carried = [c for c in [*CORPUS, *EXTRA] if "\x00" not in c and _utf8(c)]
    assert len(carried) > 400
    for refused in set(CORPUS) - set(carried):  # NUL or undecodable: no shell word holds it
        with pytest.raises(ValueError):
            wrap_command(refused)
    # One bash run for all: each wrapped command on its own, separated by a marker call.
    script = "\n".join(
        wrap_command(c, launcher=PRINT_ARGS) + "\nprintf '%s\\0' ---END---" for c in carried
    )
    done = subprocess.run(["/bin/bash", "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr[:500]
    chunks = done.stdout.split(b"---END---\0")[:-1]
    assert len(chunks) == len(carried)
    for command, chunk in zip(carried, chunks, strict=True):
        words = chunk.split(b"\0")[:-1]
        assert words[:2] == [b"sandbox", b"--"]
        assert words[2:] == [command.encode()], command


def test_options_are_quoted_and_a_nul_byte_cannot_be_wrapped(tmp_path: Path) -> None:
    config = tmp_path / "a b'c.toml"
    wrapped = wrap_command("ls", launcher=PRINT_ARGS, agent="rev", config_files=[str(config)])
    assert _received(wrapped) == [
        b"sandbox",
        b"--agent",
        b"rev",
        b"--config",
        str(config).encode(),
        b"--",
        b"ls",
    ]
    with pytest.raises(ValueError, match="NUL"):
        wrap_command("echo a\x00b")
    with pytest.raises(ValueError, match="UTF-8"):
        wrap_command("echo \udcff")


def test_the_real_sandbox_runs_the_original_string(tmp_path: Path) -> None:
    require_bwrap()
    world = World(tmp_path)
    originals = [
        'echo "a  b" \'$HOME\'; printf "[%s]" "$BASH_EXECUTION_STRING"',
        'printf \'[%s]\' "$BASH_EXECUTION_STRING" # it\'s \\ "odd"',
    ]
    launcher = [sys.executable, "-m", "askgate"]
    for original in originals:
        wrapped = wrap_command(original, launcher=launcher, config_files=[str(world.policy)])
        done = subprocess.run(
            ["/bin/bash", "-c", wrapped],
            capture_output=True,
            cwd=world.project,
            env=world.env,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().endswith(f"[{original}]")


# --- the Claude Code hook ----------------------------------------------------------


def _hook(world: World, tool: str = "Bash", **tool_input: object) -> dict:
    payload = {
        "session_id": "s1",
        "cwd": str(world.project),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "hook", "claude-code", "--config", str(world.policy)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]


def test_the_hook_returns_the_wrapped_command_and_it_runs_sandboxed(tmp_path: Path) -> None:
    require_bwrap()
    world = World(tmp_path)
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    # make is opaque to the policy (it allows it); only the kernel sees the recipe's read.
    (world.project / "Makefile").write_text(f"ssh:\n\t@cat {world.ssh_key}\n")
    command = "make -s ssh; echo done"
    out = _hook(world, command=command, description="read it", timeout=5000)
    assert out["permissionDecision"] == "allow"
    updated = out["updatedInput"]
    assert updated["description"] == "read it" and updated["timeout"] == 5000
    # The prepared wrapper: bwrap's argv ends in the original, byte for byte.
    assert updated["command"].endswith(" -- /bin/bash -c " + "'" + command + "'")
    assert " sandbox --finish " in updated["command"] and "/bwrap " in updated["command"]
    done = subprocess.run(
        ["/bin/bash", "-c", updated["command"]],
        capture_output=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert done.stdout == b"done\n"
    assert SECRET.encode() not in done.stdout + done.stderr
    assert b"No such file or directory" in done.stderr  # ~/.ssh reads as an empty directory


def test_the_hook_leaves_input_alone_when_the_sandbox_is_off_or_not_a_shell(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    out = _hook(world, command="echo hi")
    assert out["permissionDecision"] == "allow" and "updatedInput" not in out
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "required"\n')
    out = _hook(world, "Write", file_path=str(world.project / "a.txt"), content="x")
    assert out["permissionDecision"] == "allow" and "updatedInput" not in out


def test_the_hook_asks_when_the_sandbox_would_refuse(tmp_path: Path) -> None:
    world = World(tmp_path)
    real = world.base / "real" / "ssh"
    real.mkdir(parents=True)
    (world.project / "keys").symlink_to(real.parent)
    world.policy.write_text(
        world.policy.read_text() + '\n[sandbox]\nbash = "on"\nhidden = ["keys/ssh/**"]\n'
    )
    out = _hook(world, command="echo hi")
    assert out["permissionDecision"] == "ask"
    assert "passes through the symlink" in out["permissionDecisionReason"]


def test_sandbox_rewrite_only_touches_shell_tools(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    common = {"cwd": str(world.project), "config_files": [str(world.policy)], "env": world.env}
    assert sandbox_rewrite("Read", {"file_path": "/x"}, **common) is None  # type: ignore[arg-type]
    assert sandbox_rewrite("Bash", {"command": "  "}, **common) is None  # type: ignore[arg-type]
    rewrite = sandbox_rewrite(
        "Bash",
        {"command": "ls"},
        launcher=["ag"],
        prepared=False,
        **common,  # type: ignore[arg-type]
    )
    assert rewrite is not None and rewrite.updated_input is not None
    assert rewrite.updated_input["command"] == f"ag sandbox --config {world.policy} -- ls"


def test_explain_mentions_the_sandbox_when_it_is_on(tmp_path: Path) -> None:
    world = World(tmp_path)
    argv = [sys.executable, "-m", "askgate.cli", "explain", "--config", str(world.policy)]
    off = subprocess.run([*argv, "bash", "ls"], capture_output=True, env=world.env, timeout=60)
    assert off.returncode == 0 and b"sandbox:" not in off.stdout
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "required"\n')
    on = subprocess.run([*argv, "bash", "ls"], capture_output=True, env=world.env, timeout=60)
    assert on.returncode == 0
    assert b"sandbox: bash = 'required'" in on.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a command after '--'"),
        (("--backend", "docker", "--", "true"), "invalid choice: 'docker'"),
        (("--agent", "bad name", "--", "true"), "--agent: an agent name"),
        (("--config", "/nonexistent/policy.toml", "--", "true"), "no such file"),
        (("--cwd", "/nonexistent-dir", "--plan"), "is not a directory"),
        (("--plan", "--probe"), "not allowed with argument"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    world = World(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "sandbox", *args],
        capture_output=True,
        cwd=world.project,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 2, done
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("askgate sandbox: error: ")
    assert message in lines[0]
    assert b"Traceback" not in done.stderr


# --- Codex and Gemini hooks ------------------------------------------------------------------


def _agent_hook(world: World, agent: str, payload: dict) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "askgate.cli", "hook", agent, "--config", str(world.policy)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=world.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _codex(world: World, command: str) -> bytes:
    payload = {
        "session_id": "s1",
        "turn_id": "t1",
        "transcript_path": None,
        "cwd": str(world.project),
        "hook_event_name": "PreToolUse",
        "model": "m",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "call_1",
    }
    return _agent_hook(world, "codex", payload)


def _gemini(world: World, command: str) -> dict:
    payload = {
        "session_id": "s1",
        "transcript_path": "/dev/null",
        "cwd": str(world.project),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-01T00:00:00Z",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command},
    }
    return json.loads(_agent_hook(world, "gemini", payload))


def _runs_sandboxed(world: World, wrapped: str, command: str) -> None:
    assert wrapped.endswith(" -- /bin/bash -c '" + command + "'") and "/bwrap " in wrapped
    done = subprocess.run(
        ["/bin/bash", "-c", wrapped], capture_output=True, cwd=world.project, env=world.env,
        timeout=60,
    )  # fmt: skip
    assert done.stdout == b"done\n"
    assert SECRET.encode() not in done.stdout + done.stderr
    assert b"No such file or directory" in done.stderr  # ~/.ssh reads as an empty directory


def test_codex_pre_tool_use_rewrites_an_allowed_command_into_the_sandbox(tmp_path: Path) -> None:
    require_bwrap()
    world = World(tmp_path)
    assert _codex(world, "echo hi") == b"", "sandbox off: silence, Codex's own flow goes on"
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    (world.project / "Makefile").write_text(f"ssh:\n\t@cat {world.ssh_key}\n")
    command = "make -s ssh; echo done"
    out = json.loads(_codex(world, command))["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow", "Codex accepts allow only with updatedInput"
    _runs_sandboxed(world, out["updatedInput"]["command"], command)


def test_codex_denies_when_the_sandbox_would_refuse(tmp_path: Path) -> None:
    world = World(tmp_path)
    (world.base / "real" / "ssh").mkdir(parents=True)
    (world.project / "keys").symlink_to(world.base / "real")
    world.policy.write_text(
        world.policy.read_text() + '\n[sandbox]\nbash = "on"\nhidden = ["keys/ssh/**"]\n'
    )
    out = json.loads(_codex(world, "echo hi"))["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny", "PreToolUse cannot ask: refusing is the safe side"
    assert "passes through the symlink" in out["permissionDecisionReason"]


def test_gemini_before_tool_rewrites_an_allowed_command_into_the_sandbox(tmp_path: Path) -> None:
    require_bwrap()
    world = World(tmp_path)
    assert "hookSpecificOutput" not in _gemini(world, "echo hi")
    world.policy.write_text(world.policy.read_text() + '\n[sandbox]\nbash = "on"\n')
    (world.project / "Makefile").write_text(f"ssh:\n\t@cat {world.ssh_key}\n")
    command = "make -s ssh; echo done"
    out = _gemini(world, command)
    assert out["decision"] == "allow"
    _runs_sandboxed(world, out["hookSpecificOutput"]["tool_input"]["command"], command)

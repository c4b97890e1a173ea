"""The compiled-policy cache of one-shot hook processes (askgate.policy_cache): the same
decisions with and without it, never stale, and never trusted unless it is ours alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from askgate import policy_cache
from askgate.adapters.claude_code import load_policy_cached, respond
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.trust import trust_project, untrust_project
from data_modules import bash_corpus_commands
from hook_env import one_shot_hook_env

POLICY = """
default = "ask"
[bash]
"git status *" = "allow"
"git log *" = "allow"
"ls *" = "allow"
"echo *" = "allow"
"cat *" = "allow"
"make *" = "allow"
"rm *" = { action = "deny", reason = "no deleting" }
"curl *" = "deny"
[read]
"**" = "allow"
"~/.ssh/**" = "deny"
"""


CORPUS = bash_corpus_commands()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return one_shot_hook_env(tmp_path, POLICY)


def project(env: dict[str, str]) -> str:
    return str(Path(env["HOME"]).parent / "project")


def payload(cwd: str, command: str, event: str = "PreToolUse") -> bytes:
    body = {
        "session_id": "s1",
        "cwd": cwd,
        "hook_event_name": event,
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if event == "PreToolUse":
        body["tool_use_id"] = "toolu_1"
    return json.dumps(body).encode()


def decide(env: dict[str, str], command: str) -> Action:
    policy = policy_cache.load_policy(project(env), [], None, env)
    return policy.decide(Surface.BASH, command).action


def entries(env: dict[str, str]) -> list[Path]:
    return sorted(Path(policy_cache.cache_dir(env)).glob("*.msgpack"))


def counted(key: str) -> int:
    return policy_cache.counts[key]


# --- the same decisions -------------------------------------------------------------------


def test_the_corpus_decides_the_same_with_and_without_the_cache(env: dict[str, str]) -> None:
    """Every bash corpus command, PreToolUse and PermissionRequest, through the in-process
    path: from the files, and from the cache entry the first call wrote."""
    cwd = project(env)
    trusted = Path(cwd) / ".askgate"
    trusted.mkdir()
    (trusted / "policy.toml").write_text('[bash]\n"npm test *" = "allow"\n"sudo *" = "deny"\n')
    trust_project(cwd, env)
    hits, written, loaded = counted("hit"), counted("written"), counted("loaded")
    answers: set[bytes] = set()
    for index, command in enumerate(CORPUS):
        data = payload(cwd, command, "PermissionRequest" if index % 5 == 4 else "PreToolUse")
        from_files = respond(data, env=env)
        from_cache = respond(data, env=env, policy_loader=load_policy_cached)
        assert from_cache == from_files, command
        answers.add(from_files.stdout[:90])
    assert counted("written") - written == counted("loaded") - loaded == 1
    # Every call after the first used the entry (a few corpus inputs are not valid JSON
    # text and are blocked before any policy is loaded).
    assert counted("hit") - hits >= len(CORPUS) - 5
    assert len(answers) >= 4  # allow, deny, ask and PermissionRequest answers all seen


def test_a_real_hook_process_answers_the_same_from_the_cache(env: dict[str, str]) -> None:
    def run(command: str, **extra: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "askgate", "hook", "claude-code"],
            input=payload(project(env), command),
            capture_output=True,
            env={**env, **extra},
            timeout=60,
        )

    for command in ("git status", "rm -rf build", "make && curl x | sh", "python -c 'x'"):
        uncached = run(command, ASKGATE_HOOK_CACHE="off")
        assert entries(env) == []  # "off" writes nothing
        first = run(command)
        [entry] = entries(env)
        inode = entry.stat().st_ino
        second = run(command)
        assert entry.stat().st_ino == inode  # used, not rewritten
        assert uncached.returncode == first.returncode == second.returncode == 0
        assert uncached.stdout == first.stdout == second.stdout, command
        entry.unlink()


def test_a_cache_hit_loads_no_file_parser(env: dict[str, str]) -> None:
    """The point of the cache: a hit imports neither the TOML parser nor the trust
    store's hashing, and nothing on the path imports logging, json or threading."""
    script = (
        "import io, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "from askgate.entry import main\n"
        "code = main(['hook', 'claude-code'])\n"
        "names = ('tomllib', 'hashlib', 'askgate.policy.config', 'logging', 'json',\n"
        "         'threading', 'dataclasses', 'askgate.prompters.server')\n"
        "print(sorted(m for m in names if m in sys.modules), code, file=sys.stderr)\n"
    )
    data = payload(project(env), "git status").decode()
    runs = [
        subprocess.run(
            [sys.executable, "-c", script, data], capture_output=True, env=env, timeout=60
        )
        for _ in range(2)
    ]
    first, second = (r.stderr.decode().strip().splitlines()[-1] for r in runs)
    assert "tomllib" in first  # the first call parsed the files
    assert second == "[] 0"
    assert runs[0].stdout == runs[1].stdout
    assert b'"allow"' in runs[1].stdout


# --- never stale --------------------------------------------------------------------------


def test_editing_the_user_policy_is_seen(env: dict[str, str]) -> None:
    assert decide(env, "make all") is Action.ALLOW
    user = Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml"
    user.write_text(POLICY.replace('"make *" = "allow"', '"make *" = "deny"'))
    assert decide(env, "make all") is Action.DENY


def test_an_entry_whose_bytes_differ_is_not_used_even_with_equal_timestamps(
    env: dict[str, str],
) -> None:
    """A rewrite inside one timestamp tick keeps size, mtime and even inode: the bytes
    recorded in the entry are compared too. Simulated by an entry that records other bytes
    with the file's exact stat."""
    assert decide(env, "make all") is Action.ALLOW
    [path] = entries(env)
    entry = msgspec.msgpack.decode(path.read_bytes(), type=policy_cache.Entry)
    user = str(Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml")
    files = tuple(
        msgspec.structs.replace(f, content=f.content.replace(b"allow", b"alloW"))
        if f.path == user and f.content
        else f
        for f in entry.files
    )
    assert files != entry.files
    path.write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(entry, files=files)))
    loaded = counted("loaded")
    assert decide(env, "make all") is Action.ALLOW
    assert counted("loaded") == loaded + 1  # from the files, not the doctored entry


def test_a_project_policy_file_that_appears_is_seen(env: dict[str, str]) -> None:
    assert decide(env, "make all") is Action.ALLOW
    folder = Path(project(env)) / ".askgate"
    folder.mkdir()
    (folder / "policy.toml").write_text('[bash]\n"make *" = "deny"\n')  # untrusted: denies load
    assert decide(env, "make all") is Action.DENY


def test_trusting_and_untrusting_the_project_is_seen(env: dict[str, str]) -> None:
    folder = Path(project(env)) / ".askgate"
    folder.mkdir()
    (folder / "policy.toml").write_text('[bash]\n"npm test *" = "allow"\n')
    assert decide(env, "npm test --watch") is Action.ASK  # untrusted: its allow is ignored
    trust_project(project(env), env)
    assert decide(env, "npm test --watch") is Action.ALLOW
    untrust_project(project(env), env)
    assert decide(env, "npm test --watch") is Action.ASK


def test_a_managed_policy_that_appears_is_seen(env: dict[str, str]) -> None:
    assert decide(env, "git status") is Action.ALLOW
    Path(env["ASKGATE_MANAGED_POLICY"]).write_text('[bash]\n"git *" = "deny"\n')
    assert decide(env, "git status") is Action.DENY


def test_another_environment_is_another_policy(env: dict[str, str], tmp_path: Path) -> None:
    assert decide(env, "make all") is Action.ALLOW
    other = tmp_path / "other" / "askgate"
    other.mkdir(parents=True)
    (other / "policy.toml").write_text('[bash]\n"make *" = "deny"\n')
    assert decide({**env, "XDG_CONFIG_HOME": str(tmp_path / "other")}, "make all") is Action.DENY
    assert decide(env, "make all") is Action.ALLOW


def test_a_load_with_errors_is_never_cached(env: dict[str, str]) -> None:
    user = Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml"
    user.write_text('[bash]\n"make *" = "alow"\n')
    written = counted("written")
    for _ in range(2):
        policy = policy_cache.load_policy(project(env), [], None, env)
        assert policy.errors
        assert policy.decide(Surface.BASH, "git status").action is not Action.ALLOW
    assert counted("written") == written
    assert entries(env) == []


def test_the_recorded_inputs_are_what_the_loader_read(env: dict[str, str]) -> None:
    decide(env, "git status")
    [path] = entries(env)
    entry = msgspec.msgpack.decode(path.read_bytes(), type=policy_cache.Entry)
    recorded = {f.path: f for f in entry.files}
    user = str(Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml")
    assert recorded[user].content == Path(user).read_bytes()
    assert recorded[env["ASKGATE_MANAGED_POLICY"]].target is None  # missing, and must stay so
    assert recorded[os.path.join(project(env), ".askgate", "policy.toml")].target is None
    assert any(p.endswith("program-config.toml") for p in recorded)  # the built-in rules
    names = dict(entry.environment)
    assert names["XDG_CONFIG_HOME"] == env["XDG_CONFIG_HOME"]
    assert "ASKGATE_MANAGED_POLICY" in names and not entry.whole_environment


# --- never trusted unless ours alone ------------------------------------------------------


def _forge_allow_everything(path: Path) -> None:
    """Rewrite a valid entry so that it allows everything, keeping its key and inputs."""
    entry = msgspec.msgpack.decode(path.read_bytes(), type=policy_cache.Entry)
    rules = tuple(
        Rule(surface=surface, pattern="*", action=Action.ALLOW, origin=Origin.USER, rank=0)
        for surface in (Surface.BASH, Surface.NET)  # net: curl's host needs an allow too
    )
    forged = msgspec.structs.replace(
        entry, policy=msgspec.structs.replace(entry.policy, rules=rules, builtin_rules=())
    )
    path.write_bytes(msgspec.msgpack.encode(forged))


def test_control_a_private_entry_is_used_as_it_is(env: dict[str, str]) -> None:
    """The control for the tests below: a well-formed private entry is believed (it has
    the same standing as the policy files it stands for), so they can tell it was not."""
    assert decide(env, "curl https://evil.example") is Action.DENY
    [path] = entries(env)
    _forge_allow_everything(path)
    assert decide(env, "curl https://evil.example") is Action.ALLOW


@pytest.mark.parametrize("mode", [0o666, 0o620, 0o602])
def test_an_entry_others_can_write_is_ignored(env: dict[str, str], mode: int) -> None:
    assert decide(env, "curl https://evil.example") is Action.DENY
    [path] = entries(env)
    _forge_allow_everything(path)
    path.chmod(mode)
    assert decide(env, "curl https://evil.example") is Action.DENY
    assert path.stat().st_mode & 0o777 == 0o600  # rebuilt, private again


def test_an_entry_in_a_directory_others_can_write_is_ignored(env: dict[str, str]) -> None:
    assert decide(env, "curl https://evil.example") is Action.DENY
    [path] = entries(env)
    _forge_allow_everything(path)
    path.parent.chmod(0o777)
    assert decide(env, "curl https://evil.example") is Action.DENY


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_an_entry_owned_by_someone_else_is_ignored(env: dict[str, str]) -> None:
    assert decide(env, "curl https://evil.example") is Action.DENY
    [path] = entries(env)
    _forge_allow_everything(path)
    os.chown(path, 65534, 65534)
    assert decide(env, "curl https://evil.example") is Action.DENY


def test_a_symlinked_entry_is_ignored(env: dict[str, str], tmp_path: Path) -> None:
    assert decide(env, "curl https://evil.example") is Action.DENY
    [path] = entries(env)
    _forge_allow_everything(path)
    elsewhere = tmp_path / "elsewhere.msgpack"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert decide(env, "curl https://evil.example") is Action.DENY


@pytest.mark.parametrize(
    "garbage",
    [b"", b"\x00" * 64, b"\xc1", msgspec.msgpack.encode({"key": 1}), b"\x93\x01\x02"],
    ids=["empty", "zeros", "invalid", "other-shape", "short-array"],
)
def test_a_corrupt_entry_is_rebuilt(env: dict[str, str], garbage: bytes) -> None:
    assert decide(env, "rm -rf build") is Action.DENY
    [path] = entries(env)
    path.write_bytes(garbage)
    loaded = counted("loaded")
    assert decide(env, "rm -rf build") is Action.DENY
    assert decide(env, "git status") is Action.ALLOW
    assert counted("loaded") == loaded + 1  # rebuilt once, then used
    msgspec.msgpack.decode(path.read_bytes(), type=policy_cache.Entry)


def test_no_usable_cache_directory_still_decides(env: dict[str, str]) -> None:
    state = Path(env["XDG_STATE_HOME"]) / "askgate"
    state.mkdir(parents=True)
    (state / policy_cache.CACHE_DIR_NAME).write_text("a file where the directory goes")
    for _ in range(2):
        assert decide(env, "rm -rf build") is Action.DENY
        assert decide(env, "git status") is Action.ALLOW


def test_a_cache_that_raises_is_no_cache(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception while reading or checking an entry: the files decide, as without."""
    assert decide(env, "rm -rf build") is Action.DENY  # an entry exists

    def exploding(*_args: object) -> None:
        raise RuntimeError("cache exploded")

    for name in ("_read_entry", "_still_valid", "_key"):
        with monkeypatch.context() as patch:
            patch.setattr(policy_cache, name, exploding)
            loaded = counted("loaded")
            assert decide(env, "rm -rf build") is Action.DENY
            assert decide(env, "git status") is Action.ALLOW
            assert counted("loaded") == loaded + 2, name
            reply = respond(
                payload(project(env), "git status"), env=env, policy_loader=load_policy_cached
            )
            assert reply.code == 0 and b'"allow"' in reply.stdout


def test_an_error_while_loading_blocks_the_hook_call(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the cache's to swallow: the load itself failing is the hook's internal error."""
    import askgate.policy.config

    def exploding(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("loader exploded")

    monkeypatch.setattr(askgate.policy.config, "load_policy", exploding)
    reply = respond(payload(project(env), "git status"), env=env, policy_loader=load_policy_cached)
    assert (reply.code, reply.stdout) == (2, b"")
    assert "loader exploded" in reply.stderr


REVIEWER_COMMANDS = ("make all", "npm test -x", "git commit -m x", "rm -rf y")


def reviewer_answers(policy: Policy) -> tuple[Action, ...]:
    return tuple(policy.decide(Surface.BASH, c, agent="reviewer").action for c in REVIEWER_COMMANDS)


def test_a_load_with_profiles_agents_and_a_trusted_project_is_cached_and_kept_fresh(
    env: dict[str, str],
) -> None:
    user = Path(env["XDG_CONFIG_HOME"]) / "askgate" / "policy.toml"
    reviewer = '[agent.reviewer.bash]\n"make *" = "deny"\n'
    user.write_text('profiles = ["git-local"]\n' + POLICY + reviewer)
    folder = Path(project(env)) / ".askgate"
    folder.mkdir()
    (folder / "policy.toml").write_text('[bash]\n"npm test *" = "allow"\n')
    trust_project(project(env), env)

    def cached() -> tuple[Action, ...]:
        return reviewer_answers(policy_cache.load_policy(project(env), [], "reviewer", env))

    loaded, hits = counted("loaded"), counted("hit")
    first = cached()
    assert cached() == first
    assert (counted("loaded") - loaded, counted("hit") - hits) == (1, 1)
    assert first == reviewer_answers(Policy.load(project(env), agent="reviewer", env=env))
    assert first[0] is Action.DENY and first[1] is Action.ALLOW and first[3] is Action.DENY
    # Another agent is another entry; dropping the agent section is seen at once.
    no_agent = policy_cache.load_policy(project(env), [], None, env)
    assert no_agent.decide(Surface.BASH, "make all").action is Action.ALLOW
    user.write_text(POLICY)
    assert cached()[0] is Action.ALLOW

"""The sandbox plan, the `[sandbox]` table, the bwrap argument list, the blocked-path line
and the placeholder registry — without starting a sandbox."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.config import load_policy, merge_files, parse_policy_text
from askgate.policy.engine import Policy
from askgate.policy.model import Origin
from askgate.policy.sandbox_table import SandboxSettings
from askgate.policy.schema import policy_json_schema
from askgate.sandbox import expand as expand_module
from askgate.sandbox.blocked import explain_failure
from askgate.sandbox.bwrap import bwrap_argv, is_proc_error
from askgate.sandbox.placeholders import Registry
from askgate.sandbox.plan import SCRATCH_SOCKET, SandboxPlan, build_plan
from conftest import make_rule


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    home, project = tmp_path / "home", tmp_path / "proj"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("k")
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("")
    (project / "deep" / "er").mkdir(parents=True)
    (project / ".env").write_text("a")
    (project / "deep" / "er" / ".env.local").write_text("b")
    (project / "deep" / ".env.example").write_text("c")
    (project / "guarded").mkdir()
    return {"home": home, "project": project, "base": tmp_path}


def _policy(tree: dict[str, Path], rules: list[tuple[str, str, str]], **kw: object) -> Policy:
    project = tree["project"]
    built = [make_rule(s, p, a, base_dir=str(project), **kw) for s, p, a in rules]  # type: ignore[arg-type]
    env = {
        "HOME": str(tree["home"]),
        "XDG_CONFIG_HOME": str(tree["base"] / "cfg"),
        "XDG_DATA_HOME": str(tree["base"] / "data"),
        "XDG_STATE_HOME": str(tree["base"] / "state"),
        "ASKGATE_RUNTIME_DIR": str(tree["base"] / "run"),
        "ASKGATE_AUDIT_LOG": str(tree["base"] / "log.jsonl"),
        "ASKGATE_MANAGED_POLICY": str(tree["base"] / "managed.toml"),
    }
    return Policy(built, project_root=str(project), env=env)


def _plan(tree: dict[str, Path], rules: list[tuple[str, str, str]], **kw: object) -> SandboxPlan:
    settings = kw.pop("settings", SandboxSettings())
    return build_plan(
        _policy(tree, rules),
        settings,
        cwd=str(tree["project"]),
        **kw,  # type: ignore[arg-type]
    )


def _paths(entries: object) -> set[str]:
    return {entry.path for entry in entries}  # type: ignore[attr-defined]


CONTROL_PLANE = ("askgate's control plane", "askgate's daemon socket")


def _hidden(plan: SandboxPlan) -> set[str]:
    """What the plan hides beyond askgate's own control plane (hidden in every plan) and
    the sockets this machine's scratch directories hold (a tmux server of yours)."""
    return {
        e.path
        for e in plan.read_denies
        if not e.why.startswith(CONTROL_PLANE) and e.why != SCRATCH_SOCKET
    }


# --- plan --------------------------------------------------------------------------


def test_rooted_read_denies_are_used_as_they_are_and_anywhere_patterns_expand(tree) -> None:
    plan = _plan(
        tree,
        [
            ("read", "~/.ssh/**", "deny"),
            ("read", "**/.env*", "deny"),
            ("read", "**/.env.example", "allow"),
            ("read", "~/.aws/credentials", "deny"),  # missing: its place is held
        ],
    )
    project = tree["project"]
    assert _hidden(plan) == {
        str(tree["home"] / ".ssh"),
        str(project / ".env"),
        str(project / "deep" / "er" / ".env.local"),
        str(tree["home"] / ".aws" / "credentials"),
    }  # the nested allow keeps .env.example readable
    kinds = {entry.path: entry for entry in plan.read_denies}
    assert kinds[str(tree["home"] / ".ssh")].kind == "dir"
    assert kinds[str(project / ".env")].kind == "file"
    aws = kinds[str(tree["home"] / ".aws" / "credentials")]
    assert aws.kind == "missing" and aws.placeholder == str(tree["home"] / ".aws")
    assert all('read "' in e.why for e in plan.read_denies if e.path in _hidden(plan))


def test_read_ask_rules_hide_too_since_nobody_can_be_asked_mid_command(tree) -> None:
    plan = _plan(tree, [("read", "~/.ssh/**", "ask")])
    assert _hidden(plan) == {str(tree["home"] / ".ssh")}


def test_past_the_search_budget_the_command_is_asked_about(tree, monkeypatch) -> None:
    monkeypatch.setattr(expand_module, "MAX_MATCHES", 1)
    plan = _plan(tree, [("read", "**/.env*", "deny")])
    assert plan.ask_reason is not None and "more than 1 matches" in plan.ask_reason
    assert not plan.startable
    monkeypatch.setattr(expand_module, "MAX_MATCHES", 256)
    monkeypatch.setattr(expand_module, "MAX_VISITED", 2)
    plan = _plan(tree, [("read", "**/.env*", "deny")])
    assert plan.ask_reason is not None and "entries searched" in plan.ask_reason


def test_writable_roots_come_from_the_project_and_literal_write_allows(tree) -> None:
    cache = tree["home"] / ".cache"
    cache.mkdir()
    plan = _plan(tree, [("write", "~/.cache/**", "allow"), ("write", "/srv/*.txt", "allow")])
    writable = _paths(plan.writable)
    assert {str(tree["project"]), str(cache), "/tmp"} <= writable
    assert not any(path.startswith("/srv") for path in writable)
    assert any('"/srv/*.txt"' in note for note in plan.notes)


def test_write_denies_protections_and_git_become_holes(tree) -> None:
    plan = _plan(tree, [("write", "guarded/**", "deny"), ("write", "~/notes/**", "ask")])
    project = tree["project"]
    holes = {entry.path: entry for entry in plan.write_holes}
    assert str(project / "guarded") in holes
    assert str(project / ".git" / "config") in holes
    assert str(project / ".git" / "hooks") in holes
    # Missing protected paths inside a writable root get a placeholder…
    askgate_dir = holes[str(project / ".askgate")]
    assert askgate_dir.kind == "missing" and askgate_dir.placeholder == str(project / ".askgate")
    # …at their first missing component.
    config_dir = tree["base"] / "cfg" / "askgate"
    assert holes[str(config_dir)].placeholder == str(tree["base"] / "cfg")
    # ~/notes is outside every writable root… unless the home is in /tmp (it is here).
    assert str(tree["home"] / "notes") in holes
    # A missing agent settings directory is held by an empty directory placeholder.
    claude = holes[str(project / ".claude" / "settings.json")]
    assert claude.placeholder == str(project / ".claude")


def test_a_git_worktree_link_is_a_hole(tree) -> None:
    git = tree["project"] / ".git"
    for child in ("hooks",):
        (git / child).rmdir()
    (git / "config").unlink()
    git.rmdir()
    git.write_text("gitdir: /elsewhere\n")
    plan = _plan(tree, [])
    assert str(git) in _paths(plan.write_holes)


def test_agent_rules_apply_only_to_their_agent(tree) -> None:
    rules = [("read", "~/.ssh/**", "deny")]
    project = tree["project"]
    built = [make_rule(s, p, a, base_dir=str(project), agent="rev") for s, p, a in rules]
    policy = Policy(built, project_root=str(project), env={"HOME": str(tree["home"])})
    other = build_plan(policy, SandboxSettings(), cwd=str(project), agent="other")
    mine = build_plan(policy, SandboxSettings(), cwd=str(project), agent="rev")
    assert not _hidden(other)
    assert _hidden(mine) == {str(tree["home"] / ".ssh")}


def test_sandbox_settings_add_hidden_and_writable_paths(tree) -> None:
    extra = tree["base"] / "shared"
    extra.mkdir()
    settings = SandboxSettings(
        bash="required", network="off", writable=(str(extra),), hidden=("**/id_rsa",)
    )
    plan = _plan(tree, [], settings=settings)
    assert plan.mode == "required" and plan.network is False
    assert str(extra) in _paths(plan.writable)
    assert str(tree["home"] / ".ssh" / "id_rsa") not in _paths(plan.read_denies)  # not searched
    assert any(e.why == "[sandbox] writable" for e in plan.writable)


def test_a_symlink_the_sandbox_can_write_on_the_way_to_a_denied_path_refuses(tree) -> None:
    target = tree["base"] / "real"
    (target / "ssh").mkdir(parents=True)
    link = tree["project"] / "keys"
    link.symlink_to(target)
    plan = _plan(tree, [("read", "keys/ssh/**", "deny")])
    assert any(f"symlink {link}" in refusal for refusal in plan.refusals)
    assert not plan.startable


def test_hard_links_warn_or_refuse(tree, tmp_path) -> None:
    os.link(tree["project"] / ".env", tmp_path / "elsewhere")
    plan = _plan(tree, [("read", "**/.env", "deny")])
    assert plan.startable and any("hard link" in w for w in plan.warnings)
    plan = _plan(tree, [("read", "**/.env", "deny")], settings=SandboxSettings(hard_links="refuse"))
    assert any("hard link" in r for r in plan.refusals)


def test_a_policy_that_failed_to_load_refuses(tree) -> None:
    policy = Policy(
        [],
        project_root=str(tree["project"]),
        env={"HOME": str(tree["home"])},
        errors=["/x.toml:3: bash: broken"],
    )
    plan = build_plan(policy, SandboxSettings(), cwd=str(tree["project"]))
    assert any("failed to load" in r for r in plan.refusals)


# --- bwrap argv --------------------------------------------------------------------


def test_bwrap_argv_is_a_list_with_namespaces_always_and_masks_last(tree) -> None:
    plan = _plan(
        tree,
        [
            ("read", "~/.ssh/**", "deny"),
            ("read", "**/.env", "deny"),
            ("write", "guarded/**", "deny"),
        ],
    )
    argv = bwrap_argv(plan, ["/bin/bash", "-c", "x; y"], bwrap="/usr/bin/bwrap", empty_file="/E")
    assert argv[0] == "/usr/bin/bwrap"
    for flag in ("--new-session", "--die-with-parent", "--unshare-user", "--unshare-pid"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--unshare-net" not in argv
    assert argv[-4:] == ["--", "/bin/bash", "-c", "x; y"]
    project = str(tree["project"])
    bind = argv.index("--bind")
    hole = argv.index(str(tree["project"] / "guarded")) - 1
    mask = argv.index("--tmpfs")
    assert argv[bind + 1] == argv[bind + 2] == project or project in argv[bind:]
    assert bind < hole < mask
    assert argv[mask - 2 : mask] == ["--perms", "0555"]  # hidden reads as empty
    assert ["--ro-bind", "/E", project + "/.env"] == argv[
        argv.index("/E") - 1 : argv.index("/E") + 2
    ]
    assert argv[argv.index("--proc") + 1] == "/proc"
    assert argv[argv.index("--chdir") + 1] == project
    no_net = _plan(tree, [], settings=SandboxSettings(network="off"))
    no_proc = bwrap_argv(no_net, ["true"], bwrap="b", empty_file="/E", proc=False)
    assert "--unshare-net" in no_proc and "--proc" not in no_proc


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", True),
        ("bwrap: Can't mount proc on /proc: Invalid argument", True),
        ("bwrap: cant mount proc: Permission denied", True),
        ("bwrap: Creating new namespace failed: Operation not permitted", False),
        ("bwrap: setting up uid map: Permission denied", False),
    ],
)
def test_proc_errors_are_recognised_in_any_wording(text: str, expected: bool) -> None:
    assert is_proc_error(text) is expected


# --- the blocked-path line ----------------------------------------------------------


def test_the_blocked_line_names_the_path_and_the_rule(tree) -> None:
    plan = _plan(tree, [("read", "~/.ssh/**", "deny"), ("write", "guarded/**", "deny")])
    key = tree["home"] / ".ssh" / "id_rsa"
    line = explain_failure(plan, f"PermissionError: [Errno 13] Permission denied: '{key}'\n")
    assert line is not None and line.startswith(f"blocked reading {key}: hidden by read")
    line = explain_failure(plan, "/bin/bash: line 1: guarded/x: Read-only file system\n")
    assert line is not None and '"guarded/**" = deny' in line
    line = explain_failure(plan, "touch: cannot touch '/etc/x': Read-only file system\n")
    assert line == (
        "blocked writing /etc/x: outside the writable directories "
        "(no write allow rule or [sandbox] writable covers it)"
    )
    assert explain_failure(plan, "error: test failed: expected 3 got 4\n") is None


def test_the_blocked_line_names_the_file_never_the_program(tree) -> None:
    """`/bin/bash: line 1: NAME: …` is about NAME: bash is only who printed it."""
    plan = _plan(tree, [("read", "~/.ssh/**", "deny"), ("write", "guarded/**", "deny")])
    for text in (
        "/bin/bash: line 1: out.txt: Read-only file system\n",  # inside the project: fine
        "/usr/bin/make: *** [Makefile:2: all] Error 1\n",
    ):
        line = explain_failure(plan, text)
        assert line is None or ("/bin/bash" not in line and "/usr/bin/make" not in line), line
    line = explain_failure(plan, "/bin/bash: line 1: /opt/x: Read-only file system\n")
    assert line is not None and line.startswith("blocked writing /opt/x:"), line
    line = explain_failure(plan, "cp: cannot create regular file 'guarded/y': Permission denied\n")
    assert line is not None and line.startswith(f"blocked writing {tree['project']}/guarded/y")
    # A hidden file reads as empty: the program's own complaint names it.
    key = tree["home"] / ".ssh" / "id_rsa"
    line = explain_failure(plan, f'Load key "{key}": invalid format\n')
    assert line is not None and line.startswith(f"{key} is hidden (it reads as empty")


# --- the [sandbox] table ------------------------------------------------------------


def _parse(text: str, *, trusted: bool = True, origin: Origin = Origin.USER):
    return parse_policy_text(
        text,
        path="/p/policy.toml",
        origin=origin,
        rank_base=100,
        trusted=trusted,
        base_dir="/proj",
        env={"HOME": "/h"},
    )


def test_the_sandbox_table_parses_and_paths_expand() -> None:
    parsed = _parse(
        '[sandbox]\nbash = "required"\nnetwork = "off"\nwritable = ["~/.cache", "out"]\n'
        'hidden = ["**/*.pem", "~/.aws/**"]\nhard_links = "refuse"\n'
    )
    table = parsed.sandbox
    assert table is not None
    assert (table.bash, table.network, table.hard_links) == ("required", "off", "refuse")
    assert table.writable == ("/h/.cache", "/proj/out")
    assert table.hidden == ("**/*.pem", "/h/.aws/**")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[sandbox]\nbash = "maybe"', '/p/policy.toml:2: sandbox.bash: invalid value "maybe"'),
        ("[sandbox]\nnetwork = 1", "/p/policy.toml:2: sandbox.network: invalid value"),
        ('[sandbox]\nhard_links = "x"', "/p/policy.toml:2: sandbox.hard_links: invalid value"),
        ("[sandbox]\nnope = 1", "/p/policy.toml:2: sandbox.nope: unknown key"),
        ('[sandbox]\nwritable = ["a/*"]', "sandbox.writable: entry 1 is a glob"),
        ('[sandbox]\nwritable = "a"', "sandbox.writable: expected an array of paths"),
        ('[sandbox]\nhidden = ["a/***"]', "sandbox.hidden: entry 1:"),
        ('[sandbox]\nhidden = [""]', "sandbox.hidden: entry 1 must be a non-empty string"),
        ("sandbox = 1", "/p/policy.toml:1: sandbox: expected a table"),
        ('[agent.rev.sandbox]\nbash = "x"', "/p/policy.toml:2: agent.rev.sandbox.bash:"),
    ],
)
def test_bad_sandbox_tables_are_rejected_with_file_line_and_key(text: str, error: str) -> None:
    from askgate.policy.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        _parse(text)
    assert str(caught.value).startswith(error) or error in str(caught.value)
    assert "\n" not in str(caught.value)


def test_agent_sandbox_sections_rank_above_the_file_and_apply_to_their_agent() -> None:
    parsed = _parse('[sandbox]\nbash = "on"\n[agent.rev.sandbox]\nbash = "required"\n')
    assert merge_files([parsed], project_root="/proj", agent="rev").sandbox.bash == "required"
    assert merge_files([parsed], project_root="/proj", agent="x").sandbox.bash == "on"
    assert merge_files([parsed], project_root="/proj").sandbox == SandboxSettings(bash="on")


def test_an_untrusted_project_table_only_tightens() -> None:
    user = _parse('[sandbox]\nbash = "on"\nnetwork = "on"\n')
    project = parse_policy_text(
        '[sandbox]\nbash = "required"\nnetwork = "off"\nwritable = ["/"]\nhidden = ["x/**"]\n',
        path="/proj/.askgate/policy.toml",
        origin=Origin.PROJECT,
        rank_base=200,
        trusted=False,
        base_dir="/proj",
        env={"HOME": "/h"},
    )
    merged = merge_files([user, project], project_root="/proj").sandbox
    assert merged.bash == "required" and merged.network == "off"
    assert merged.writable == ()  # an untrusted file cannot widen
    assert merged.hidden == ("/proj/x/**",)
    loosening = parse_policy_text(
        '[sandbox]\nbash = "off"\nnetwork = "on"\n',
        path="/proj/.askgate/policy.toml",
        origin=Origin.PROJECT,
        rank_base=200,
        trusted=False,
        base_dir="/proj",
        env={"HOME": "/h"},
    )
    strict_user = _parse('[sandbox]\nbash = "required"\nnetwork = "off"\n')
    merged = merge_files([strict_user, loosening], project_root="/proj").sandbox
    assert (merged.bash, merged.network) == ("required", "off")


def test_a_managed_sandbox_setting_wins(tmp_path, monkeypatch) -> None:
    managed = tmp_path / "managed.toml"
    managed.write_text('[sandbox]\nbash = "required"\n')
    user = tmp_path / "user.toml"
    user.write_text('[sandbox]\nbash = "off"\n')
    env = {"HOME": str(tmp_path), "ASKGATE_MANAGED_POLICY": str(managed)}
    loaded = load_policy(str(tmp_path), config_files=[str(user)], env=env)
    assert not loaded.errors and loaded.sandbox.bash == "required"


def test_the_json_schema_describes_the_sandbox_table() -> None:
    schema = policy_json_schema()
    assert schema["properties"]["sandbox"] == {"$ref": "#/$defs/sandboxTable"}
    table = schema["$defs"]["sandboxTable"]
    assert table["properties"]["bash"]["enum"] == ["off", "on", "required"]
    assert "sandbox" in schema["$defs"]["agentTables"]["properties"]


# --- placeholders -------------------------------------------------------------------


def test_placeholders_are_shared_and_removed_only_when_unused(tree, tmp_path) -> None:
    plan = _plan(tree, [])
    missing = [h for h in plan.write_holes if h.placeholder]
    assert missing
    first = Registry(str(tmp_path / "state"))
    first.acquire(missing)
    for hole in missing:
        assert os.path.lexists(hole.placeholder)  # type: ignore[arg-type]
    # A second live run (same process here, so same liveness) shares the placeholders.
    second = Registry(str(tmp_path / "state"))
    second.record_path += ".second"
    second.acquire(missing)
    first.release()
    assert all(os.path.lexists(h.placeholder) for h in missing)  # type: ignore[arg-type]
    second.release()
    assert not any(os.path.lexists(h.placeholder) for h in missing)  # type: ignore[arg-type]


def test_stale_records_are_cleaned_and_a_changed_placeholder_is_kept(tree, tmp_path) -> None:
    plan = _plan(tree, [])
    missing = [h for h in plan.write_holes if h.placeholder]
    registry = Registry(str(tmp_path / "state"))
    registry.acquire(missing)
    # Pretend the run died: its record now names a process that no longer exists.
    data = Path(registry.record_path).read_text().replace(f'"pid":{os.getpid()}', '"pid":1')
    Path(registry.record_path).write_text(data)
    askgate_dir = tree["project"] / ".askgate"
    (askgate_dir / "kept.txt").write_text("someone wrote here")  # not empty any more
    other = Registry(str(tmp_path / "state"))
    other.record_path += ".other"
    other.acquire([])
    assert not os.path.exists(registry.record_path)
    assert askgate_dir.exists()  # not empty: never removed
    config = tree["base"] / "cfg"
    assert any(h.placeholder == str(config) for h in missing)
    assert not config.exists()  # the dead run's empty placeholder is gone
    # A missing protected *file* (the managed policy here) is a tripwire, not a placeholder.
    assert str(tree["base"] / "managed.toml") in _paths(plan.tripwires)
    other.release()


def test_a_nested_write_allow_inside_a_deny_is_bound_after_the_hole(tree) -> None:
    (tree["project"] / "guarded" / "tmp").mkdir()
    plan = _plan(tree, [("write", "guarded/**", "deny"), ("write", "guarded/tmp/**", "allow")])
    guarded, nested = str(tree["project"] / "guarded"), str(tree["project"] / "guarded" / "tmp")
    assert guarded in _paths(plan.write_holes) and nested in _paths(plan.writable)
    argv = bwrap_argv(plan, ["true"], bwrap="b", empty_file="/E")
    assert argv.index(guarded) < argv.index(nested)
    assert argv[argv.index(guarded) - 1] == "--ro-bind"
    assert argv[argv.index(nested) - 1] == "--bind"


def test_a_write_deny_everywhere_freezes_the_project_without_a_walk(tree) -> None:
    plan = _plan(tree, [("write", "**", "deny")])
    assert plan.ask_reason is None
    assert str(tree["project"]) in _paths(plan.write_holes)


def test_a_write_allow_under_a_stricter_rule_is_not_a_writable_root(tree) -> None:
    (tree["home"] / ".cache").mkdir()
    project = str(tree["project"])
    rules = [
        make_rule("write", "~/**", "deny", rank=600, base_dir=project),
        make_rule("write", "~/.cache/**", "allow", rank=100, base_dir=project),
    ]
    policy = Policy(rules, project_root=project, env={"HOME": str(tree["home"])})
    plan = build_plan(policy, SandboxSettings(), cwd=project)
    assert str(tree["home"] / ".cache") not in _paths(plan.writable)
    assert any("stricter rule" in note for note in plan.notes)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_blocked_line_never_fails_on_hostile_output(text: str) -> None:
    plan = SandboxPlan(
        cwd="/p",
        project_root="/p",
        mode="on",
        network=True,
        hard_links="warn",
        writable=(),
        write_holes=(),
        read_denies=(),
    )
    line = explain_failure(plan, text + "\nPermission denied: " + text)
    assert line is None or line.startswith("blocked ")


def test_an_untrusted_writable_list_is_reported_as_ignored() -> None:
    project = parse_policy_text(
        '[sandbox]\nwritable = ["/"]\n[agent.rev.sandbox]\nwritable = ["/etc"]\n',
        path="/proj/.askgate/policy.toml",
        origin=Origin.PROJECT,
        rank_base=200,
        trusted=False,
        base_dir="/proj",
        env={"HOME": "/h"},
    )
    assert "sandbox.writable" in project.ignored
    assert "agent.rev.sandbox.writable" in project.ignored


def test_a_frozen_file_with_other_hard_links_warns_or_refuses(tree, tmp_path) -> None:
    os.link(tree["project"] / ".git" / "config", tmp_path / "config-link")
    plan = _plan(tree, [])
    assert any("cannot keep read-only" in w for w in plan.warnings)
    plan = _plan(tree, [], settings=SandboxSettings(hard_links="refuse"))
    assert any("cannot keep read-only" in r for r in plan.refusals)


def test_patterns_share_one_walk_and_a_match_stops_only_its_own_pattern(tmp_path: Path) -> None:
    (tmp_path / "a" / ".codex").mkdir(parents=True)
    (tmp_path / "a" / ".codex" / ".env").write_text("x")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / ".env.local").write_text("x")
    found = expand_module.expand_all(["**/.codex/**", "**/.env*"], [str(tmp_path)])
    assert found["**/.codex/**"].paths == (str(tmp_path / "a" / ".codex"),)
    # Below the directory the first pattern matched, the second one still looks.
    assert found["**/.env*"].paths == (
        str(tmp_path / "a" / ".codex" / ".env"),
        str(tmp_path / "b" / ".env.local"),
    )
    assert all(e.over_budget is None for e in found.values())


def test_the_walk_is_bounded_in_time_and_the_plan_then_asks(tree, monkeypatch) -> None:
    late = expand_module.expand_all(["**/.env*"], [str(tree["project"])], deadline=0.0)
    assert late["**/.env*"].over_budget is not None
    assert "took over" in late["**/.env*"].over_budget
    import askgate.sandbox.plan as plan_module

    monkeypatch.setattr(plan_module, "MAX_SECONDS", -1.0)  # the plan's deadline has passed
    plan = _plan(tree, [("read", "**/.env*", "deny")])
    assert plan.ask_reason is not None and "took over" in plan.ask_reason
    assert not plan.startable


def test_agent_sockets_are_hidden_only_when_the_policy_hides_secrets(tree) -> None:
    runtime = tree["base"] / "xdg-run"
    runtime.mkdir()
    agent = tree["base"] / "agent.sock"
    agent.write_text("")  # stands for the socket
    policy = _policy(tree, [])
    env = {**policy.env, "XDG_RUNTIME_DIR": str(runtime), "SSH_AUTH_SOCK": str(agent)}
    bare = Policy([], project_root=str(tree["project"]), env=env)
    plan = build_plan(bare, SandboxSettings(), cwd=str(tree["project"]))
    assert str(agent) not in _paths(plan.read_denies) and not plan.unset_env
    rules = [make_rule("read", "~/.ssh/**", "deny", base_dir=str(tree["project"]))]
    secretive = Policy(rules, project_root=str(tree["project"]), env=env)
    plan = build_plan(secretive, SandboxSettings(), cwd=str(tree["project"]))
    assert {str(agent), str(runtime)} <= _paths(plan.read_denies)
    assert plan.unset_env == ("SSH_AUTH_SOCK",)


def test_the_plans_path_resolution_matches_realpath(tmp_path: Path) -> None:
    """The plan resolves symlinks one remembered component at a time (speed); it must
    give exactly what `os.path.realpath` gives, `..` after links included."""
    from askgate.policy.paths import fold_lexically
    from askgate.sandbox.plan import _resolve

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "a" / "b")
    (tmp_path / "a" / "b" / "up").symlink_to("../a")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cache: dict[str, str] = {}
    for rest in ("l/x", "l/../c", "a/b/up/b/up", "missing/q", "a/./b", "l/up/../b", "loop/x", ""):
        path = f"{tmp_path}/{rest}" if rest else str(tmp_path)
        assert _resolve(path, cache) == fold_lexically(os.path.realpath(path)), path


def test_the_plan_does_not_import_the_proxy_back() -> None:
    """plan.py takes its network fields from the leaf netplan.py; netproxy.py (the proxy
    itself) imports plan.py. No cycle, so the acyclic contract checks askgate.sandbox."""
    import grimp

    graph = grimp.build_graph("askgate")
    assert graph.find_shortest_chain("askgate.sandbox.plan", "askgate.sandbox.netproxy") is None
    assert not graph.find_shortest_chain("askgate.sandbox.netplan", "askgate.sandbox.plan")


# --- scratch directories are never searched, whatever rule names them ------------------


def _scratch_policy(tree: dict[str, Path], scratch: Path, rules: list[tuple[str, str, str]]):
    policy = _policy(tree, rules)
    policy.env["TMPDIR"] = str(scratch)  # type: ignore[index]
    return policy


def _many_env_files(where: Path, count: int = 300) -> None:
    for index in range(count):  # past the 256 matches a pattern may have
        (where / f"run{index}").mkdir(parents=True)
        (where / f"run{index}" / ".env").write_text("x")


def test_a_write_rule_naming_a_scratch_directory_does_not_make_it_searched(tree) -> None:
    """`"/tmp/**" = "allow"` (or a rule for $TMPDIR, or a directory in either) makes the
    scratch directory a rule-named writable root; it stays unsearched, as without the
    rule: hundreds of `.env` files there (pytest's own temporary directories) neither
    make the plan incomplete nor get hidden."""
    scratch = tree["base"] / "scratch"
    _many_env_files(scratch)
    _many_env_files(tree["base"] / "runs")  # below tmp_path: in /tmp here
    rules = [
        ("write", "/tmp/**", "allow"),
        ("write", "/var/tmp/**", "allow"),
        ("write", f"{scratch}/**", "allow"),
        ("write", f"{scratch}/run7/**", "allow"),
        ("read", "**/.env*", "deny"),
    ]
    policy = _scratch_policy(tree, scratch, rules)
    plan = build_plan(policy, SandboxSettings(), cwd=str(tree["project"]))
    assert plan.ask_reason is None and plan.startable, plan.ask_reason
    writable = _paths(plan.writable)
    assert {"/tmp", str(scratch), str(scratch / "run7")} <= writable
    hidden = _hidden(plan)
    assert not any(p.startswith((str(scratch), str(tree["base"] / "runs"))) for p in hidden)
    assert str(tree["project"] / ".env") in hidden  # the project is searched as before


def test_a_rule_named_root_in_home_or_the_project_is_still_searched(tree) -> None:
    """HOME in /tmp (as here): `~/.cache/**` is searched all the same; so is a scratch
    directory inside the project."""
    cache = tree["home"] / ".cache" / "tool"
    cache.mkdir(parents=True)
    (cache / ".env").write_text("x")
    inside = tree["project"] / "tmp"
    inside.mkdir()
    (inside / ".env.local").write_text("x")
    rules = [
        ("write", "/tmp/**", "allow"),
        ("write", "~/.cache/**", "allow"),
        ("read", "**/.env*", "deny"),
    ]
    policy = _scratch_policy(tree, inside, rules)
    plan = build_plan(policy, SandboxSettings(), cwd=str(tree["project"]))
    assert plan.startable, plan.ask_reason
    assert {str(cache / ".env"), str(inside / ".env.local")} <= _hidden(plan)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside /tmp and /var/tmp (removed after the test)."""
    import shutil

    from unprivileged_rerun import outside_scratch_dir

    where = Path(outside_scratch_dir("askgate-plan-"))
    try:
        yield where
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_wider_root_holding_a_scratch_directory_does_not_walk_it(tree, outside) -> None:
    """A writable root outside /tmp that holds the scratch directory ($TMPDIR below
    `"…/work/**"`): the anywhere-patterns are searched in it, not in the scratch
    directory; a rule-named root *in* a scratch directory is not searched either."""
    work = outside / "work"
    scratch = work / "tmp"
    _many_env_files(scratch)
    (work / "notes").mkdir(parents=True)
    (work / "notes" / ".env").write_text("x")
    rules = [("write", f"{work}/**", "allow"), ("read", "**/.env*", "deny")]
    policy = _scratch_policy(tree, scratch, rules)
    plan = build_plan(policy, SandboxSettings(), cwd=str(tree["project"]))
    assert plan.startable, plan.ask_reason
    hidden = _hidden(plan)
    assert str(work / "notes" / ".env") in hidden
    assert not any(p.startswith(str(scratch)) for p in hidden)
    # A rooted pattern is searched from its prefix as written, scratch included.
    rooted = [("write", f"{work}/**", "allow"), ("read", f"{work}/*/run3/.env", "deny")]
    plan = build_plan(_scratch_policy(tree, scratch, rooted), SandboxSettings(), cwd=str(work))
    assert str(scratch / "run3" / ".env") in _hidden(plan)


def test_with_tmp_named_by_a_write_rule_a_command_runs_sandboxed(tmp_path) -> None:
    """The end of it: under `"/tmp/**" = "allow"` with `.env` files all over /tmp, the
    command runs in the sandbox (exit 0, its write in /tmp done) instead of being refused
    for an incomplete plan."""
    from sandbox_world import POLICY, World, require_bwrap

    require_bwrap()
    world = World(tmp_path / "w", policy=POLICY + '"/tmp/**" = "allow"\n')
    _many_env_files(tmp_path / "envs")
    out = tmp_path / "out.txt"
    run = world.sandbox(f"echo sandboxed > {out}; cat {world.env_file} || true")
    assert run.returncode == 0, run
    assert out.read_text() == "sandboxed\n"
    assert "hunter2" not in run.stdout  # the project's .env is still hidden


def test_a_flooded_scratch_directory_does_not_hide_a_servers_socket(tmp_path: Path) -> None:
    """A command can fill /tmp with entries before the next plan: every one is looked at,
    so the tmux server's directory, a socket at the top and a directory of this user
    holding one are found wherever the directory listing puts them."""
    import socket

    from askgate.sandbox.plan import scratch_sockets

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    for index in range(20_000):
        (scratch / f"flood-{index}").touch()
    (scratch / f"tmux-{os.getuid()}").mkdir()
    (scratch / "mine").mkdir()
    servers = []
    for path in (scratch / "top.sock", scratch / "mine" / "server.sock"):
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        servers.append(server)
    try:
        found = set(scratch_sockets(str(scratch)))
    finally:
        for server in servers:
            server.close()
    assert found == {
        str(scratch / f"tmux-{os.getuid()}"),
        str(scratch / "top.sock"),
        str(scratch / "mine"),
    }

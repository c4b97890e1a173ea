"""Data trees (node_modules, site-packages, .git/objects, build output) in the sandbox
plan's search for anywhere-patterns: they must not make the plan incomplete (every command
asked), and what the search can reach in them is still hidden."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.sandbox_table import SandboxSettings
from askgate.sandbox import expand as expand_module
from askgate.sandbox.plan import SandboxPlan, build_plan
from conftest import make_rule
from unprivileged import run_as_nobody


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    (project / ".git" / "objects" / "ab").mkdir(parents=True)
    (project / ".git" / "config").write_text("")
    (project / "src").mkdir()
    (project / ".env").write_text("TOKEN=root")
    return project


def _node_modules(project: Path, packages: int, files: int = 20) -> None:
    for package in range(packages):
        lib = project / "node_modules" / f"pkg{package}" / "lib"
        lib.mkdir(parents=True)
        for index in range(files):
            (lib / f"f{index}.js").write_text("")


def _plan(tmp_path: Path, project: Path) -> SandboxPlan:
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "ASKGATE_RUNTIME_DIR": str(tmp_path / "run"),
        "ASKGATE_AUDIT_LOG": "off",
        "ASKGATE_MANAGED_POLICY": str(tmp_path / "managed.toml"),
    }
    rules = [make_rule("read", "**/.env*", "deny", base_dir=str(project))]
    policy = Policy(rules, project_root=str(project), env=env)
    return build_plan(policy, SandboxSettings(), cwd=str(project))


def _hidden(plan: SandboxPlan) -> set[str]:
    return {e.path for e in plan.read_denies if e.pattern == "**/.env*"}


@pytest.fixture
def small_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real budgets scaled down: a tree of a few hundred files stands for 60,000."""
    monkeypatch.setattr(expand_module, "MAX_VISITED", 100)
    monkeypatch.setattr(expand_module, "MAX_DATA_VISITED", 60)


def test_a_huge_node_modules_does_not_make_every_command_ask(tmp_path, small_budgets) -> None:
    project = _project(tmp_path)
    _node_modules(project, packages=30)  # 600+ entries, past both budgets
    plan = _plan(tmp_path, project)
    assert plan.ask_reason is None and plan.startable
    assert str(project / ".env") in _hidden(plan)
    assert any("a data tree not searched" in n and "node_modules" in n for n in plan.notes)


def test_the_same_tree_outside_a_data_tree_still_makes_the_plan_ask(
    tmp_path, small_budgets
) -> None:
    project = _project(tmp_path)
    _node_modules(project, packages=30)
    os.rename(project / "node_modules", project / "my_modules")  # the user's own files
    plan = _plan(tmp_path, project)
    assert plan.ask_reason is not None and "entries searched" in plan.ask_reason
    assert not plan.startable


def test_a_secret_copied_to_the_top_of_a_build_tree_is_hidden(tmp_path, small_budgets) -> None:
    project = _project(tmp_path)
    for package in range(20):  # a deep tree past the data budget
        deep = project / "dist" / "assets" / f"chunk{package}"
        deep.mkdir(parents=True)
        for index in range(10):
            (deep / f"c{index}.js").write_text("")
    (project / "dist" / ".env").write_text("TOKEN=copied-by-a-build")
    plan = _plan(tmp_path, project)
    assert plan.startable
    assert str(project / "dist" / ".env") in _hidden(plan)  # breadth first: shallow first


def test_a_secret_inside_a_small_data_tree_is_hidden(tmp_path) -> None:
    project = _project(tmp_path)
    _node_modules(project, packages=3, files=2)
    secret = project / "node_modules" / "pkg1" / "lib" / ".env.local"
    secret.write_text("TOKEN=deep")
    venv = project / ".venv" / "lib" / "python3.12" / "site-packages" / "x"
    venv.mkdir(parents=True)
    (venv / ".env").write_text("TOKEN=venv")
    plan = _plan(tmp_path, project)
    assert {str(secret), str(venv / ".env")} <= _hidden(plan)
    assert not any("a data tree" in n for n in plan.notes)


def test_an_unlistable_directory_inside_a_data_tree_still_asks() -> None:
    # Root lists every directory: the check runs as an unprivileged user.
    def check(scratch: Path) -> None:
        project = _project(scratch)
        _node_modules(project, packages=2, files=1)
        locked = project / "node_modules" / "pkg0" / "locked"
        locked.mkdir()
        (locked / ".env").write_text("TOKEN=hidden-name")
        locked.chmod(0o311)
        try:
            plan = _plan(scratch, project)
        finally:
            locked.chmod(0o755)
        assert plan.ask_reason is not None and "entered but not listed" in plan.ask_reason

    run_as_nobody(check)


def test_a_directory_named_objects_outside_git_is_not_a_data_tree(tmp_path) -> None:
    project = _project(tmp_path)
    nested = project / "src" / "objects" / "deep"
    nested.mkdir(parents=True)
    (nested / ".env").write_text("TOKEN=user")
    found = expand_module.expand_all(["**/.env*"], [str(project)])["**/.env*"]
    assert str(nested / ".env") in found.paths and found.unsearched == ()
    assert expand_module.is_data_tree(str(project / ".git" / "objects"))
    assert not expand_module.is_data_tree(str(project / "src" / "objects"))


def test_data_tree_examples_are_checked_at_load(monkeypatch) -> None:
    wrong = expand_module.DataTree("build", "build output", examples=("builds",))
    monkeypatch.setattr(expand_module, "DATA_TREES", (*expand_module.DATA_TREES, wrong))
    with pytest.raises(ValueError, match="does not match"):
        expand_module._check_data_trees()


def test_one_huge_directory_in_a_data_tree_is_bounded_too(tmp_path, monkeypatch) -> None:
    """A single directory of many files (a flat `node_modules/pkg/lib`) costs the data
    budget, not the plan's time: the walks after it keep theirs."""
    monkeypatch.setattr(expand_module, "MAX_DATA_VISITED", 10)
    project = _project(tmp_path)
    _node_modules(project, packages=1, files=200)
    (project / "node_modules" / ".env").write_text("TOKEN=shallow")
    found = expand_module.expand_all(["**/.env*"], [str(project)])["**/.env*"]
    assert found.over_budget is None
    assert found.unsearched == (str(project / "node_modules"),)
    assert str(project / "node_modules" / ".env") in found.paths


def test_in_the_real_sandbox_a_huge_node_modules_runs_and_hides_a_shallow_secret(
    tmp_path,
) -> None:
    """End to end through `askgate sandbox` (bwrap) with the real budgets: a node_modules
    past the 50,000-entry search budget no longer refuses the command; the project's
    `.env` and a copy at the top of node_modules read as empty, the rest as usual."""
    from sandbox_world import ENV_SECRET, World, require_bwrap

    require_bwrap()
    world = World(tmp_path)
    lib = world.project / "node_modules" / "pkg" / "lib"
    lib.mkdir(parents=True)
    first = lib / "index.js"
    first.write_text("module.exports=1\n")
    for index in range(expand_module.MAX_VISITED + 100):  # names of one file: cheap to make
        os.link(first, lib / f"f{index}.js")
    (world.project / "node_modules" / ".env").write_text(ENV_SECRET + "\n")
    ran = world.sandbox("bash", "-c", "cat .env node_modules/.env; cat node_modules/pkg/lib/f7.js")
    assert ran.returncode == 0, ran
    assert "hunter2" not in ran.stdout, ran
    assert "module.exports=1" in ran.stdout, ran


def test_a_pattern_that_must_search_data_trees_whole_still_makes_the_plan_incomplete(
    tmp_path, small_budgets
) -> None:
    """For a caller to whom a match left in a data tree is not acceptable (a write hole
    whose miss would be an escape), the old rule holds: past the budget, incomplete."""
    project = _project(tmp_path)
    _node_modules(project, packages=30)
    patterns = ["**/.env*", "**/*.pth"]
    found = expand_module.expand_all(
        patterns, [str(project)], whole_data_trees=frozenset(["**/*.pth"])
    )
    assert found["**/*.pth"].over_budget is not None
    small = tmp_path / "small"
    small.mkdir()
    _node_modules(small, packages=2, files=2)
    (small / "node_modules" / "pkg1" / "lib" / "evil.pth").write_text("import os")
    (small / "node_modules" / "pkg1" / "lib" / ".env").write_text("TOKEN=x")
    found = expand_module.expand_all(
        patterns, [str(small)], whole_data_trees=frozenset(["**/*.pth"])
    )
    assert found["**/*.pth"].paths == (str(small / "node_modules/pkg1/lib/evil.pth"),)
    assert found["**/.env*"].paths == (str(small / "node_modules/pkg1/lib/.env"),)
    assert all(e.over_budget is None and not e.unsearched for e in found.values())

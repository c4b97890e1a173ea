"""A symlink followed by `..`: the kernel goes to the link target's parent, so must we.

`proj/cache/..` is lexically `proj`, but the kernel resolves `cache` first and then
takes the parent of its target. The resolved form of a path must therefore come from
the path as written (realpath before any `..` is folded); the lexical form stays the
second form, and every check looks at both.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from askgate.policy.config import load_policy
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Surface
from askgate.policy.paths import resolve

EXAMPLE_POLICY = Path(__file__).resolve().parent.parent / "examples" / "policy.toml"


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A home with ~/.ssh and ~/.cache, a project under it holding `cache -> ~/.cache`."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret")
    (home / ".cache").mkdir()
    project = home / "proj"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "cache").symlink_to(home / ".cache")
    return {"home": home, "project": project}


def _env(home: Path) -> dict[str, str]:
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": "/usr/bin:/bin",
    }


def _example_policy(world: dict[str, Path]) -> Policy:
    env = _env(world["home"])
    loaded = load_policy(str(world["project"]), config_files=[str(EXAMPLE_POLICY)], env=env)
    assert not loaded.errors, loaded.errors
    return Policy.from_loaded(loaded, env=env)


def test_resolved_form_follows_the_link_before_dotdot(world: dict[str, Path]) -> None:
    project, home = world["project"], world["home"]
    forms = resolve("cache/../.ssh/id_rsa", str(project), _env(home))
    assert forms.resolved == str(home / ".ssh" / "id_rsa")
    assert forms.lexical == str(project / ".ssh" / "id_rsa")  # kept as the second form
    assert set(forms.forms) == {forms.lexical, forms.resolved}


def test_read_tool_through_link_dotdot_is_denied(world: dict[str, Path]) -> None:
    policy = _example_policy(world)
    path = str(world["project"] / "cache" / ".." / ".ssh" / "id_rsa")
    decision = policy.decide(Surface.READ, path, cwd=str(world["project"]), tool="Read")
    assert decision.action is Action.DENY, decision.reason


def test_cat_through_link_dotdot_is_denied(world: dict[str, Path]) -> None:
    policy = _example_policy(world)
    decision = policy.decide(Surface.BASH, "cat cache/../.ssh/id_rsa", cwd=str(world["project"]))
    assert decision.action is Action.DENY, decision.reason


def test_write_to_askgate_state_through_link_dotdot_is_denied(world: dict[str, Path]) -> None:
    home, project = world["home"], world["project"]
    (home / ".config" / "other").mkdir(parents=True)
    (project / "src" / "cfg").symlink_to(home / ".config" / "other")
    policy = _example_policy(world)  # write "src/**" = "allow"
    target = "src/cfg/../askgate/policy.toml"  # lexically inside src/, really the user policy
    tool = policy.decide(Surface.WRITE, target, cwd=str(project), tool="Write")
    assert tool.action is Action.DENY, tool.reason
    shell = policy.decide(Surface.BASH, f"echo 'yolo = true' > {target}", cwd=str(project))
    assert shell.action is Action.DENY, shell.reason


def test_allow_needs_both_forms_even_when_the_target_is_inside(world: dict[str, Path]) -> None:
    project = world["project"]
    (project / "src" / "deep").mkdir()
    (project / "up").symlink_to(project / "src" / "deep")
    policy = _example_policy(world)
    # up/../x is lexically proj/x (default ask) and really proj/src/x (write allowed):
    # an allow needs both forms, so this asks.
    decision = policy.decide(Surface.WRITE, "up/../x.py", cwd=str(project), tool="Write")
    assert decision.action is Action.ASK


# --- property: the resolved form is what the kernel would open ------------------------

_LINK_PLACES = ("l1", "a/l2", "a/b/l3", "b/l1", "b/a/l2")
_TARGETS = (".", "..", "a", "b", "a/b", "../b", "../../a", "b/a", "missing/x", "l1", "l2")
_SEGMENT = st.sampled_from(["a", "b", "l1", "l2", "l3", "..", "..", ".", "missing"])


def _build_tree(base: Path, targets: list[tuple[str, bool]]) -> None:
    """Directories a, a/b, b, b/a, a/b/a and a link at each of `_LINK_PLACES`, each with
    its own target (relative or absolute; some dangling, some chained, some looping)."""
    for directory in ("a", "a/b", "b", "b/a", "a/b/a"):
        (base / directory).mkdir(parents=True, exist_ok=True)
    for where, (target, absolute) in zip(_LINK_PLACES, targets, strict=True):
        os.symlink(str(base / target) if absolute else target, base / where)


_TARGET = st.tuples(st.sampled_from(_TARGETS), st.booleans())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    targets=st.lists(_TARGET, min_size=len(_LINK_PLACES), max_size=len(_LINK_PLACES)),
    segments=st.lists(_SEGMENT, min_size=1, max_size=7),
)
def test_resolved_form_is_realpath_of_the_unfolded_path(
    targets: list[tuple[str, bool]], segments: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as raw:
        base = Path(os.path.realpath(raw))
        _build_tree(base, targets)
        relative = "/".join(segments)
        unfolded = str(base) + "/" + relative
        forms = resolve(relative, str(base), {"HOME": str(base)})
        assert forms.resolved == os.path.realpath(unfolded)
        # And the kernel agrees: when the path opens, it opens the very same file.
        if os.path.exists(unfolded):
            assert os.path.samefile(forms.resolved, unfolded)


@pytest.mark.parametrize(
    "command",
    [
        "cd cache && cat ../.ssh/id_rsa",
        "cat ./cache/../.ssh/id_rsa",
        "head -n1 cache/../.ssh/id_rsa",
        "grep key cache/../.ssh/id_rsa",
    ],
)
def test_other_shell_spellings_through_the_link_are_denied(
    world: dict[str, Path], command: str
) -> None:
    policy = _example_policy(world)
    decision = policy.decide(Surface.BASH, command, cwd=str(world["project"]))
    assert decision.action is Action.DENY, decision.reason


@pytest.mark.parametrize(
    "command",
    [
        "cd -P cache/.. && cat .ssh/id_rsa",
        "cd cache && cd -P .. && cat .ssh/id_rsa",
        "set -P; cd cache/..; cat .ssh/id_rsa",
        "set -o physical; cd cache/..; cat .ssh/id_rsa",
        "cd cache && cd .. && cd -P cache/.. && cat .ssh/id_rsa",
    ],
)
def test_a_physical_cd_through_the_link_is_checked_where_it_lands(
    world: dict[str, Path], command: str
) -> None:
    """`cd -P cache/..` (or any cd after `set -P`) lands in the link target's parent, the
    home directory: the commands after it are checked there too (deny), or the analysis
    floors a relative path after a physical cd (ask). Never allow."""
    policy = _example_policy(world)
    decision = policy.decide(Surface.BASH, command, cwd=str(world["project"]))
    assert decision.action in (Action.DENY, Action.ASK), decision.reason

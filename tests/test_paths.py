"""Path normalisation against real temp directories and real symlinks."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.paths import (
    SAFE_DEVICE_PATHS,
    PathForms,
    expand_user,
    fold_lexically,
    inside_roots,
    is_inside,
    is_safe_device,
    normalize,
    resolve,
)

ENV = {"HOME": "/home/tester"}


# --- expand_user ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("~", "/home/tester"),
        ("~/x/y", "/home/tester/x/y"),
        ("$HOME", "/home/tester"),
        ("$HOME/.ssh", "/home/tester/.ssh"),
        ("${HOME}/.ssh", "/home/tester/.ssh"),
        ("$HOMEX/a", "$HOMEX/a"),  # a different variable: left alone
        ("a/~/b", "a/~/b"),  # only a leading tilde expands
        ("~nosuchuser-askgate/x", "~nosuchuser-askgate/x"),  # bash leaves it literal
        ("/abs/path", "/abs/path"),
        ("$PWD/x", "$PWD/x"),  # no cwd given: the gate's own cwd means nothing
    ],
)
def test_expand_user(raw: str, expected: str) -> None:
    assert expand_user(raw, ENV) == expected


def test_expand_user_pwd_and_tilde_plus_use_cwd() -> None:
    assert expand_user("$PWD/x", ENV, cwd="/work") == "/work/x"
    assert expand_user("${PWD}", ENV, cwd="/work") == "/work"
    assert expand_user("~+/x", ENV, cwd="/work") == "/work/x"


def test_expand_user_named_user_uses_password_database() -> None:
    name = pwd.getpwuid(os.getuid()).pw_name
    home = pwd.getpwuid(os.getuid()).pw_dir
    assert expand_user(f"~{name}/x", ENV) == f"{home}/x"


@pytest.mark.parametrize("raw", ["~-/x", "~+/x"])
def test_expand_user_unknowable_tilde_forms_raise(raw: str) -> None:
    with pytest.raises(ValueError, match="cannot expand"):
        expand_user(raw, ENV)


def test_expand_user_without_home_in_explicit_env_raises() -> None:
    with pytest.raises(ValueError, match="HOME is not set"):
        expand_user("~/x", {})
    with pytest.raises(ValueError, match="not an absolute"):
        expand_user("$HOME/x", {"HOME": "relative"})


# --- normalize --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "cwd", "expected"),
    [
        ("src/a.py", "/proj", "/proj/src/a.py"),
        ("./src//a.py", "/proj", "/proj/src/a.py"),
        ("../other/x", "/proj/sub", "/proj/other/x"),
        ("/a/b/../../../../etc/passwd", "/proj", "/etc/passwd"),  # `..` past / stays at /
        ("//etc///passwd/", "/proj", "/etc/passwd"),
        ("~/.ssh/id_rsa", "/proj", "/home/tester/.ssh/id_rsa"),
        ("$HOME/../root", "/proj", "/home/root"),
        (".", "/proj", "/proj"),
        ("..", "/", "/"),
        ("$PWD/../x", "/proj/sub", "/proj/x"),
    ],
)
def test_normalize_is_lexical(raw: str, cwd: str, expected: str) -> None:
    assert normalize(raw, cwd, ENV) == expected


@pytest.mark.parametrize(
    ("raw", "cwd", "message"),
    [
        ("a\x00b", "/proj", "NUL"),
        ("a\udc80b", "/proj", "surrogate"),
        ("a/" * 40_000, "/proj", "longer than"),
        ("x" * 5000, "/proj", "longer than 4096"),
        ("", "/proj", "empty"),
        ("a", "relative/cwd", "not absolute"),
        ("a", "/pro\x00j", "NUL"),
    ],
)
def test_normalize_rejects_hostile_input(raw: str, cwd: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        normalize(raw, cwd, ENV)


def test_normalize_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="must be a string"):
        normalize(b"/etc", "/", ENV)  # type: ignore[arg-type]


def test_normalize_folds_long_dotdot_chains_cheaply() -> None:
    assert normalize("a/../" * 10_000, "/proj", ENV) == "/proj"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_normalize_raises_only_value_error_and_returns_folded_paths(raw: str) -> None:
    try:
        result = normalize(raw, "/proj/sub", ENV)
    except ValueError:
        return
    assert result.startswith("/")
    assert "//" not in result
    segments = result.split("/")[1:]
    assert ".." not in segments and "." not in segments
    assert result == "/" or not result.endswith("/")


# --- resolve and symlinks ---------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A project and an outside directory, both real, with assorted links."""
    project = tmp_path / "project"
    outside = tmp_path / "outside"
    (project / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (project / "src" / "a.py").write_text("a")
    (project / "escape").symlink_to(outside)  # inside, pointing outside
    (project / "hop1").symlink_to(project / "hop2")  # chain: hop1 -> hop2 -> outside
    (project / "hop2").symlink_to(outside / "secret.txt")
    (project / "inner").symlink_to(project / "src")  # inside, pointing inside
    (project / "loop1").symlink_to(project / "loop2")
    (project / "loop2").symlink_to(project / "loop1")
    (project / "dangling").symlink_to(outside / "not-yet" / "file")
    return {"root": tmp_path, "project": project, "outside": outside}


def test_resolve_without_links_gives_equal_forms(tree: dict[str, Path]) -> None:
    real_project = os.path.realpath(tree["project"])
    forms = resolve("src/a.py", real_project)
    assert forms == PathForms(lexical=f"{real_project}/src/a.py", resolved=forms.lexical)
    assert forms.forms == (forms.lexical,)


def test_resolve_follows_link_pointing_outside(tree: dict[str, Path]) -> None:
    project = os.path.realpath(tree["project"])
    outside = os.path.realpath(tree["outside"])
    forms = resolve("escape/secret.txt", project)
    assert forms.lexical == f"{project}/escape/secret.txt"
    assert forms.resolved == f"{outside}/secret.txt"
    assert forms.forms == (forms.lexical, forms.resolved)


def test_resolve_follows_a_chain_of_links(tree: dict[str, Path]) -> None:
    forms = resolve("hop1", os.path.realpath(tree["project"]))
    assert forms.resolved == os.path.realpath(tree["outside"] / "secret.txt")


def test_resolve_keeps_a_missing_tail(tree: dict[str, Path]) -> None:
    project = os.path.realpath(tree["project"])
    forms = resolve("inner/new/dir/file.py", project)
    assert forms.resolved == f"{project}/src/new/dir/file.py"


def test_resolve_dangling_link_points_at_its_target(tree: dict[str, Path]) -> None:
    forms = resolve("dangling", os.path.realpath(tree["project"]))
    assert forms.resolved == os.path.realpath(tree["outside"]) + "/not-yet/file"


def test_resolve_symlink_loop_terminates(tree: dict[str, Path]) -> None:
    project = os.path.realpath(tree["project"])
    forms = resolve("loop1/x", project)  # must return, not hang or raise
    assert forms.lexical == f"{project}/loop1/x"
    assert forms.resolved.startswith(project + "/")


# --- is_inside, safe devices, roots ------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/a/b", "/a/b", True),
        ("/a/b/c", "/a/b", True),
        ("/a/bc", "/a/b", False),  # no prefix confusion
        ("/a", "/a/b", False),
        ("/a/b/../c", "/a/b", False),
        ("/anything", "/", True),
        ("/a/b/", "/a/b//", True),
    ],
)
def test_is_inside_compares_segments(path: str, root: str, inside: bool) -> None:
    assert is_inside(path, root) is inside


def test_is_inside_requires_absolute_paths() -> None:
    with pytest.raises(ValueError, match="absolute"):
        is_inside("a/b", "/a")


@pytest.mark.parametrize(
    "device", [*sorted(SAFE_DEVICE_PATHS), "/dev/fd/0", "/dev/fd/17", "/dev/./null"]
)
def test_safe_devices_are_recognised_after_folding(device: str) -> None:
    assert is_safe_device(fold_lexically(device)) is True


@pytest.mark.parametrize("device", ["/dev/sda", "/dev/fd/x", "/dev/fd/1/../../sda", "/dev/nullx"])
def test_other_devices_are_not_safe(device: str) -> None:
    assert is_safe_device(fold_lexically(device)) is False


def test_inside_roots_hold_each_root_lexically_and_resolved(tree: dict[str, Path]) -> None:
    alias = tree["root"] / "alias"
    alias.symlink_to(tree["project"])
    project, outside = os.path.realpath(tree["project"]), str(tree["outside"])
    assert inside_roots(str(alias)) == (str(alias), project)
    assert inside_roots(project, [outside, project]) == (project, os.path.realpath(outside))


@pytest.mark.parametrize("bad", ["relative/x", "/a\x00b", "/a\udc80"])
def test_inside_roots_rejects_bad_roots(bad: str) -> None:
    with pytest.raises(ValueError):
        inside_roots(bad)

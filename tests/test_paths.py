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
    is_external,
    is_inside,
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


# --- is_inside / is_external ------------------------------------------------------


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
def test_safe_devices_are_never_external(device: str, tree: dict[str, Path]) -> None:
    assert is_external(fold_lexically(device), str(tree["project"])) is False


@pytest.mark.parametrize("device", ["/dev/sda", "/dev/fd/x", "/dev/fd/1/../../sda", "/dev/nullx"])
def test_other_devices_are_external(device: str, tree: dict[str, Path]) -> None:
    assert is_external(device, str(tree["project"])) is True


def test_is_external_lexical_and_resolved(tree: dict[str, Path]) -> None:
    project = str(tree["project"])
    assert is_external(f"{project}/src/a.py", project) is False
    assert is_external(f"{project}/inner/a.py", project) is False
    assert is_external(f"{project}/escape/secret.txt", project) is True
    assert is_external(f"{project}/hop1", project) is True
    assert is_external(f"{project}/dangling", project) is True
    assert is_external(f"{project}/loop1", project) is False
    assert is_external(str(tree["outside"] / "secret.txt"), project) is True
    assert is_external(f"{project}/../outside", project) is True


def test_is_external_honours_extra_directories(tree: dict[str, Path]) -> None:
    project, outside = str(tree["project"]), str(tree["outside"])
    assert is_external(f"{outside}/secret.txt", project, [outside]) is False
    assert is_external(f"{project}/escape/secret.txt", project, [outside]) is False
    assert is_external(f"{outside}x/secret.txt", project, [outside]) is True


def test_project_reached_through_a_symlink_is_still_inside(tree: dict[str, Path]) -> None:
    alias = tree["root"] / "alias"
    alias.symlink_to(tree["project"])
    assert is_external(f"{alias}/src/a.py", str(alias)) is False
    forms = resolve("src/a.py", str(alias))
    assert is_external(forms, str(alias)) is False
    # Spelled through a link that lives outside the real root: external (either form
    # outside counts), which only ever makes a request stricter.
    assert is_external(forms, str(tree["project"])) is True


def test_is_external_accepts_path_forms_without_touching_them() -> None:
    forms = PathForms(lexical="/proj/a", resolved="/elsewhere/a")
    assert is_external(forms, "/proj") is True
    assert is_external(PathForms(lexical="/proj/a", resolved="/proj/b"), "/proj") is False


@pytest.mark.parametrize("bad", ["relative/x", "/a\x00b", "/a\udc80"])
def test_is_external_rejects_bad_paths(bad: str) -> None:
    with pytest.raises(ValueError):
        is_external(bad, "/proj")

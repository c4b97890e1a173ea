"""The watch for protected names made below the roots (sandbox/treewatch.py): what the
plan watches, and what the tail moves aside — and what it leaves alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

from askgate.policy.model import Surface
from askgate.sandbox import treewatch
from askgate.sandbox.planentry import _Source


def _blocked(_surface: Surface, path: str) -> bool:
    return not path.endswith("/allowed-name")


def test_only_literal_anywhere_tails_are_watched_and_rules_where_they_block() -> None:
    sources = [
        _Source("**/.envrc", "rule envrc", rule=True),
        _Source("**/.codex/**", "floor codex"),
        _Source("**/*.pth", "a glob: the user site's glob tripwires"),
        _Source("/abs/.npmrc", "rooted: a hole of its own"),
        _Source("**/allowed-name", "a rule the policy does not block", rule=True),
    ]
    tails = treewatch.literal_tails(sources, "/proj", _blocked)
    assert tails == [(".codex", "floor codex"), (".envrc", "rule envrc")]


def test_the_project_git_directory_is_left_to_its_holes_but_its_modules() -> None:
    git = "/p/.git"
    assert treewatch.excluded("/p/.git", git)
    assert treewatch.excluded("/p/.git/hooks", git)
    assert not treewatch.excluded("/p/.git/modules", git)
    assert not treewatch.excluded("/p/.git/modules/sub", git)
    assert treewatch.excluded("/p/.git/modules/sub/objects/ab", git)
    assert not treewatch.excluded("/p/vendor/lib/.git", git)
    assert treewatch.excluded("/p/vendor/lib/.git/refs/heads", git)
    assert not treewatch.excluded("/p/src", git)


def test_build_keeps_writable_unmasked_directories_named_as_mounted(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / ".git").mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    watch = treewatch.build(
        listed=[str(link), str(link / "src"), str(link / "hidden"), "/elsewhere"],
        real_roots=[(str(link), str(real))],
        writable=[str(real)],
        covered=[str(real / "hidden")],
        git_dir=str(real / ".git"),
        tails=[(".envrc", "why")],
        existing=[str(link / "src" / ".envrc")],
    )
    assert watch is not None
    assert watch.directories == (str(real), str(real / "src"))
    assert watch.existing == (str(real / "src" / ".envrc"),)
    assert watch.absent == (str(real / ".git" / "modules"),)


def _watch(root: Path, existing: list[str] | None = None) -> treewatch.TreeWatch:
    watch = treewatch.build(
        listed=[str(root), str(root / "sub")],
        real_roots=[(str(root), str(root))],
        writable=[str(root)],
        covered=[],
        git_dir=str(root / ".git"),
        tails=[(".envrc", "direnv runs it"), (".claude/settings.json", "registers")],
        existing=existing or [],
    )
    assert watch is not None
    return watch


def test_what_existed_is_never_moved_even_when_its_directory_changed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    kept = tmp_path / "sub" / ".envrc"
    kept.write_text("the user's\n")
    watch = _watch(tmp_path, existing=[str(kept)])
    recorded, since = treewatch.snapshot(watch), time.time()
    kept.write_text("rewritten (a rule allowed it)\n")
    (tmp_path / "sub" / "other.txt").write_text("x")
    assert treewatch.disarm_watch(watch, recorded, since) == []
    assert kept.read_text() == "rewritten (a rule allowed it)\n"


def test_a_lost_snapshot_counts_every_directory_as_changed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    watch = _watch(tmp_path)
    since = time.time()
    (tmp_path / "sub" / ".envrc").write_text("planted\n")
    lines = treewatch.disarm_watch(watch, None, since)
    assert len(lines) == 1 and not (tmp_path / "sub" / ".envrc").exists()
    assert (tmp_path / "sub" / ".envrc.askgate-blocked").read_text() == "planted\n"


def test_a_malformed_snapshot_counts_every_directory_as_changed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    watch = _watch(tmp_path)
    since = time.time()
    (tmp_path / "sub" / ".envrc").write_text("planted\n")
    assert treewatch.disarm_watch(watch, b"\x01\x02", since)
    assert not (tmp_path / "sub" / ".envrc").exists()


def test_a_sweep_after_the_run_leaves_what_was_made_after_it_ended(tmp_path: Path) -> None:
    """`until`: the run ended before the user made the file; a late sweep keeps it."""
    (tmp_path / "sub").mkdir()
    watch = _watch(tmp_path)
    recorded = treewatch.snapshot(watch)
    since = time.time()
    yours = tmp_path / "sub" / ".envrc"
    yours.write_text("made by you after the run\n")
    ended = os.lstat(yours).st_ctime - treewatch.CLOCK_SLACK_S - 1
    assert treewatch.disarm_watch(watch, recorded, since - 5, until=ended) == []
    assert yours.exists()


def test_a_name_through_a_new_git_directory_is_the_new_repositorys(tmp_path: Path) -> None:
    watch = treewatch.build(
        listed=[str(tmp_path)],
        real_roots=[(str(tmp_path), str(tmp_path))],
        writable=[str(tmp_path)],
        covered=[],
        git_dir=str(tmp_path / ".git"),
        tails=[(".git/config", "git config")],
        existing=[],
    )
    recorded, since = treewatch.snapshot(watch), time.time()
    (tmp_path / "made" / ".git").mkdir(parents=True)
    (tmp_path / "made" / ".git" / "config").write_text("[core]\n")
    assert treewatch.disarm_watch(watch, recorded, since) == []
    assert (tmp_path / "made" / ".git" / "config").exists()

"""The prepared wrapper's ctime check (unchanged.py): the real static program, run on
real directories, against the Python `changed()` the tail step uses."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.sandbox.placeholders import Registry
from askgate.sandbox.unchanged import (
    EXIT_FAILED,
    MISSING,
    UNKNOWN,
    changed,
    program,
    records,
    snapshot,
)
from waits import wait_until

pytestmark = pytest.mark.skipif(program() is None, reason="no ctime check for this architecture")

# A ctime this old is in an earlier tick of the coarse clock (a jiffy is at most 10 ms)
# than any change made from now on: the tests' changes are then always seen.
SETTLE_NS = 30_000_000


@pytest.fixture(scope="module")
def check(tmp_path_factory: pytest.TempPathFactory) -> str:
    code = program()
    assert code is not None
    path = tmp_path_factory.mktemp("program") / "unchanged"
    path.write_bytes(code)
    path.chmod(0o500)
    return str(path)


def run(check: str, data: bytes, where: Path) -> int:
    listed = where / "list"
    listed.write_bytes(data)
    return subprocess.run([check, str(listed)], capture_output=True, check=False).returncode


def settled(paths: Sequence[Path | str]) -> bytes:
    """The snapshot once every existing path's ctime is SETTLE_NS old (exact records)."""

    def exact() -> list[bytes] | None:  # a list: an empty snapshot is still an answer
        data = snapshot([str(path) for path in paths], recent_ns=SETTLE_NS, settle=False)
        return None if any(state == UNKNOWN for state, _ in records(data)) else [data]

    found = wait_until(exact, "the paths' ctimes to settle")
    assert isinstance(found, list)
    return found[0]


def outcome(check: str, data: bytes, where: Path) -> tuple[int, list[str]]:
    """The program's status and `changed()`, which must agree."""
    status, differ = run(check, data, where), changed(data)
    assert status == (1 if differ else 0), (status, differ)
    return status, differ


@pytest.fixture
def world(tmp_path: Path) -> Path:
    root = tmp_path / "world"
    for name in ("a", "b", "c"):
        (root / name).mkdir(parents=True)
    (root / "a" / "file").write_text("x")
    return root


def test_unchanged_directories_exit_0(check: str, world: Path, tmp_path: Path) -> None:
    data = settled([world / "a", world / "b", world / "a" / "file"])
    assert outcome(check, data, tmp_path) == (0, [])


def test_a_file_created_in_a_directory_is_a_change(check: str, world: Path, tmp_path: Path) -> None:
    data = settled([world / "a", world / "b"])
    (world / "b" / "new").write_text("")
    assert outcome(check, data, tmp_path) == (1, [str(world / "b")])


def test_a_file_renamed_out_changes_both_directories(
    check: str, world: Path, tmp_path: Path
) -> None:
    data = settled([world / "a", world / "b", world / "c"])
    os.rename(world / "a" / "file", world / "c" / "file")
    assert outcome(check, data, tmp_path) == (1, [str(world / "a"), str(world / "c")])


def test_a_chmod_is_a_change(check: str, world: Path, tmp_path: Path) -> None:
    data = settled([world / "a"])
    os.chmod(world / "a", 0o700)
    assert outcome(check, data, tmp_path) == (1, [str(world / "a")])


def test_the_mtime_set_back_still_reads_as_changed(check: str, world: Path, tmp_path: Path) -> None:
    """The forgery the program exists for: `touch -d` hides a change from `-nt`."""
    before = os.lstat(world / "a")
    data = settled([world / "a"])
    (world / "a" / "planted").write_text("")
    os.utime(world / "a", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.lstat(world / "a").st_mtime_ns == before.st_mtime_ns  # mtime looks untouched
    assert outcome(check, data, tmp_path) == (1, [str(world / "a")])


def test_a_directory_removed_is_a_change(check: str, world: Path, tmp_path: Path) -> None:
    data = settled([world / "b", world / "c"])
    (world / "c").rmdir()
    assert outcome(check, data, tmp_path) == (1, [str(world / "c")])


def test_a_path_missing_then_stays_missing_until_it_is_made(
    check: str, world: Path, tmp_path: Path
) -> None:
    absent, under_a_file = world / "later", world / "a" / "file" / "below"  # ENOTDIR
    data = settled([absent, under_a_file])
    assert [state for state, _ in records(data)] == [MISSING, MISSING]
    assert outcome(check, data, tmp_path) == (0, [])
    absent.mkdir()
    assert outcome(check, data, tmp_path) == (1, [str(absent)])


def test_a_symlink_is_watched_itself_not_its_target(
    check: str, world: Path, tmp_path: Path
) -> None:
    link = world / "link"
    link.symlink_to(world / "b")
    dangling = world / "dangling"
    dangling.symlink_to(world / "nowhere")
    data = settled([link, dangling])
    (world / "b" / "new").write_text("")  # the target changes, the link does not
    (world / "nowhere").mkdir()
    assert outcome(check, data, tmp_path) == (0, [])
    link.unlink()
    link.symlink_to(world / "b")  # the same target, another link
    assert outcome(check, data, tmp_path) == (1, [str(link)])


def test_a_path_that_cannot_be_looked_at_is_always_a_change(
    check: str, world: Path, tmp_path: Path
) -> None:
    """Any lstat error but ENOENT/ENOTDIR (root reads every mode: ENAMETOOLONG, ELOOP)."""
    (world / "loop").symlink_to(world / "loop")
    too_long, looping = str(world / ("x" * 300)), str(world / "loop" / "x")
    data = snapshot([too_long, looping])
    assert [state for state, _ in records(data)] == [UNKNOWN, UNKNOWN]
    assert outcome(check, data, tmp_path) == (1, [too_long, looping])


def test_an_unknown_record_reads_as_changed_even_for_a_settled_path(
    check: str, world: Path, tmp_path: Path
) -> None:
    data = settled([world / "a"])
    unknown = snapshot([str(world / "a")], recent_ns=10**18, settle=False)  # all recent
    assert records(unknown) == [(UNKNOWN, os.fsencode(world / "a"))]
    assert outcome(check, data, tmp_path) == (0, [])
    assert outcome(check, unknown, tmp_path) == (1, [str(world / "a")])


def test_a_ctime_from_this_tick_is_not_trusted_without_settling(check: str, tmp_path: Path) -> None:
    """A directory changed just now could change again in the same tick of a coarse
    clock and keep its ctime: unsettled, its record reads as changed."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    data = snapshot([str(fresh)], settle=False)
    assert records(data) == [(UNKNOWN, os.fsencode(fresh))]
    assert outcome(check, data, tmp_path) == (1, [str(fresh)])


def test_a_settled_snapshot_sees_a_change_made_right_after_it(check: str, tmp_path: Path) -> None:
    """The default: the snapshot waits for the coarse clock to pass the newest ctime, so a
    directory changed just before it is recorded exactly and a change right after it
    (the same tick, were it not for the wait) still reads as changed."""
    for attempt in range(200):
        fresh = tmp_path / f"fresh-{attempt}"
        fresh.mkdir()
        data = snapshot([str(fresh)])
        assert records(data)[0][0] != UNKNOWN
        assert outcome(check, data, tmp_path) == (0, [])
        (fresh / "made").mkdir()
        assert outcome(check, data, tmp_path) == (1, [str(fresh)])


def test_a_malformed_list_fails(check: str, world: Path, tmp_path: Path) -> None:
    data = settled([world / "a", world / "b"])
    first = len(records(data)[0][1]) + 17
    for bad in (data[:10], data[:16], data[:-1], data[:first] + data[first : first + 12]):
        assert run(check, bad, tmp_path) == EXIT_FAILED
        with pytest.raises(ValueError):
            changed(bad)


def test_no_list_or_an_unreadable_one_fails(check: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    for argv in ([], [str(tmp_path / "nonexistent")], [str(tmp_path)], [str(empty)] * 2):
        done = subprocess.run([check, *argv], capture_output=True, check=False)
        assert done.returncode == EXIT_FAILED, argv


def test_an_empty_list_is_unchanged(check: str, tmp_path: Path) -> None:
    assert outcome(check, b"", tmp_path) == (0, [])
    assert snapshot([]) == b""


def test_ten_thousand_records_are_read_to_the_end(check: str, world: Path, tmp_path: Path) -> None:
    paths = [world / "a", world / "b"] + [world / f"absent-{n}" for n in range(9_997)]
    data = settled([*paths, world / "c"])
    assert len(records(data)) == 10_000
    assert outcome(check, data, tmp_path) == (0, [])
    (world / "c" / "new").write_text("")  # the last record only
    assert outcome(check, data, tmp_path) == (1, [str(world / "c")])


def test_snapshot_refuses_relative_paths_and_nul() -> None:
    for bad in ("relative", "/a\0b"):
        with pytest.raises(ValueError):
            snapshot([bad])


def test_no_program_elsewhere_than_x86_64() -> None:
    assert program("aarch64") is None and program("AMD64") == program("x86_64")


KINDS = ("dir", "file", "missing", "symlink")
MUTATIONS = ("none", "create_inside", "chmod", "utime_back", "remove", "create", "write")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(MUTATIONS)), max_size=12))
def test_the_program_agrees_with_changed(check: str, plan: list[tuple[str, str]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="unchanged-world."))
    try:
        paths = []
        for index, (kind, _) in enumerate(plan):
            path = root / f"p{index}"
            if kind == "dir":
                path.mkdir()
            elif kind == "file":
                path.write_text("x")
            elif kind == "symlink":
                path.symlink_to(root)
            paths.append(path)
        data = settled(paths)
        expected = set()
        for path, (kind, mutation) in zip(paths, plan, strict=True):
            if mutate(path, kind, mutation):
                expected.add(str(path))
        status = run(check, data, root)
        assert status == (1 if changed(data) else 0)
        assert set(changed(data)) == expected
    finally:
        shutil.rmtree(root)


def mutate(path: Path, kind: str, mutation: str) -> bool:
    """Apply `mutation` where it means something for `kind`; whether the path changed."""
    if kind == "missing":
        if mutation == "create":
            path.mkdir()
            return True
        return False
    if mutation == "create_inside" and kind == "dir":
        before = os.lstat(path)
        (path / "new").write_text("")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        return True
    if mutation == "chmod" and kind != "symlink":
        os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) ^ 0o001)
        return True
    if mutation == "utime_back":
        before = os.lstat(path)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns), follow_symlinks=False)
        return True  # even an unchanged time, set, stamps the ctime
    if mutation == "remove":
        if kind == "dir":
            path.rmdir()
        else:
            path.unlink()
        return True
    if mutation == "write" and kind == "file":
        with open(path, "a") as handle:
            handle.write("more")
        return True
    return False


def test_the_registry_installs_a_check_that_works(tmp_path: Path) -> None:
    registry = Registry(str(tmp_path / "state"))
    path = registry.ensure_unchanged_check()
    assert path is not None and os.path.basename(path).startswith("unchanged-")
    assert os.stat(path).st_mode & 0o777 == 0o500 and os.path.exists(f"{path}.works")
    assert registry.ensure_unchanged_check() == path
    assert not [name for name in os.listdir(registry.directory) if "probe" in name]
    world = tmp_path / "watched"
    world.mkdir()
    data = settled([world])
    assert run(path, data, tmp_path) == 0
    (world / "new").write_text("")
    assert run(path, data, tmp_path) == 1

"""The prepared wrapper's static tee (static_tee.py): stdin to stdout and to a file."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from askgate.sandbox.static_tee import program

pytestmark = pytest.mark.skipif(program() is None, reason="no static tee for this architecture")


@pytest.fixture
def tee(tmp_path: Path) -> str:
    code = program()
    assert code is not None
    path = tmp_path / "tee"
    path.write_bytes(code)
    path.chmod(0o500)
    return str(path)


def test_every_byte_reaches_both_outputs(tee: str, tmp_path: Path) -> None:
    data = os.urandom(1_500_000) + b"\0\r\n" * 5000
    copy = tmp_path / "stderr"
    done = subprocess.run([tee, str(copy)], input=data, capture_output=True, check=False)
    assert done.returncode == 0 and done.stdout == data
    assert copy.read_bytes() == data
    assert copy.stat().st_mode & 0o777 == 0o600


def test_it_appends_and_an_empty_input_is_fine(tee: str, tmp_path: Path) -> None:
    copy = tmp_path / "stderr"
    copy.write_bytes(b"before\n")
    empty = subprocess.run([tee, str(copy)], input=b"", capture_output=True, check=False)
    more = subprocess.run([tee, str(copy)], input=b"after\n", capture_output=True, check=False)
    assert (empty.returncode, empty.stdout, more.returncode) == (0, b"", 0)
    assert copy.read_bytes() == b"before\nafter\n"


def test_a_reader_gone_still_leaves_the_whole_copy_and_exit_0(tee: str, tmp_path: Path) -> None:
    copy = tmp_path / "stderr"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([tee, str(copy)], input=b"x" * 200_000, stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 0 and copy.read_bytes() == b"x" * 200_000


def test_no_file_or_an_unopenable_one_is_exit_1(tee: str) -> None:
    assert subprocess.run([tee], input=b"x", check=False).returncode == 1
    missing = subprocess.run([tee, "/nonexistent/dir/f"], input=b"x", check=False)
    assert missing.returncode == 1


def test_output_streams_as_it_comes(tee: str, tmp_path: Path) -> None:
    """A first chunk reaches stdout before the input ends (an agent shows progress)."""
    with subprocess.Popen(
        [tee, str(tmp_path / "stderr")], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"first\n")
        proc.stdin.flush()
        assert proc.stdout.read(6) == b"first\n"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0

"""askgate.policy.trust: a project's policy file is trusted for its exact bytes only."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from askgate.policy.trust import (
    TrustError,
    is_trusted,
    is_trusted_digest,
    policy_digest,
    project_policy_path,
    read_regular_file,
    trust_project,
    trust_store_path,
    untrust_project,
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "data")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".askgate").mkdir(parents=True)
    (root / ".askgate" / "policy.toml").write_text('[bash]\n"make *" = "allow"\n')
    return root


def test_the_store_lives_under_xdg_data_home(env: dict[str, str], tmp_path: Path) -> None:
    assert trust_store_path(env) == str(tmp_path / "data" / "askgate" / "trusted.json")


def test_trusting_records_the_current_bytes_in_a_private_store(
    project: Path, env: dict[str, str]
) -> None:
    assert is_trusted(str(project), env) is False
    store = trust_project(str(project), env)
    assert is_trusted(str(project), env) is True
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    entry = json.loads(Path(store).read_text())["projects"][os.path.realpath(project)]
    data = Path(project_policy_path(str(project))).read_bytes()
    assert entry["sha256"] == policy_digest(data)
    assert is_trusted_digest(str(project), policy_digest(data), env) is True
    assert is_trusted_digest(str(project), policy_digest(data + b"\n"), env) is False


def test_editing_the_file_revokes_trust(project: Path, env: dict[str, str]) -> None:
    trust_project(str(project), env)
    (project / ".askgate" / "policy.toml").write_text('[bash]\n"*" = "allow"\n')
    assert is_trusted(str(project), env) is False


def test_a_root_reached_through_a_symlink_is_the_same_project(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(project)
    trust_project(str(alias), env)
    assert is_trusted(str(project), env) is True


def test_untrusting_forgets_and_reports_whether_anything_was_there(
    project: Path, env: dict[str, str]
) -> None:
    assert untrust_project(str(project), env) is False
    trust_project(str(project), env)
    assert untrust_project(str(project), env) is True
    assert is_trusted(str(project), env) is False


def test_no_policy_file_cannot_be_trusted(tmp_path: Path, env: dict[str, str]) -> None:
    with pytest.raises(TrustError, match="no project policy file"):
        trust_project(str(tmp_path), env)
    assert is_trusted(str(tmp_path), env) is False


def test_a_store_writable_by_others_trusts_nothing(project: Path, env: dict[str, str]) -> None:
    store = trust_project(str(project), env)
    os.chmod(store, 0o666)
    assert is_trusted(str(project), env) is False
    with pytest.raises(TrustError, match="writable by others"):
        trust_project(str(project), env)  # nor is it silently rewritten


def test_a_symlinked_store_trusts_nothing(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    store = trust_project(str(project), env)
    planted = tmp_path / "planted.json"
    os.replace(store, planted)
    os.symlink(planted, store)
    assert is_trusted(str(project), env) is False
    with pytest.raises(TrustError, match="symlink"):
        untrust_project(str(project), env)


@pytest.mark.parametrize(
    "content", [b"not json", b"[]", b'{"version": 99, "projects": {}}', b'{"version": 1}']
)
def test_a_corrupt_store_trusts_nothing_and_is_not_overwritten(
    project: Path, env: dict[str, str], content: bytes
) -> None:
    store = Path(trust_store_path(env))
    store.parent.mkdir(parents=True)
    store.write_bytes(content)
    os.chmod(store, 0o600)
    assert is_trusted(str(project), env) is False
    with pytest.raises(TrustError, match="corrupt"):
        trust_project(str(project), env)
    assert store.read_bytes() == content


def test_a_nul_in_the_root_is_an_error_not_a_trust(env: dict[str, str]) -> None:
    with pytest.raises(TrustError, match="NUL"):
        trust_project("/tmp/a\x00b", env)
    assert is_trusted("/tmp/a\x00b", env) is False


def test_read_regular_file_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    assert read_regular_file(str(tmp_path / "missing"), 10) is None
    (tmp_path / "f").write_bytes(b"0123456789abc")
    assert read_regular_file(str(tmp_path / "f"), 5) == b"012345"  # limit + 1: "too big"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        read_regular_file(str(tmp_path / "fifo"), 10)  # never blocks on a planted FIFO
    with pytest.raises(OSError):
        read_regular_file(str(tmp_path), 10)

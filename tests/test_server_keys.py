"""Canonical JSON, input digests, approval keys, the secret file and ntfy topics."""

from __future__ import annotations

import hashlib
import os
import re
import stat

import pytest
from hypothesis import given
from hypothesis import strategies as st

from askgate.server import keys

SECRET = b"s" * 32


def test_canonical_json_is_rfc8785() -> None:
    # Sorted keys, no whitespace, shortest number forms, UTF-8 kept as is.
    assert keys.canonical_json({"b": 1, "a": [1.0, "é", None, True]}) == (
        '{"a":[1,"é",null,true],"b":1}'.encode()
    )
    assert keys.canonical_json({"x": 1e21}) == b'{"x":1e+21}'


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), {"x": float("-inf")}, {1: "a"}, {"x": 2**60}, {"x": object()}],
    ids=["nan", "inf", "nested-inf", "int-key", "unsafe-int", "object"],
)
def test_values_without_a_canonical_form_are_refused(value: object) -> None:
    with pytest.raises(keys.CanonicalError):
        keys.input_digest(value)


def test_digest_ignores_key_order_and_whitespace_only() -> None:
    assert keys.input_digest({"a": 1, "b": "x"}) == keys.input_digest({"b": "x", "a": 1})
    assert keys.input_digest({"command": "ls"}) != keys.input_digest({"command": "ls "})
    expected = hashlib.sha256(b'{"command":"ls"}').hexdigest()
    assert keys.input_digest({"command": "ls"}) == expected


def _key(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "tenant": "t1",
        "approval_id": "appr-1",
        "digest": "d" * 64,
        "expires_at": 2_000_000_000,
    }
    base.update(overrides)
    return base


def test_a_key_verifies_only_for_its_own_fields() -> None:
    fields = _key()
    key = keys.approval_key(SECRET, *fields.values())  # type: ignore[arg-type]
    assert keys.verify_key(SECRET, key, **fields)  # type: ignore[arg-type]
    for name, other in [
        ("tenant", "t2"),
        ("approval_id", "appr-2"),
        ("digest", "e" * 64),
        ("expires_at", 2_000_000_001),
    ]:
        assert not keys.verify_key(SECRET, key, **_key(**{name: other})), name  # type: ignore[arg-type]
    assert not keys.verify_key(b"t" * 32, key, **fields)  # type: ignore[arg-type]


def test_the_encoding_is_injective_where_a_joined_string_is_not() -> None:
    # "a|b" + "c" and "a" + "b|c" join to the same delimited string; their keys differ.
    one = keys.approval_key(SECRET, "a|b", "c", "d" * 64, 1)
    two = keys.approval_key(SECRET, "a", "b|c", "d" * 64, 1)
    assert one != two


@pytest.mark.parametrize(
    "bad", ["", "nodot", "abc.def", "2000000000", "1." + "A" * 43, "x" * 500, "2000000000.é"]
)
def test_malformed_keys_do_not_verify(bad: str) -> None:
    assert not keys.verify_key(SECRET, bad, **_key())  # type: ignore[arg-type]


@given(st.text(max_size=60))
def test_no_random_key_verifies(candidate: str) -> None:
    assert not keys.verify_key(SECRET, candidate, **_key())  # type: ignore[arg-type]


def test_secret_file_is_created_0600_and_reused(tmp_path) -> None:
    path = str(tmp_path / "secret")
    first = keys.load_or_create_secret(path, env={})
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert len(first) >= 32
    assert keys.load_or_create_secret(path, env={}) == first


def test_secret_open_to_others_is_refused(tmp_path) -> None:
    path = tmp_path / "secret"
    keys.load_or_create_secret(str(path), env={})
    path.chmod(0o644)
    with pytest.raises(keys.SecretError, match="chmod 600"):
        keys.load_or_create_secret(str(path), env={})


def test_secret_from_env_must_be_long_enough(tmp_path) -> None:
    assert keys.load_or_create_secret("/nonexistent", env={"ASKGATE_SECRET": "x" * 40}) == b"x" * 40
    with pytest.raises(keys.SecretError):
        keys.load_or_create_secret("/nonexistent", env={"ASKGATE_SECRET": "short"})


def test_ntfy_topic_is_keyed_derived_and_valid() -> None:
    topic = keys.ntfy_topic(SECRET, "gh-12345")
    assert re.fullmatch(r"[-_A-Za-z0-9]{1,64}", topic)
    assert topic == keys.ntfy_topic(SECRET, "gh-12345")
    assert topic != keys.ntfy_topic(SECRET, "gh-12346")
    assert topic != keys.ntfy_topic(b"o" * 32, "gh-12345")
    # 26 base32 characters carry 130 bits.
    assert len(topic.split("-", 1)[1]) * 5 >= 128

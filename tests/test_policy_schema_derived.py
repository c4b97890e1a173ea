"""The policy file's JSON Schema is derived from the loader's own types, not written beside it.

`askgate.policy.schema.PolicyFileShape` (msgspec types) is the one description of the file:
the loader takes its key names from it, `askgate schema policy` prints
`msgspec.json.schema` of it. These tests hold the two to each other: every file the loader
accepts converts into the types, and the loader and the types refuse the same broken files.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import msgspec
import pytest

from askgate.policy import schema
from askgate.policy.model import Origin
from askgate.policy.policy_file import ConfigError, parse_policy_text

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(
    [
        *(ROOT / "src/askgate/policy/builtin/profiles").glob("*.toml"),
        *(ROOT / "src/askgate/policy/builtin/rules").glob("*.toml"),
        *(ROOT / "examples").glob("*.toml"),
    ]
)


def loader_accepts(text: str) -> bool:
    try:
        parse_policy_text(
            text,
            path="/p/policy.toml",
            origin=Origin.USER,
            rank_base=0,
            trusted=True,
            base_dir="/p",
            env={"HOME": "/home/u"},
        )
    except ConfigError:
        return False
    return True


def schema_accepts(text: str) -> bool:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(schema.policy_json_schema())
    return validator.is_valid(tomllib.loads(text))


def types_accept(text: str) -> bool:
    try:
        msgspec.convert(tomllib.loads(text), schema.PolicyFileShape)
    except msgspec.ValidationError:
        return False
    return True


def test_the_printed_schema_is_msgspecs_schema_of_the_types() -> None:
    printed = schema.policy_json_schema()
    generated = msgspec.json.schema(schema.PolicyFileShape)["$defs"]
    assert set(printed["properties"]) == set(generated["PolicyFile"]["properties"])
    assert printed["additionalProperties"] is False
    assert schema.PolicyFileShape.__struct_fields__ == schema.TOP_LEVEL_KEYS
    assert schema.RULE_KEYS == ("action", "reason", "match", "not_match")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_policy_file_fits_the_types(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert types_accept(text), path
    assert schema_accepts(text), path


GOOD = {
    "a plain rule": '[bash]\n"git status" = "allow"\n',
    "an inline rule": '[bash]\n"rm *" = { action = "deny", reason = "no", match = ["rm x"] }\n',
    "settings": 'default = "ask"\nyolo = false\nprofiles = ["read-only"]\n',
    "paths": 'extra_directories = ["/srv/data"]\n',
    "sandbox": '[sandbox]\nbash = "on"\nnetwork = false\nenvironment = ["LC_*", "PATH"]\n',
    "approvals": '[approvals]\nserver = "https://a.example"\nbudget = 30\n',
    "an agent": '[agent.codex.bash]\n"ls" = "allow"\n[agent.codex.sandbox]\nbash = "off"\n',
}
BAD = {
    "unknown top-level key": 'colour = "red"\n',
    "unknown surface under an agent": '[agent.codex.colour]\n"x" = "allow"\n',
    "a misspelt action": '[bash]\n"ls" = "alow"\n',
    "an inline rule without an action": '[bash]\n"ls" = { reason = "x" }\n',
    "an unknown rule key": '[bash]\n"ls" = { action = "allow", when = "x" }\n',
    "an empty reason": '[bash]\n"ls" = { action = "deny", reason = "" }\n',
    "an empty pattern": '[bash]\n"" = "allow"\n',
    "a control character in a pattern": '[bash]\n"ls\\u0007" = "allow"\n',
    "a bad default": 'default = "maybe"\n',
    "yolo as a string": 'yolo = "yes"\n',
    "a bad sandbox mode": '[sandbox]\nbash = "sometimes"\n',
    "an unknown sandbox key": '[sandbox]\ncolour = "on"\n',
    "a bad environment entry": '[sandbox]\nenvironment = ["A-B"]\n',
    "a zero approvals budget": "[approvals]\nbudget = 0\n",
    "an unknown approvals key": '[approvals]\nport = "1"\n',
    "a bad agent name": '[agent."a b".bash]\n"ls" = "allow"\n',
    "a bad profile name": 'profiles = ["Read Only"]\n',
}


@pytest.mark.parametrize("text", GOOD.values(), ids=GOOD.keys())
def test_a_file_the_loader_accepts_fits_the_types(text: str) -> None:
    assert loader_accepts(text)
    assert types_accept(text)
    assert schema_accepts(text)


@pytest.mark.parametrize("text", BAD.values(), ids=BAD.keys())
def test_a_file_the_loader_refuses_the_types_refuse_too(text: str) -> None:
    assert not loader_accepts(text)
    assert not types_accept(text)
    assert not schema_accepts(text)

"""Policy files: strict validation with line numbers, discovery, trust, merge."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.config import (
    ConfigError,
    LoadedPolicy,
    TrustError,
    discover_paths,
    find_project_root,
    is_trusted,
    load_policy,
    parse_policy_text,
    policy_json_schema,
    trust_project,
    trust_store_path,
    untrust_project,
)
from askgate.policy.model import Action, Origin, Surface
from askgate.policy.toml_lines import key_lines

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "policy.toml"


def parse(text: str, *, trusted: bool = True, path: str = "/cfg/policy.toml") -> Any:
    return parse_policy_text(
        text,
        path=path,
        origin=Origin.USER,
        rank_base=100,
        trusted=trusted,
        base_dir="/proj",
        env={"HOME": "/home/tester"},
    )


# --- strict validation: every error names file, line and key ------------------------

INVALID = [
    # (text, line, key, message fragment)
    ('default = "ask"\ndefualt = "ask"\n', 2, "defualt", "did you mean 'default'"),
    ("\n[bsh]\nls = 'allow'\n", 2, "bsh", "did you mean 'bash'"),
    ('[agent.rev.bsh]\n"ls" = "allow"\n', 1, "agent.rev.bsh", "unknown surface"),
    ('[bash]\n"ls *" = "allow"\n"rm *" = "alow"\n', 3, 'bash."rm *"', "invalid action"),
    ('yolo = "yes"\n', 1, "yolo", "expected true or false"),
    ("default = 1\n", 1, "default", "got integer"),
    ('bash = "allow"\n', 1, "bash", "expected a table"),
    ("[bash]\nls = 1\n", 2, "bash.ls", "got integer"),
    ("[bash]\nls = ['allow']\n", 2, "bash.ls", "got array"),
    ('extra_directories = "/x"\n', 1, "extra_directories", "expected an array"),
    ("extra_directories = ['/a', 2]\n", 1, "extra_directories", "entry 2"),
    ('[read]\n"" = "deny"\n', 2, 'read.""', "pattern is empty"),
    ('[bash]\n"' + "x" * 1001 + '" = "deny"\n', 2, None, "longer than 1000"),
    ('[bash]\n"a\\u0001b" = "deny"\n', 2, 'bash."a\\u0001b"', "control character"),
    ('[bash]\n"a\\u0000b" = "deny"\n', 2, 'bash."a\\u0000b"', "control character"),
    ('[bash]\n"a\\nb" = "deny"\n', 2, 'bash."a\\nb"', "control character"),
    (
        '[bash]\n"npm *" = { action = "deny", because = "x" }\n',
        2,
        'bash."npm *".because',
        "unknown key",
    ),
    ('[bash]\n"npm *" = { reason = "x" }\n', 2, 'bash."npm *"', "needs an action"),
    ('[bash]\n"npm *" = { action = "deny", reason = "" }\n', 2, 'bash."npm *".reason', "empty"),
    ('[bash]\n"npm *" = { action = "deny", reason = 3 }\n', 2, 'bash."npm *".reason', "string"),
    (
        '[bash]\n"npm *" = { action = "deny", reason = "' + "r" * 501 + '" }\n',
        2,
        'bash."npm *".reason',
        "longer than 500",
    ),
    (
        '[bash]\n"npm *" = { action = "deny", reason = "two\\nlines" }\n',
        2,
        'bash."npm *".reason',
        "one line",
    ),
    ('[bash]\n"npm *" = { action = "maybe" }\n', 2, 'bash."npm *".action', "invalid action"),
    ('[agent."bad name".bash]\nls = "allow"\n', 1, 'agent."bad name"', "agent name"),
    ('agent = "reviewer"\n', 1, "agent", "expected [agent.NAME.SURFACE]"),
    ('[agent.rev]\nbash = "deny"\n', 2, "agent.rev.bash", "expected a table"),
    # dotted keys at top level and inside a table resolve to the right line
    ('# c\nbash."git *" = 3\n', 2, 'bash."git *"', "got integer"),
    ('[agent]\nrev.write."**" = "nope"\n', 2, 'agent.rev.write."**"', "invalid action"),
    # keys inside multi-line values must not confuse the line finder
    (
        'infrastructure_read_paths = [\n  "/a",\n  "/b = c",\n]\nx = 1\n',
        5,
        "x",
        "unknown key",
    ),
    (
        "[bash]\n'ls *' = 'allow'\n\"l\\\"s\" = 'x'\n",
        3,
        'bash."l\\"s"',
        "invalid action",
    ),
]


@pytest.mark.parametrize(("text", "line", "key", "fragment"), INVALID)
def test_validation_error_names_file_line_and_key(
    text: str, line: int, key: str | None, fragment: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    error = caught.value
    assert error.path == "/cfg/policy.toml"
    assert error.line == line
    if key is not None:
        assert error.key == key
    assert fragment in error.message
    rendered = str(error)
    assert "\n" not in rendered
    assert rendered.startswith(f"/cfg/policy.toml:{line}: ")
    if key is not None:
        assert rendered == f"/cfg/policy.toml:{line}: {key}: {error.message}"


def test_multiline_strings_are_skipped_by_the_line_finder() -> None:
    text = 'default = "ask"\n[bash]\n"a" = { action = "deny", reason = "x" }\n'
    text += '[read]\n"~/x" = "deny"\n[write]\n"b" = "allow"\n"c" = "nah"\n'
    with pytest.raises(ConfigError) as caught:
        parse(text)
    assert caught.value.line == 8
    lines = key_lines('a = \'\'\'\n[bash]\nx = 1\n\'\'\'\nb = """\n\\"""\nc = 2"""\nd = 1\n')
    assert lines == {("a",): 1, ("b",): 5, ("d",): 8}


def test_key_lines_cover_headers_inline_tables_and_arrays_of_tables() -> None:
    text = (
        "# top\n"
        "[ agent . 'x.y' . bash ]  # spaced header\n"
        '"git *" = { action = "deny", reason = "r" }\n'
        "[[weird]]\n"
        "k = [1, [2, 3], { z = 1 }]\n"
    )
    lines = key_lines(text)
    assert lines[("agent", "x.y", "bash")] == 2
    assert lines[("agent",)] == 2
    assert lines[("agent", "x.y", "bash", "git *")] == 3
    assert lines[("agent", "x.y", "bash", "git *", "reason")] == 3
    assert lines[("weird", "k")] == 5


@pytest.mark.parametrize(
    ("text", "line"),
    [("[bash\nls = 'allow'\n", 1), ('default = "ask"\n\nyolo = \n', 3), ("a = 1\na = 2\n", 2)],
)
def test_toml_syntax_error_uses_tomllib_line(text: str, line: int) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(text)
    assert caught.value.line == line
    assert caught.value.key is None
    assert str(caught.value).startswith(f"/cfg/policy.toml:{line}: TOML syntax error: ")
    assert "(at line" not in str(caught.value)


def test_error_text_is_one_line_even_for_hostile_names() -> None:
    error = ConfigError("/p\nq", 3, 'bash."a\nb"', "bad\rthing")
    assert str(error) == '/p\\nq:3: bash."a\\nb": bad\\rthing'
    assert str(ConfigError("/p", None, None, "m")) == "/p: m"


def test_valid_file_yields_rules_with_lines_ranks_and_reasons() -> None:
    policy = parse(
        'default = "deny"\nyolo = false\n'
        'extra_directories = ["~/lib", "../sib", "/abs//x/"]\n'
        '[bash]\n"git *" = "allow"\n"npm *" = { action = "deny", reason = "use pnpm" }\n'
        '[agent.reviewer.write]\n"**" = "deny"\n'
    )
    assert policy.default is Action.DENY and policy.yolo is False
    assert policy.extra_directories == ("/home/tester/lib", "/sib", "/abs/x")
    by_pattern = {rule.pattern: rule for rule in policy.rules}
    assert by_pattern["git *"].line == 5 and by_pattern["git *"].rank == 100
    assert by_pattern["npm *"].reason == "use pnpm" and by_pattern["npm *"].line == 6
    agent_rule = by_pattern["**"]
    assert (agent_rule.agent, agent_rule.origin, agent_rule.rank) == (
        "reviewer",
        Origin.USER_AGENT,
        300,
    )
    assert agent_rule.surface is Surface.WRITE and agent_rule.base_dir == "/proj"


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"[]{}\"=.\n ab*#,'\\", '"deny"', "bash", "agent", "action", '"""'])
    ).map("".join)
)
def test_arbitrary_text_raises_only_config_error(text: str) -> None:
    try:
        parse(text)
    except ConfigError as error:
        assert "\n" not in str(error)


# --- bytes on disk: garbage, encodings, size, odd file types ------------------------


@dataclass
class World:
    home: Path
    project: Path
    managed: Path
    env: dict[str, str]

    @property
    def user_file(self) -> Path:
        return self.home / ".config" / "askgate" / "policy.toml"

    @property
    def project_file(self) -> Path:
        return self.project / ".askgate" / "policy.toml"

    def write(self, path: Path, text: str | bytes) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path

    def load(self, **options: Any) -> LoadedPolicy:
        return load_policy(str(self.project / "sub"), env=self.env, **options)


@pytest.fixture
def world(tmp_path: Path) -> World:
    home = tmp_path / "home"
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "sub").mkdir()
    home.mkdir()
    managed = tmp_path / "etc" / "policy.toml"
    env = {"HOME": str(home), "ASKGATE_MANAGED_POLICY": str(managed)}
    return World(home=home, project=project, managed=managed, env=env)


@pytest.mark.parametrize(
    ("payload", "fragment", "line"),
    [
        (bytes(range(256)) * 4, "not valid UTF-8", 2),  # first bad byte after \\n
        (b'default = "ask"\n\n[bash]\n"\xff\xfe" = "deny"\n', "not valid UTF-8", 4),
        (b"\x00\x01\x02garbage", "NUL byte", 1),
        (b"# " + b"x" * (1024 * 1024) + b"\n", "larger than", None),
    ],
)
def test_unusable_bytes_are_errors(
    world: World, payload: bytes, fragment: str, line: int | None
) -> None:
    world.write(world.user_file, payload)
    loaded = world.load()
    assert len(loaded.errors) == 1
    error = loaded.errors[0]
    assert error.path == str(world.user_file) and fragment in error.message
    assert error.line == line
    assert loaded.files == () and loaded.rules == ()


def test_file_just_under_the_size_limit_loads(world: World) -> None:
    body = '[bash]\n"ls" = "allow"\n'
    world.write(world.user_file, body + "#" * (1024 * 1024 - len(body) - 1) + "\n")
    loaded = world.load()
    assert loaded.errors == () and [r.pattern for r in loaded.rules] == ["ls"]


def test_utf8_bom_is_accepted(world: World) -> None:
    world.write(world.user_file, b'\xef\xbb\xbfdefault = "deny"\n')
    assert world.load().default is Action.DENY


def test_fifo_or_directory_in_place_of_a_policy_does_not_hang(world: World) -> None:
    world.user_file.parent.mkdir(parents=True)
    os.mkfifo(world.user_file)
    world.managed.mkdir(parents=True)
    loaded = world.load()
    assert sorted(e.path for e in loaded.errors) == sorted(
        [str(world.user_file), str(world.managed)]
    )
    assert all("not a regular file" in e.message or "directory" in e.message for e in loaded.errors)


# --- discovery, scopes, ranks, merge ------------------------------------------------


def test_find_project_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    (repo / ".git").write_text("gitdir: elsewhere\n")  # worktrees use a .git file
    assert find_project_root(str(repo / "a" / "b")) == str(repo)
    assert find_project_root(str(repo / "a" / ".." / "a")) == str(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_project_root(str(plain)) == str(plain)


def test_discover_paths_in_scope_order(world: World) -> None:
    env = {**world.env, "XDG_CONFIG_HOME": str(world.home / "xdg")}
    assert discover_paths(str(world.project / "sub"), env) == [
        (Origin.USER, str(world.home / "xdg" / "askgate" / "policy.toml")),
        (Origin.PROJECT, str(world.project_file)),
        (Origin.MANAGED, str(world.managed)),
    ]
    relative_xdg = {**world.env, "XDG_CONFIG_HOME": "relative"}  # ignored per XDG spec
    assert discover_paths(str(world.project), relative_xdg)[0][1] == str(world.user_file)
    no_home = {"ASKGATE_MANAGED_POLICY": str(world.managed)}
    assert [origin for origin, _ in discover_paths(str(world.project), no_home)] == [
        Origin.PROJECT,
        Origin.MANAGED,
    ]
    assert discover_paths(str(world.project), {"HOME": "/h"})[-1][1] == "/etc/askgate/policy.toml"


def layered(world: World) -> None:
    world.write(
        world.user_file,
        'default = "allow"\nyolo = true\n[bash]\n"u *" = "allow"\n'
        '[agent.rev.bash]\n"ua *" = "deny"\n[agent.other.bash]\n"uo *" = "deny"\n',
    )
    world.write(
        world.project_file,
        'default = "deny"\nextra_directories = ["../lib"]\n[bash]\n"p *" = "allow"\n'
        '[agent.rev.bash]\n"pa *" = "ask"\n',
    )
    world.write(world.managed, '[bash]\n"m *" = "deny"\n[agent.rev.bash]\n"ma *" = "deny"\n')


def test_scopes_rank_in_documented_order(world: World) -> None:
    layered(world)
    trust_project(str(world.project), world.env)
    loaded = world.load(agent="rev")
    assert loaded.errors == () and loaded.warnings == ()
    summary = [(rule.pattern, rule.origin, rule.rank) for rule in loaded.rules]
    assert summary == [
        ("u *", Origin.USER, 100),
        ("p *", Origin.PROJECT, 200),
        ("ua *", Origin.USER_AGENT, 300),
        ("pa *", Origin.PROJECT_AGENT, 400),
        ("m *", Origin.MANAGED, 600),
        ("ma *", Origin.MANAGED_AGENT, 800),
    ]
    assert all(rule.base_dir == str(world.project) for rule in loaded.rules)
    assert (loaded.default, loaded.default_origin) == (Action.DENY, Origin.PROJECT)
    assert loaded.yolo is True
    assert loaded.extra_directories == (str(world.project.parent / "lib"),)
    assert loaded.project_root == str(world.project) and loaded.agent == "rev"


def test_agent_sections_load_only_for_the_named_agent(world: World) -> None:
    layered(world)
    trust_project(str(world.project), world.env)
    other = {rule.pattern for rule in world.load(agent="other").rules}
    assert other == {"u *", "p *", "m *", "uo *"}
    assert {rule.pattern for rule in world.load().rules} == {"u *", "p *", "m *"}


def test_higher_scope_settings_win_and_managed_can_turn_yolo_off(world: World) -> None:
    world.write(world.user_file, 'yolo = true\ndefault = "allow"\n')
    world.write(world.managed, 'yolo = false\ndefault = "ask"\n')
    loaded = world.load()
    assert loaded.yolo is False
    assert (loaded.default, loaded.default_origin) == (Action.ASK, Origin.MANAGED)
    world.managed.unlink()
    assert world.load().yolo is True


def test_nothing_configured_defaults_to_ask(world: World) -> None:
    loaded = world.load()
    assert (loaded.default, loaded.default_origin, loaded.yolo) == (
        Action.ASK,
        Origin.BUILTIN,
        False,
    )
    assert loaded.files == () and loaded.errors == ()


def test_config_files_replace_discovery_but_managed_still_applies(world: World) -> None:
    layered(world)
    first = world.write(
        world.home / "a.toml", '[bash]\n"a *" = "allow"\n[agent.rev.bash]\n"aa" = "deny"\n'
    )
    second = world.write(
        world.home / "b.toml", '[bash]\n"b *" = "ask"\n[agent.rev.bash]\n"ba" = "deny"\n'
    )
    loaded = load_policy(
        str(world.project), config_files=[str(first), str(second)], agent="rev", env=world.env
    )
    assert loaded.errors == ()
    summary = [(rule.pattern, rule.origin, rule.rank) for rule in loaded.rules]
    assert summary == [
        ("a *", Origin.CONFIG, 100),
        ("b *", Origin.CONFIG, 102),
        ("aa", Origin.CONFIG_AGENT, 300),
        ("ba", Origin.CONFIG_AGENT, 301),
        ("m *", Origin.MANAGED, 600),
        ("ma *", Origin.MANAGED_AGENT, 800),
    ]
    assert all(policy.trusted for policy in loaded.files)


def test_relative_and_missing_config_files(world: World) -> None:
    world.write(world.project / "sub" / "local.toml", 'default = "deny"\n')
    loaded = load_policy(
        str(world.project / "sub"), config_files=["local.toml", "nope.toml"], env=world.env
    )
    assert loaded.default is Action.DENY
    assert [(e.path, e.message) for e in loaded.errors] == [
        (str(world.project / "sub" / "nope.toml"), "file not found")
    ]


def test_one_bad_file_is_reported_and_the_rest_still_load(world: World) -> None:
    layered(world)
    world.write(world.project_file, "[bash\n")
    loaded = world.load(agent="rev")
    assert [e.path for e in loaded.errors] == [str(world.project_file)]
    assert {rule.origin for rule in loaded.rules} == {
        Origin.USER,
        Origin.USER_AGENT,
        Origin.MANAGED,
        Origin.MANAGED_AGENT,
    }


# --- project trust ------------------------------------------------------------------


def test_untrusted_project_loads_only_deny_and_ask(world: World) -> None:
    world.write(
        world.project_file,
        'default = "allow"\nyolo = true\nextra_directories = ["/"]\n'
        'infrastructure_read_paths = ["/"]\n'
        '[bash]\n"rm *" = "deny"\n"git *" = "allow"\n"curl *" = "ask"\n'
        '[agent.rev.write]\n"**" = "allow"\n"secret/**" = "deny"\n',
    )
    loaded = world.load(agent="rev")
    assert loaded.errors == ()
    assert {(r.pattern, r.action, r.trusted) for r in loaded.rules} == {
        ("rm *", Action.DENY, False),
        ("curl *", Action.ASK, False),
        ("secret/**", Action.DENY, False),
    }
    assert loaded.yolo is False and loaded.default is Action.ASK
    assert loaded.extra_directories == () and loaded.infrastructure_read_paths == ()
    assert len(loaded.warnings) == 1 and "not trusted" in loaded.warnings[0]
    assert "askgate trust" in loaded.warnings[0] and "\n" not in loaded.warnings[0]
    (policy,) = loaded.files
    assert policy.trusted is False and "yolo" in policy.ignored
    assert 'bash."git *" = allow' in policy.ignored


def test_untrusted_project_is_still_strictly_validated(world: World) -> None:
    world.write(world.project_file, '[bash]\n"x" = "allow"\n"y" = "sometimes"\n')
    (error,) = world.load().errors
    assert (error.path, error.line, error.key) == (str(world.project_file), 3, "bash.y")


def test_trust_round_trip_and_editing_revokes(world: World) -> None:
    world.write(world.project_file, 'yolo = true\n[bash]\n"git *" = "allow"\n')
    root = str(world.project)
    assert is_trusted(root, world.env) is False
    store = trust_project(root, world.env)
    assert (
        store
        == trust_store_path(world.env)
        == str(world.home / ".local" / "share" / "askgate" / "trusted.json")
    )
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    assert is_trusted(root, world.env) is True
    loaded = world.load()
    assert loaded.yolo is True and loaded.warnings == ()
    assert [(r.pattern, r.trusted) for r in loaded.rules] == [("git *", True)]

    world.write(world.project_file, 'yolo = true\n[bash]\n"git *" = "allow"\n"x" = "allow"\n')
    assert is_trusted(root, world.env) is False
    assert world.load().yolo is False

    trust_project(root, world.env)
    assert untrust_project(root, world.env) is True
    assert untrust_project(root, world.env) is False
    assert is_trusted(root, world.env) is False


def test_trust_honours_xdg_data_home_and_keeps_other_projects(world: World, tmp_path: Path) -> None:
    env = {**world.env, "XDG_DATA_HOME": str(tmp_path / "data")}
    other = tmp_path / "other"
    world.write(other / ".askgate" / "policy.toml", "yolo = true\n")
    world.write(world.project_file, "yolo = true\n")
    assert trust_project(str(other), env) == str(tmp_path / "data" / "askgate" / "trusted.json")
    trust_project(str(world.project), env)
    assert is_trusted(str(other), env) and is_trusted(str(world.project), env)
    assert not is_trusted(str(world.project), world.env)  # a different store


def test_trust_errors_and_corrupt_store_trust_nothing(world: World) -> None:
    with pytest.raises(TrustError, match="no project policy file"):
        trust_project(str(world.project), world.env)
    world.write(world.project_file, "yolo = true\n")
    store = Path(trust_store_path(world.env))
    world.write(store, "{not json")
    assert is_trusted(str(world.project), world.env) is False
    with pytest.raises(TrustError, match="corrupt"):
        trust_project(str(world.project), world.env)
    store.unlink()
    trust_project(str(world.project), world.env)
    os.chmod(store, 0o666)  # writable by others: not to be believed
    assert is_trusted(str(world.project), world.env) is False


# --- JSON Schema --------------------------------------------------------------------


def _schema_errors(
    schema: dict[str, Any], value: Any, root: dict[str, Any], at: str = "$"
) -> list[str]:
    """A tiny validator for the JSON Schema keywords the policy schema uses."""
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return _schema_errors(target, value, root, at)
    if "oneOf" in schema:
        passing = [s for s in schema["oneOf"] if not _schema_errors(s, value, root, at)]
        return [] if len(passing) == 1 else [f"{at}: oneOf matched {len(passing)}"]
    if "anyOf" in schema:
        passing = [s for s in schema["anyOf"] if not _schema_errors(s, value, root, at)]
        return [] if passing else [f"{at}: anyOf matched none"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        return [f"{at}: not in enum"]
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "number": int | float}
    if "type" in schema and not isinstance(value, kinds[schema["type"]]):
        return [f"{at}: not {schema['type']}"]
    if isinstance(value, str):
        errors += _string_errors(schema, value, at)
    if isinstance(value, list):
        if len(value) > schema.get("maxItems", len(value)):
            errors.append(f"{at}: too many items")
        for index, item in enumerate(value):
            errors += _schema_errors(schema.get("items", {}), item, root, f"{at}[{index}]")
    if isinstance(value, dict):
        errors += [f"{at}: missing {k}" for k in schema.get("required", []) if k not in value]
        for key, item in value.items():
            errors += _string_errors(schema.get("propertyNames", {}), key, f"{at}.{key}")
            if key in schema.get("properties", {}):
                errors += _schema_errors(schema["properties"][key], item, root, f"{at}.{key}")
            elif schema.get("additionalProperties") is False:
                errors.append(f"{at}.{key}: not allowed")
            elif isinstance(schema.get("additionalProperties"), dict):
                extra = schema["additionalProperties"]
                errors += _schema_errors(extra, item, root, f"{at}.{key}")
    return errors


def _string_errors(schema: dict[str, Any], value: str, at: str) -> list[str]:
    errors = []
    if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1 << 30):
        errors.append(f"{at}: bad length")
    pattern = schema.get("pattern")
    if pattern and not re.fullmatch(pattern.removeprefix("^").removesuffix("$"), value):
        errors.append(f"{at}: pattern")
    return errors


def test_example_policy_loads_and_matches_the_schema(world: World) -> None:
    loaded = load_policy(str(world.project), config_files=[str(EXAMPLE)], env=world.env)
    assert loaded.errors == ()
    assert len(loaded.rules) > 30
    assert any(r.reason == "use pnpm" for r in loaded.rules)
    lines = EXAMPLE.read_text().splitlines()
    for rule in loaded.rules:  # every rule points at the line that wrote it
        assert rule.line is not None and f'"{rule.pattern}"' in lines[rule.line - 1]
    schema = policy_json_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert _schema_errors(schema, tomllib.loads(EXAMPLE.read_text()), schema) == []


SCHEMA_CASES = [
    'default = "deny"\n',
    "yolo = true\nextra_directories = ['/a', '~/b']\n",
    '[mcp]\n"gh:*" = { action = "ask", reason = "why" }\n',
    '[agent."a.b-c_1".skill]\n"*" = "deny"\n',
    "dfault = 'ask'\n",
    "[bash]\nls = 'maybe'\n",
    "[bash]\nls = { action = 'deny', why = 'x' }\n",
    "[bash]\nls = { reason = 'x' }\n",
    "[bash]\nls = { action = 'deny', reason = '  ' }\n",
    "[agent.a.dflt]\nx = 'deny'\n",
    "[agent.'a b'.bash]\nx = 'deny'\n",
    '[bash]\n"a\\u0007" = "deny"\n',
    "yolo = 1\n",
    "extra_directories = ['']\n",
]


@pytest.mark.parametrize("text", SCHEMA_CASES)
def test_schema_and_loader_agree(text: str) -> None:
    schema = policy_json_schema()
    schema_ok = not _schema_errors(schema, tomllib.loads(text), schema)
    try:
        parse(text)
        loader_ok = True
    except ConfigError:
        loader_ok = False
    assert schema_ok is loader_ok


def test_schema_is_a_fresh_copy() -> None:
    policy_json_schema()["properties"].clear()
    assert "bash" in policy_json_schema()["properties"]

"""One policy file: strict parsing and validation into `Rule`s and settings.

Every error is a `ConfigError` whose text is a single line naming the file, the line and
the TOML key (`/p/policy.toml:14: bash."rm *": invalid action "alow" …`). `tomllib` gives
no positions, so lines come from `toml_lines`, a scanner over the already-valid text.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import msgspec

from askgate.policy.examples import MAX_EXAMPLES_PER_RULE, RuleExample, example_matches
from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.paths import fold_lexically, home_directory, is_inside, normalize
from askgate.policy.patterns import validate_pattern
from askgate.policy.sandbox_table import SandboxTable, SandboxTableError, parse_sandbox_table
from askgate.policy.schema import (
    AGENT_NAME,
    APPROVALS_KEYS,
    MAX_AGENT_NAME_LENGTH,
    MAX_FILE_BYTES,
    MAX_LIST_ITEMS,
    MAX_PATH_ENTRY_LENGTH,
    MAX_PATTERN_LENGTH,
    MAX_REASON_LENGTH,
    PATH_LIST_KEYS,
    PROFILE_NAME,
    RULE_KEYS,
    SURFACE_NAMES,
    TOP_LEVEL_KEYS,
)
from askgate.policy.toml_lines import KeyPath, key_lines, line_of
from askgate.policy.trust import policy_digest

# Agent sections rank this far above their file's base rules unless told otherwise.
AGENT_RANK_OFFSET = 200

_AGENT_ORIGIN = {
    Origin.USER: Origin.USER_AGENT,
    Origin.PROJECT: Origin.PROJECT_AGENT,
    Origin.MANAGED: Origin.MANAGED_AGENT,
    Origin.CONFIG: Origin.CONFIG_AGENT,
}
_CONTROL = frozenset(chr(code) for code in (*range(32), 127)) - {"\t"}


def one_line(text: str) -> str:
    """`text` with every non-printable character escaped, so an error stays one line."""
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape", "backslashreplace").decode()
        for char in text
    )


class ConfigError(Exception):
    """A policy file that cannot be used. `str()` is `<path>:<line>: <key>: <message>`."""

    def __init__(self, path: str, line: int | None, key: str | None, message: str) -> None:
        super().__init__(path, line, key, message)
        self.path = path
        self.line = line
        self.key = key
        self.message = message

    def __str__(self) -> str:
        location = one_line(self.path) + (f":{self.line}" if self.line is not None else "")
        parts = [location, one_line(self.key)] if self.key else [location]
        return ": ".join([*parts, one_line(self.message)])


class PolicyFile(msgspec.Struct, frozen=True, kw_only=True):
    """One parsed policy file; for an untrusted file only what loaded is kept."""

    path: str
    origin: Origin
    rank_base: int
    trusted: bool
    rules: tuple[Rule, ...]  # every agent's sections included; load_policy filters
    default: Action | None = None
    yolo: bool | None = None
    infrastructure_read_paths: tuple[str, ...] = ()
    extra_directories: tuple[str, ...] = ()
    agent_rank: int = 0
    sha256: str = ""  # of the file's bytes ("" when parsed from text)
    ignored: tuple[str, ...] = ()  # keys an untrusted file set that did not load
    profiles: tuple[str, ...] = ()  # built-in profiles the file selects (trusted files only)
    profiles_line: int | None = None
    examples: tuple[RuleExample, ...] = ()  # every rule example, each checked
    # [sandbox] and [agent.NAME.sandbox] (policy/sandbox_table.py); kept for untrusted
    # files too, since an untrusted table may only tighten (merge_sandbox_tables).
    sandbox: SandboxTable | None = None
    agent_sandbox: tuple[tuple[str, SandboxTable], ...] = ()


# --- parsing and validation ---------------------------------------------------------


def _render_key(path: KeyPath) -> str:
    rendered = []
    for part in path:
        is_bare = part and all(char.isascii() and (char.isalnum() or char in "_-") for char in part)
        rendered.append(part if is_bare else msgspec.json.encode(part).decode())
    return ".".join(rendered)


def _toml_type(value: object) -> str:
    names = {bool: "boolean", str: "string", int: "integer", float: "float"}
    names |= {dict: "table", list: "array"}
    return names.get(type(value), type(value).__name__)


class _FileParser:
    def __init__(
        self, *, text: str, path: str, env: Mapping[str, str] | None, base_dir: str
    ) -> None:
        self.text = text
        self.path = path
        self.env = env
        self.base_dir = base_dir
        self.examples: list[RuleExample] = []
        self._lines: dict[KeyPath, int] | None = None
        self.agent_sandbox: list[tuple[str, SandboxTable]] = []

    def sandbox(self, key: KeyPath, value: object) -> SandboxTable:
        """A `[sandbox]` table (policy/sandbox_table.py), errors with file:line."""
        try:
            return parse_sandbox_table(
                value,
                normalize_path=lambda entry: normalize(entry, self.base_dir, self.env),
                validate_glob=lambda entry: validate_pattern(Surface.READ, entry),
                max_items=MAX_LIST_ITEMS,
                max_length=MAX_PATH_ENTRY_LENGTH,
            )
        except SandboxTableError as error:
            self.fail((*key, error.key) if error.key else key, error.message)

    def line(self, key: KeyPath) -> int | None:
        if self._lines is None:
            self._lines = key_lines(self.text)
        return line_of(self._lines, key)

    def fail(self, key: KeyPath, message: str) -> NoReturn:
        raise ConfigError(self.path, self.line(key), _render_key(key) if key else None, message)

    def action(self, key: KeyPath, value: object) -> Action:
        if not isinstance(value, str):
            self.fail(key, f'expected "allow", "deny" or "ask", got {_toml_type(value)}')
        try:
            return Action(value)
        except ValueError:
            quoted = msgspec.json.encode(value).decode()
            self.fail(key, f"invalid action {quoted} (expected allow, deny or ask)")

    def reason(self, key: KeyPath, value: object) -> str:
        if not isinstance(value, str):
            self.fail(key, f"reason must be a string, got {_toml_type(value)}")
        if not value.strip():
            self.fail(key, "reason is empty")
        if len(value) > MAX_REASON_LENGTH:
            self.fail(key, f"reason is longer than {MAX_REASON_LENGTH} characters")
        if any(char in _CONTROL for char in value):
            self.fail(key, "reason contains a control character (it must be one line)")
        return value

    def pattern(self, surface: Surface, key: KeyPath, pattern: str) -> None:
        if not pattern:
            self.fail(key, "pattern is empty")
        if len(pattern) > MAX_PATTERN_LENGTH:
            self.fail(key, f"pattern is longer than {MAX_PATTERN_LENGTH} characters")
        if any(char in _CONTROL for char in pattern):
            self.fail(key, "pattern contains a control character")
        try:
            validate_pattern(surface, pattern)
        except ValueError as error:
            self.fail(key, str(error) or "invalid pattern")
        except Exception as error:  # a pattern that crashes the compiler is not a rule
            self.fail(key, f"invalid pattern ({type(error).__name__})")

    def surface_rules(
        self, surface: Surface, key: KeyPath, table: object
    ) -> list[tuple[Surface, str, Action, str | None, int | None]]:
        if not isinstance(table, dict):
            self.fail(key, f'expected a table of "pattern" = action, got {_toml_type(table)}')
        rules = []
        for pattern, value in table.items():
            rule_key = (*key, pattern)
            self.pattern(surface, rule_key, pattern)
            reason = None
            if isinstance(value, dict):
                unknown = sorted(set(value) - set(RULE_KEYS))
                if unknown:
                    self.fail((*rule_key, unknown[0]), f"unknown key (only {', '.join(RULE_KEYS)})")
                if "action" not in value:
                    self.fail(rule_key, "inline table needs an action")
                action = self.action((*rule_key, "action"), value["action"])
                if "reason" in value:
                    reason = self.reason((*rule_key, "reason"), value["reason"])
                for field in ("match", "not_match"):
                    if field in value:
                        self.rule_examples(surface, rule_key, pattern, field, value[field])
            elif isinstance(value, str):
                action = self.action(rule_key, value)
            else:
                self.fail(
                    rule_key, f"expected an action or {{ action, reason }}, got {_toml_type(value)}"
                )
            rules.append((surface, pattern, action, reason, self.line(rule_key)))
        return rules

    def rule_examples(
        self, surface: Surface, rule_key: KeyPath, pattern: str, field: str, value: object
    ) -> None:
        key = (*rule_key, field)
        if not isinstance(value, list):
            self.fail(key, f"expected an array of examples, got {_toml_type(value)}")
        if len(value) > MAX_EXAMPLES_PER_RULE:
            self.fail(key, f"more than {MAX_EXAMPLES_PER_RULE} examples")
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str) or not item.strip():
                self.fail(key, f"example {index} must be a non-empty string")
            if len(item) > MAX_PATTERN_LENGTH or any(char in _CONTROL for char in item):
                self.fail(key, f"example {index} is too long or contains a control character")
            try:
                matched = example_matches(
                    surface, pattern, item, base_dir=self.base_dir, env=self.env
                )
            except ValueError as error:
                self.fail(key, f"example {index}: {error}")
            should_match = field == "match"
            agent = rule_key[1] if rule_key[0] == "agent" else None
            self.examples.append(
                RuleExample(
                    surface=surface,
                    pattern=pattern,
                    value=item,
                    should_match=should_match,
                    passed=matched == should_match,
                    line=self.line(key) or self.line(rule_key),
                    key=_render_key(rule_key),
                    agent=agent,
                )
            )

    def profile_names(self, key: KeyPath, value: object) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.fail(key, f"expected an array of profile names, got {_toml_type(value)}")
        from askgate.policy.shipped import profile_names  # only files that select profiles

        known = profile_names()
        names: list[str] = []
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str) or not PROFILE_NAME.fullmatch(item):
                self.fail(key, f"entry {index} must be a profile name (a-z 0-9 -)")
            if item not in known:
                self.fail(key, _unknown(f"profile {item!r}", item, known))
            if item not in names:
                names.append(item)
        return tuple(names)

    def path_list(self, key: KeyPath, value: object, base_dir: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.fail(key, f"expected an array of paths, got {_toml_type(value)}")
        if len(value) > MAX_LIST_ITEMS:
            self.fail(key, f"more than {MAX_LIST_ITEMS} entries")
        paths: list[str] = []
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str) or not item:
                self.fail(key, f"entry {index} must be a non-empty string")
            if len(item) > MAX_PATH_ENTRY_LENGTH:
                self.fail(key, f"entry {index} is longer than {MAX_PATH_ENTRY_LENGTH} characters")
            if any(char in _CONTROL for char in item):
                self.fail(key, f"entry {index} contains a control character")
            try:
                normalized = normalize(item, base_dir, self.env)
            except ValueError as error:
                self.fail(key, f"entry {index}: {error}")
            if normalized not in paths:
                paths.append(normalized)
        return tuple(paths)

    def no_sweeping_roots(self, key: KeyPath, paths: Sequence[str]) -> None:
        """Refuse an infrastructure read path that is `/`, the home directory or one of
        its ancestors: every read below it (~/.ssh included) would skip the human."""
        try:
            home: str | None = fold_lexically(home_directory(self.env))
        except ValueError:
            home = None
        for index, path in enumerate(paths, start=1):
            if path == "/" or (home is not None and (home == path or is_inside(home, path))):
                self.fail(
                    key,
                    f"entry {index} ({path}) covers the whole filesystem or home directory;"
                    " name the agent's own directories instead (~/.claude, …)",
                )

    def approvals_table(self, value: object) -> None:
        if not isinstance(value, dict):
            self.fail(("approvals",), f"expected a table, got {_toml_type(value)}")
        for name, item in value.items():
            kind = APPROVALS_KEYS.get(name)
            if kind is None:
                self.fail(("approvals", name), _unknown("key", name, tuple(APPROVALS_KEYS)))
            number = isinstance(item, int | float) and not isinstance(item, bool)
            if (kind == "string" and not isinstance(item, str)) or (
                kind == "number" and not (number and 0 < item <= 86400)
            ):
                wanted = "a string" if kind == "string" else "a number of seconds in (0, 86400]"
                self.fail(("approvals", name), f"expected {wanted}, got {item!r}"[:200])

    def agent_rules(self, value: object) -> list[tuple[str, list[Any]]]:
        if not isinstance(value, dict):
            self.fail(("agent",), f"expected [agent.NAME.SURFACE] tables, got {_toml_type(value)}")
        sections = []
        for name, tables in value.items():
            key = ("agent", name)
            if not AGENT_NAME.fullmatch(name) or len(name) > MAX_AGENT_NAME_LENGTH:
                self.fail(key, "agent name must be 1-128 of A-Z a-z 0-9 _ . -")
            if not isinstance(tables, dict):
                self.fail(key, f"expected [agent.{name}.SURFACE] tables, got {_toml_type(tables)}")
            for surface_name, table in tables.items():
                if surface_name == "sandbox":
                    self.agent_sandbox.append((name, self.sandbox((*key, "sandbox"), table)))
                    continue
                if surface_name not in SURFACE_NAMES:
                    self.fail(
                        (*key, surface_name), _unknown("surface", surface_name, SURFACE_NAMES)
                    )
                rules = self.surface_rules(Surface(surface_name), (*key, surface_name), table)
                sections.append((name, rules))
        return sections


def _unknown(kind: str, name: str, choices: Sequence[str]) -> str:
    import difflib  # only on the error path

    close = difflib.get_close_matches(name, choices, n=1)
    hint = (
        f" (did you mean {close[0]!r}?)" if close else f" (expected one of: {', '.join(choices)})"
    )
    return f"unknown {kind}{hint}"


def _toml_syntax_error(path: str, error: tomllib.TOMLDecodeError) -> ConfigError:
    message = str(error)
    line = None
    marker = message.rfind(" (at line ")
    if marker >= 0:
        line_text = message[marker + len(" (at line ") :].split(",", 1)[0]
        line = int(line_text) if line_text.isdigit() else None
        message = message[:marker]
    return ConfigError(path, line, None, f"TOML syntax error: {message}")


def parse_policy_text(
    text: str,
    *,
    path: str,
    origin: Origin,
    rank_base: int,
    trusted: bool,
    base_dir: str,
    agent_rank: int | None = None,
    env: Mapping[str, str] | None = None,
    sha256: str = "",
    check_examples: bool = True,
) -> PolicyFile:
    """Parse and strictly validate one policy file; raise ConfigError naming line and key.

    An untrusted file is validated in full but keeps only its deny and ask rules (marked
    `trusted=False`); its allows and settings (profile selections included) are listed in
    `ignored`. A rule example that does not behave as written is an error unless
    `check_examples` is False (`askgate config test` collects them all instead).
    """
    if len(text) > MAX_FILE_BYTES:
        raise ConfigError(path, None, None, f"file is larger than {MAX_FILE_BYTES} bytes")
    text = text.removeprefix("\ufeff")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _toml_syntax_error(path, error) from None
    except (ValueError, RecursionError) as error:
        raise ConfigError(path, None, None, f"cannot parse: {error}") from None
    base_dir = fold_lexically(base_dir)
    parser = _FileParser(text=text, path=path, env=env, base_dir=base_dir)
    sandbox: SandboxTable | None = None
    agent_rank = rank_base + AGENT_RANK_OFFSET if agent_rank is None else agent_rank
    settings: dict[str, Any] = {}
    sections: list[tuple[str | None, list[Any]]] = []
    for key, value in document.items():
        if key == "default":
            settings[key] = parser.action((key,), value)
        elif key == "yolo":
            if not isinstance(value, bool):
                parser.fail((key,), f"expected true or false, got {_toml_type(value)}")
            settings[key] = value
        elif key in PATH_LIST_KEYS:
            settings[key] = parser.path_list((key,), value, base_dir)
            if key == "infrastructure_read_paths" and trusted:  # untrusted: ignored anyway
                parser.no_sweeping_roots((key,), settings[key])
        elif key == "profiles":
            settings[key] = parser.profile_names((key,), value)
        elif key in SURFACE_NAMES:
            sections.append((None, parser.surface_rules(Surface(key), (key,), value)))
        elif key == "agent":
            sections.extend(parser.agent_rules(value))
        elif key == "sandbox":
            sandbox = parser.sandbox((key,), value)
        elif key == "approvals":
            parser.approvals_table(value)  # read by prompters/server.py (user, managed only)
        else:
            parser.fail((key,), _unknown("key", key, TOP_LEVEL_KEYS))

    failed = [example for example in parser.examples if not example.passed]
    if failed and check_examples:
        first = failed[0]
        what = "does not match" if first.should_match else "matches (it is under not_match)"
        more = f" (and {len(failed) - 1} more failing examples)" if len(failed) > 1 else ""
        raise ConfigError(
            path, first.line, first.key, f"example {first.value!r} {what} the pattern{more}"
        )
    ignored = [] if trusted else [_render_key((key,)) for key in settings]
    if not trusted:  # an untrusted [sandbox] only tightens (sandbox_table.merge_sandbox_tables)
        tables = [(("sandbox",), sandbox)] + [
            (("agent", name, "sandbox"), table) for name, table in parser.agent_sandbox
        ]
        ignored += [_render_key((*key, "writable")) for key, t in tables if t and t.writable]
    rules: list[Rule] = []
    for agent, entries in sections:
        for surface, pattern, action, reason, line in entries:
            if not trusted and action is Action.ALLOW:
                prefix = ("agent", agent, surface.value) if agent else (surface.value,)
                ignored.append(f"{_render_key((*prefix, pattern))} = allow")
                continue
            rules.append(
                Rule(
                    surface=surface,
                    pattern=pattern,
                    action=action,
                    origin=_AGENT_ORIGIN.get(origin, origin) if agent else origin,
                    rank=agent_rank if agent else rank_base,
                    source=path,
                    line=line,
                    reason=reason,
                    agent=agent,
                    trusted=trusted,
                    base_dir=base_dir,
                )
            )
    if not trusted:
        settings = {}
    return PolicyFile(
        path=path,
        origin=origin,
        rank_base=rank_base,
        trusted=trusted,
        rules=tuple(rules),
        default=settings.get("default"),
        yolo=settings.get("yolo"),
        infrastructure_read_paths=settings.get("infrastructure_read_paths", ()),
        extra_directories=settings.get("extra_directories", ()),
        agent_rank=agent_rank,
        sha256=sha256,
        ignored=tuple(ignored),
        profiles=settings.get("profiles", ()),
        profiles_line=parser.line(("profiles",)) if "profiles" in settings else None,
        examples=tuple(parser.examples),
        sandbox=sandbox,
        agent_sandbox=tuple(parser.agent_sandbox),
    )


def parse_policy_bytes(data: bytes, **options: Any) -> PolicyFile:
    """`parse_policy_text` for raw file bytes: size limit and strict UTF-8 first."""
    path = options["path"]
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(path, None, None, f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ConfigError(path, line, None, "file is not valid UTF-8 text") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ConfigError(path, line, None, "file contains a NUL byte (binary?)")
    return parse_policy_text(text, sha256=policy_digest(data), **options)

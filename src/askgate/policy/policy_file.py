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

from askgate.policy.model import Action, Origin, Rule, Surface
from askgate.policy.paths import fold_lexically, home_directory, is_inside, normalize
from askgate.policy.sandbox_table import SandboxTable, SandboxTableError, parse_sandbox_table
from askgate.policy.schema import (
    AGENT_NAME,
    MAX_AGENT_NAME_LENGTH,
    MAX_FILE_BYTES,
    MAX_LIST_ITEMS,
    MAX_PATH_ENTRY_LENGTH,
    MAX_PATTERN_LENGTH,
    MAX_REASON_LENGTH,
    PATH_LIST_KEYS,
    SURFACE_NAMES,
    TOP_LEVEL_KEYS,
)
from askgate.policy.toml_lines import KeyPath, key_lines, line_of
from askgate.policy.trust import policy_digest

try:
    from askgate.policy.patterns import validate_pattern
except ImportError:  # pragma: no cover - only while patterns.py is being written

    def validate_pattern(surface: Surface, pattern: str) -> None:
        if not pattern:
            raise ValueError("pattern is empty")
        if "\x00" in pattern:
            raise ValueError("pattern contains a NUL byte")


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
    def __init__(self, *, text: str, path: str, env: Mapping[str, str] | None) -> None:
        self.text = text
        self.path = path
        self.env = env
        self._lines: dict[KeyPath, int] | None = None
        self.base_dir = "/"
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
                unknown = sorted(set(value) - {"action", "reason"})
                if unknown:
                    self.fail((*rule_key, unknown[0]), "unknown key (only action and reason)")
                if "action" not in value:
                    self.fail(rule_key, "inline table needs an action")
                action = self.action((*rule_key, "action"), value["action"])
                if "reason" in value:
                    reason = self.reason((*rule_key, "reason"), value["reason"])
            elif isinstance(value, str):
                action = self.action(rule_key, value)
            else:
                self.fail(
                    rule_key, f"expected an action or {{ action, reason }}, got {_toml_type(value)}"
                )
            rules.append((surface, pattern, action, reason, self.line(rule_key)))
        return rules

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
) -> PolicyFile:
    """Parse and strictly validate one policy file; raise ConfigError naming line and key.

    An untrusted file is validated in full but keeps only its deny and ask rules (marked
    `trusted=False`); its allows and settings are listed in `ignored`.
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
    parser = _FileParser(text=text, path=path, env=env)
    base_dir = parser.base_dir = fold_lexically(base_dir)
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
        elif key in SURFACE_NAMES:
            sections.append((None, parser.surface_rules(Surface(key), (key,), value)))
        elif key == "agent":
            sections.extend(parser.agent_rules(value))
        elif key == "sandbox":
            sandbox = parser.sandbox((key,), value)
        else:
            parser.fail((key,), _unknown("key", key, TOP_LEVEL_KEYS))

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

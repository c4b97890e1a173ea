"""Immutable value types shared by every part of the policy engine.

Kept free of behaviour so that the config loader, the shell analyser and the
evaluator can all import them without importing each other.
"""

from __future__ import annotations

from enum import StrEnum

import msgspec


class Action(StrEnum):
    """What a rule says. Ordered by strictness: allow < ask < deny."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"

    @property
    def strictness(self) -> int:
        return _STRICTNESS[self]

    @staticmethod
    def strictest(*actions: Action) -> Action:
        return max(actions, key=_STRICTNESS.__getitem__)


_STRICTNESS = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}


class Surface(StrEnum):
    """Which kind of value a rule matches."""

    TOOL = "tool"
    BASH = "bash"
    READ = "read"
    WRITE = "write"
    ENV = "env"  # a secret environment variable's name (policy/shell/environment.py)
    EXTERNAL_DIRECTORY = "external_directory"
    MCP = "mcp"
    SKILL = "skill"
    NET = "net"  # HOST:PORT a tool or command connects to (policy/net.py)

    @property
    def is_path(self) -> bool:
        return self in PATH_SURFACES


PATH_SURFACES = frozenset({Surface.READ, Surface.WRITE, Surface.EXTERNAL_DIRECTORY})


class Origin(StrEnum):
    """The scope a rule came from, lowest to highest precedence within a discovery."""

    BUILTIN = "builtin"
    USER = "user"
    PROJECT = "project"
    USER_AGENT = "user-agent"
    PROJECT_AGENT = "project-agent"
    MANAGED = "managed"
    MANAGED_AGENT = "managed-agent"
    CONFIG = "config"  # a file named with --config
    CONFIG_AGENT = "config-agent"


class Rule(msgspec.Struct, frozen=True, kw_only=True):
    """One `pattern = action` line of a policy file.

    `rank` orders scopes: a rule can only be overridden by a narrower rule of equal
    or higher rank (an equal pattern needs a strictly higher rank). `trusted=False`
    marks rules from an untrusted project file: they load only as deny/ask and
    override nothing.
    """

    surface: Surface
    pattern: str
    action: Action
    origin: Origin
    rank: int
    source: str = ""  # file the rule came from ("" for built-in or programmatic rules)
    line: int | None = None
    reason: str | None = None
    agent: str | None = None  # set for [agent.NAME.SURFACE] rules
    trusted: bool = True
    # Relative path patterns are resolved against this root when compiled.
    base_dir: str | None = None


class Unit(msgspec.Struct, frozen=True, kw_only=True):
    """One command of a shell string that can run, as the policy sees it.

    `command` is the primary form: words unquoted and joined by single spaces, with
    wrappers (`env`, `timeout`, `VAR=x` …) stripped. It is the only form an allow
    rule can match. `alternates` are further spellings of the same command (the
    command as written before normalisation, the basename of `/bin/rm`, git with
    its global options removed …): they can make the unit stricter (a matching deny
    or ask applies) but never allow it.
    """

    command: str
    alternates: tuple[str, ...] = ()
    # Raw path words as written in the command; resolved later against `cwd`.
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    # Directory the unit runs in when an earlier `cd` in the same command changed it
    # (absolute, or relative to the request's cwd); None = the request's cwd.
    cwd: str | None = None
    # Further directories the unit may run in (a `cd` that may have failed, branches
    # that end in different places): relative paths are checked under each too.
    # "" = the request's cwd.
    other_cwds: tuple[str, ...] = ()
    # Words whose role is unknown (arguments of programs the analysis does not know,
    # option and environment values, file operands of inline code): each that names
    # a path (has a `/`, or exists under a possible cwd) is checked as a read and as
    # a write, where the write can only tighten.
    operands: tuple[str, ...] = ()
    # Directories read recursively (grep -r, find, tar c …): a read deny or ask rule
    # whose literal root lies inside one makes the unit ask.
    recursive_reads: tuple[str, ...] = ()
    # Commands a program unknown to the analysis may run: the tails of its arguments
    # (`setarch x86_64 curl …` may run `curl …`). A deny or ask rule matching one makes
    # the unit ask.
    may_run: tuple[str, ...] = ()
    # Path words above that are unquoted globs (`src/*.py`): the engine expands them
    # when it decides (bounded) and checks what they name.
    globbed: tuple[str, ...] = ()
    # At least this strict, whatever the rules say (opaque construct, wrapper, parse
    # trouble). None = no floor.
    floor: Action | None = None
    floor_reason: str | None = None
    # Where in the command the unit sits, for explanations: "command", "pipeline",
    # "command substitution", "subshell", "bash -c", "find -exec" …
    context: str = "command"
    # Directories written with everything below them (`rm -r D`, `mv D x`, `cp -r s D`,
    # `patch -d D`): a write deny or ask rule whose literal root lies inside one, or
    # whose pattern names the directory itself (`**/.claude/…` for `.claude`), applies.
    recursive_writes: tuple[str, ...] = ()
    # Why the unit touches files nobody has named (`find . | xargs cat`, `tar -T list`):
    # any read or write deny/ask rule of the policy could apply to them, so it asks.
    unknown_names: str = ""
    # The words of `command` when one holds a space (`curl -H 'Accept: text/html' …`),
    # for the network tools' hosts (shell/network.py); () when `command.split(" ")`
    # gives them.
    words: tuple[str, ...] = ()


class ShellAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """Every unit of one command string; `floor` applies to the command as a whole."""

    source: str
    units: tuple[Unit, ...]
    floor: Action | None = None
    floor_reason: str | None = None


class RuleRef(msgspec.Struct, frozen=True, kw_only=True):
    """The rule that decided, as reported in decisions, events and the audit log."""

    surface: Surface
    pattern: str
    action: Action
    origin: Origin
    source: str = ""
    line: int | None = None
    reason: str | None = None
    agent: str | None = None

    @classmethod
    def of(cls, rule: Rule) -> RuleRef:
        return cls(
            surface=rule.surface,
            pattern=rule.pattern,
            action=rule.action,
            origin=rule.origin,
            source=rule.source,
            line=rule.line,
            reason=rule.reason,
            agent=rule.agent,
        )


class Basis(StrEnum):
    """Why a check has its action."""

    RULE = "rule"  # a rule matched
    DEFAULT = "default"  # nothing matched: the policy's default
    FLOOR = "floor"  # the analysis requires at least this (opaque construct, wrapper …)
    IGNORED = "ignored"  # a matching allow that cannot loosen (e.g. on a path it reads)


class Check(msgspec.Struct, frozen=True, kw_only=True):
    """One (surface, value) lookup that contributed to a decision."""

    surface: Surface
    value: str
    action: Action
    rule: RuleRef | None  # None: nothing matched, the default (or a floor) applied
    basis: Basis = Basis.RULE
    note: str | None = None


class UnitDecision(msgspec.Struct, frozen=True, kw_only=True):
    """The verdict for one shell unit (or the single value of a non-bash request)."""

    command: str
    action: Action
    rule: RuleRef | None
    reason: str
    checks: tuple[Check, ...] = ()
    context: str = "command"


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """What the policy says about a request, before any human is asked."""

    action: Action
    reason: str
    surface: Surface
    value: str
    rule: RuleRef | None
    units: tuple[UnitDecision, ...] = ()
    checks: tuple[Check, ...] = ()
    # Set when a config file failed to load and allows were clamped to ask.
    clamped: bool = False

"""`askgate import claude-code [SETTINGS...] [-o FILE]`: Claude Code's permissions as an
askgate policy file that decides the same way.

Claude Code's `permissions` (`allow`, `ask`, `deny`, `defaultMode`,
`additionalDirectories`) are read from each SETTINGS file (default: the user file, then
the project's `.claude/settings.json` and `.claude/settings.local.json`, those that
exist). What each rule kind becomes:

| Claude Code                      | askgate                                             |
|----------------------------------|-----------------------------------------------------|
| `Bash`, `Bash(*)`                | `[bash] "*"`                                        |
| `Bash(npm run test:*)`           | `[bash] "npm run test *"` (legacy `:*` = ` *`)     |
| `Bash(git status)`, `Bash(a * b)`| `[bash]` the same text (`*` spans anything in both) |
| `Read(//abs)`, `Read(~/x)`       | `[read] "/abs"`, `"~/x"`                           |
| `Read(/x)`, `Read(./x)`          | `[read] "x"` (relative to the project root)        |
| `Read(.env)`, `Read(id_rsa)`     | `[read] "**/.env"` (a bare name: any depth)        |
| deny/ask `Read(secrets/**)`      | `[read] "**/secrets/**"` (deny/ask: any depth)     |
| `Read`, `Edit` (whole tool)      | `[read] "/**"`, `[write] "/**"`                    |
| `Edit(path)`                     | `[write]` path, converted as for Read              |
| `mcp__server__tool`, `mcp__server`| `[mcp] "server:tool"`, `"server:*"`               |
| any other whole tool (`WebFetch`)| `[tool] "WebFetch"`                                 |
| `WebFetch(domain:example.com)`   | `[net] "example.com"` (every port; `match` example) |
| `WebFetch(domain:*.example.com)` | `[net] "*.example.com"` (subdomains, not the apex)  |
| `additionalDirectories`          | `extra_directories`                                 |
| `defaultMode: dontAsk`           | `default = "deny"`                                  |
| `defaultMode: bypassPermissions` | `yolo = true` (asks become allow; denies stay),     |
|                                  | from the user file only (ignored in a project's)    |
| `defaultMode: acceptEdits`       | `[write] "**" = "allow"` plus each added directory  |

The file selects askgate's `read-only` profile: Claude Code runs its own read-only
commands (`ls`, `cat`, `grep`, `git status`, …) without asking, and an import that left
them out would ask about every one.

Claude Code evaluates deny, then ask, then allow, and the first match wins, so an allow
can never carve an exception out of a deny; in askgate a narrower rule overrides a wider
one. So a rule nested inside a stricter rule of the same surface (`allow Bash(git status)`
under `deny Bash(git *)`) is left out, and listed: Claude Code would never apply it.

A `domain:` rule becomes a `[net]` rule, and askgate has one host list: it also decides the
hosts `curl`, `git` and MCP arguments name and, with `[sandbox] network = "policy"`, what
a sandboxed command reaches (a host rule can only make a shell command stricter, never
allow a program the bash rules do not).

Not expressible (listed with the reason, never guessed): a `*` inside a domain that does not
start it (`api.*.example.com`: one label in Claude Code, any run in askgate), a domain
with a port or that is no host name, other specifiers askgate has no surface for,
`Write(path)` (Claude Code ignores path rules on Write), a `?` in a Bash rule (a literal in
Claude Code, a wildcard in askgate), `defaultMode` `plan` and `auto`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

ACTIONS = ("allow", "ask", "deny")
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
SURFACE_ORDER = ("tool", "bash", "read", "write", "external_directory", "mcp", "skill", "net")
READ_TOOLS = ("Read",)
EDIT_TOOLS = ("Edit",)
PATHLESS_FILE_TOOLS = ("Write", "MultiEdit", "NotebookEdit")
_RULE = re.compile(r"^([A-Za-z0-9_\-]+)(?:\((.*)\))?$", re.DOTALL)


@dataclass(frozen=True)
class Converted:
    surface: str
    pattern: str
    action: str
    rule: str  # the Claude Code rule it came from
    source: str  # settings file
    examples: tuple[str, ...] = ()  # values the pattern must match (checked at load)


@dataclass(frozen=True)
class Skipped:
    rule: str
    action: str
    source: str
    reason: str


@dataclass
class Conversion:
    rules: list[Converted] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    default: str | None = None
    default_why: str = ""
    yolo: bool = False
    extra_directories: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=lambda: ["read-only"])
    profiles_why: str = "Claude Code's built-in read-only commands ask nothing"
    rule_prefix: str = "Claude Code rule "  # a deny's reason: prefix + the source rule

    def add(self, result: list[Converted] | Skipped | None) -> None:
        """What converting one source rule gave: its rules, or why it was left out."""
        if isinstance(result, Skipped):
            self.skipped.append(result)
        elif result:
            self.rules.extend(result)


class ImportError_(Exception):
    """One line for the user; exit 2."""


# --- one rule ---------------------------------------------------------------------------


def convert_path(spec: str, action: str = "allow") -> str:
    """A Read/Edit specifier (gitignore style) as an askgate path glob. As in gitignore and
    Claude Code, a bare name (no `/` but a trailing one) matches at any depth, and for
    deny and ask a one-segment directory pattern (`secrets/**`) does too."""
    bare = not spec.startswith(("/", "./", "~"))
    name = spec.rstrip("/")
    if bare and name and "/" not in name:
        return "**/" + name + ("/**" if spec.endswith("/") else "")
    first, sep, rest = spec.partition("/")
    if bare and action != "allow" and sep and first and rest == "**":
        return f"**/{first}/**"
    if spec.startswith("//"):
        path = spec[1:]
    elif spec.startswith("~/") or spec == "~":
        path = spec
    elif spec.startswith("/"):
        path = spec[1:] or "**"  # relative to the project root
    elif spec.startswith("./"):
        path = spec[2:] or "**"
    else:
        path = spec
    if path.endswith("/") and len(path) > 1:
        path += "**"  # gitignore: a directory and everything below it
    return path


def convert_bash(spec: str) -> str:
    if spec.endswith(":*"):
        prefix = spec[:-2]
        return f"{prefix} *" if prefix else "*"
    return spec


def convert_domain(spec: str) -> tuple[str, str] | str:
    """Claude Code's `WebFetch(domain:HOST)` specifier as a `[net]` pattern and a host it
    must match, or why it cannot be one. Claude Code matches the host name, case folded,
    without a trailing dot; a leading `*.` covers any subdomains (as `*` does in askgate),
    a `*` elsewhere one label only (askgate has no such wildcard: not converted)."""
    from askgate.policy.net import normalize_host

    kind, sep, host = spec.strip().partition(":")
    if kind != "domain" or not sep:
        return "a WebFetch specifier other than domain:HOST"
    host = host.strip().lower().rstrip(".")
    if host == "*":
        return "*", "example.com"
    name = host.removeprefix("*.")
    if any(char in name for char in "*?"):
        return "a '*' inside a domain is one label in Claude Code, any run in askgate"
    if ":" in name or "/" in name:
        return "a domain with a port or a path (Claude Code matches the host name only)"
    try:
        normalize_host(name)
    except ValueError:
        return f"{name!r} is not a host name"
    return host, ("www." + name if host.startswith("*.") else name)


def convert_rule(text: str, action: str, source: str) -> list[Converted] | Skipped:
    def skip(reason: str) -> Skipped:
        return Skipped(text, action, source, reason)

    def out(surface: str, *patterns: str) -> list[Converted]:
        return [Converted(surface, p, action, text, source) for p in patterns]

    if not isinstance(text, str) or not text.strip():
        return skip("not a rule string")
    text = text.strip()
    match = _RULE.match(text)
    if match is None:
        return skip("not of the form Tool or Tool(specifier)")
    tool, spec = match.group(1), match.group(2)
    if tool.startswith("mcp__"):
        if spec is not None:
            return skip("MCP rules take no specifier")
        server, sep, name = tool[5:].partition("__")
        if not server:
            return skip("malformed MCP tool name")
        return out("mcp", f"{server}:{name if sep and name else '*'}")
    whole = spec is None or spec.strip() in ("", "*")
    if tool == "Bash":
        if whole:
            return out("bash", "*")
        assert spec is not None
        if "?" in spec:
            return skip("'?' is a literal in Claude Code but one character in askgate")
        if ":*" in spec[:-2]:
            return skip("':*' may only end a Claude Code rule")
        return out("bash", convert_bash(spec))
    if tool in READ_TOOLS + EDIT_TOOLS:
        surface = "read" if tool in READ_TOOLS else "write"
        return out(surface, "/**" if whole else convert_path(str(spec), action))
    if whole:
        return out("tool", tool)
    if tool in PATHLESS_FILE_TOOLS:
        return skip(f"Claude Code ignores path rules on {tool} (only Edit and Read take paths)")
    if tool == "WebFetch":
        domain = convert_domain(str(spec))
        if isinstance(domain, str):
            return skip(domain)
        pattern, example = domain
        return [Converted("net", pattern, action, text, source, examples=(example,))]
    return skip(f"askgate has no surface for {tool} specifiers")


# --- a whole settings file ------------------------------------------------------------------


def convert_settings(
    conversion: Conversion, settings: dict[str, Any], source: str, *, project: bool = False
) -> None:
    """`project`: a project's `.claude/settings*.json` (not the user's own file)."""
    conversion.sources.append(source)
    permissions = settings.get("permissions", {})
    if not isinstance(permissions, dict):
        raise ImportError_(f"{source}: 'permissions' is not a JSON object")
    for action in ACTIONS:
        entries = permissions.get(action, [])
        if not isinstance(entries, list):
            raise ImportError_(f"{source}: 'permissions.{action}' is not a JSON array")
        for entry in entries:
            conversion.add(convert_rule(entry, action, source))
    for directory in permissions.get("additionalDirectories", []) or []:
        if isinstance(directory, str) and directory not in conversion.extra_directories:
            conversion.extra_directories.append(directory)
    mode = permissions.get("defaultMode")
    if mode == "bypassPermissions" and project:
        reason = "Claude Code ignores bypassPermissions in a project's settings file"
        conversion.skipped.append(Skipped(f"defaultMode: {mode}", "mode", source, reason))
    elif mode is not None:
        _default_mode(conversion, mode, source)


def _default_mode(conversion: Conversion, mode: Any, source: str) -> None:
    # Later files rank higher in Claude Code (user < project < local): the last one wins.
    conversion.default, conversion.yolo = None, False
    conversion.rules = [r for r in conversion.rules if r.rule != "defaultMode: acceptEdits"]
    if mode == "default":
        return
    if mode == "dontAsk":
        conversion.default = "deny"
    elif mode == "bypassPermissions":
        conversion.yolo = True
    elif mode == "acceptEdits":
        for pattern in ["**", *(d.rstrip("/") + "/**" for d in conversion.extra_directories)]:
            conversion.rules.append(
                Converted("write", pattern, "allow", "defaultMode: acceptEdits", source)
            )
    else:
        reason = {
            "plan": "plan mode (read-only analysis) has no askgate equivalent",
            "auto": "auto mode's background classifier has no askgate equivalent",
        }.get(str(mode), "unknown mode")
        conversion.skipped.append(Skipped(f"defaultMode: {mode}", "mode", source, reason))


def resolve_precedence(conversion: Conversion) -> None:
    """Drop rules Claude Code would never apply: one nested inside (or equal to) a
    stricter rule of the same surface, and exact duplicates."""
    from askgate.policy.model import Surface
    from askgate.policy.patterns import compile_pattern, contains, kind_of

    def compiled(rule: Converted) -> Any:
        surface = Surface(rule.surface)
        text = _anchored(rule.pattern) if surface.is_path else rule.pattern
        return compile_pattern(kind_of(surface), text)

    kept: list[Converted] = []
    seen: set[tuple[str, str, str]] = set()
    for rule in conversion.rules:
        key = (rule.surface, rule.pattern, rule.action)
        if key in seen:
            continue
        seen.add(key)
        mine = compiled(rule)
        stricter = next(
            (
                other
                for other in conversion.rules
                if other.surface == rule.surface
                and STRICTNESS[other.action] > STRICTNESS[rule.action]
                and contains(compiled(other), mine)
            ),
            None,
        )
        if stricter is None:
            kept.append(rule)
            continue
        conversion.skipped.append(
            Skipped(
                rule.rule,
                rule.action,
                rule.source,
                f"Claude Code's {stricter.action} {stricter.rule} always wins over it"
                " (deny > ask > allow, whatever is more specific)",
            )
        )
    conversion.rules = kept


def _anchored(pattern: str) -> str:
    """A path pattern made absolute the way askgate will (relative to the project root,
    `~` to the home directory), with stand-in directories, so containment compares what
    the loaded rules will match."""
    if pattern.startswith("/"):
        return pattern
    if pattern == "~" or pattern.startswith("~/"):
        return "/__home__" + pattern[1:]
    return "/__project__/" + pattern


# --- output ---------------------------------------------------------------------------------


def _toml(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a TOML basic string


def render(
    conversion: Conversion, title: str = "Claude Code settings by `askgate import claude-code`"
) -> str:
    lines = [f"# Converted from {title}:"]
    lines += [f"#   {_comment(s)}" for s in conversion.sources]
    lines.append("")
    if conversion.profiles:
        selected = ", ".join(_toml(p) for p in conversion.profiles)
        lines.append(f"profiles = [{selected}]  # {conversion.profiles_why}")
    if conversion.default:
        why = conversion.default_why or "defaultMode: dontAsk"
        lines.append(f"default = {_toml(conversion.default)}  # {_comment(why)}")
    if conversion.yolo:
        lines.append("yolo = true  # defaultMode: bypassPermissions (denies still apply)")
    if conversion.extra_directories:
        dirs = ", ".join(_toml(d) for d in conversion.extra_directories)
        lines.append(f"extra_directories = [{dirs}]  # additionalDirectories")
    for surface in SURFACE_ORDER:
        rules = [r for r in conversion.rules if r.surface == surface]
        if not rules:
            continue
        lines += ["", f"[{surface}]"]
        for rule in rules:
            fields = [f"action = {_toml(rule.action)}"]
            if rule.action == "deny":
                fields.append(f"reason = {_toml(conversion.rule_prefix + rule.rule)}")
            if rule.examples:
                fields.append(f"match = [{', '.join(_toml(e) for e in rule.examples)}]")
            value = f"{{ {', '.join(fields)} }}" if len(fields) > 1 else _toml(rule.action)
            lines.append(f"{_toml(rule.pattern)} = {value}  # {_comment(rule.rule)}")
    if conversion.skipped:
        lines += ["", "# Not converted:"]
        lines += [f"# - {_comment(describe(s))}" for s in conversion.skipped]
    return "\n".join(lines) + "\n"


def _comment(text: str) -> str:
    return " ".join(text.split())


def describe(skipped: Skipped) -> str:
    return f"{skipped.action} {skipped.rule} ({skipped.source}): {skipped.reason}"


# --- the command ------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ImportError_(message)


def user_settings_dir() -> str:
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR", "")
    return config_dir if config_dir.startswith("/") else os.path.expanduser("~/.claude")


def is_project_settings(path: str) -> bool:
    """A `.claude/settings*.json` that is not the user's own settings file."""
    absolute = os.path.realpath(path)
    user = os.path.realpath(os.path.join(user_settings_dir(), "settings.json"))
    if absolute == user:
        return False
    parent = os.path.basename(os.path.dirname(absolute))
    return parent == ".claude" and os.path.basename(absolute).startswith("settings")


def default_settings_files(cwd: str) -> list[str]:
    from askgate.policy.config import find_project_root

    user_dir = user_settings_dir()
    root = find_project_root(cwd)
    candidates = [
        os.path.join(user_dir, "settings.json"),
        os.path.join(root, ".claude", "settings.json"),
        os.path.join(root, ".claude", "settings.local.json"),
    ]
    return [path for path in candidates if os.path.isfile(path)]


def load_settings(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ImportError_(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise ImportError_(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ImportError_(f"{path}: the top level is not a JSON object")
    return data


def convert_files(paths: Sequence[str]) -> Conversion:
    conversion = Conversion()
    for path in paths:
        convert_settings(
            conversion,
            load_settings(path),
            os.path.abspath(path),
            project=is_project_settings(path),
        )
    resolve_precedence(conversion)
    return conversion


def main(argv: Sequence[str]) -> int:
    parser = _Parser(prog="askgate import claude-code", description=__doc__.split("\n")[0])
    parser.add_argument("settings", nargs="*", metavar="SETTINGS", help="settings.json files")
    parser.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing -o FILE")
    try:
        args = parser.parse_args(list(argv))
        paths = args.settings or default_settings_files(os.getcwd())
        if not paths:
            raise ImportError_("no Claude Code settings file found; name one")
        conversion = convert_files(paths)
        text = render(conversion)
        if args.output:
            _write(args.output, text, force=args.force)
            print(f"wrote {args.output}: {len(conversion.rules)} rule(s)")
        else:
            sys.stdout.write(text)
        print(
            "askgate import: selected profile read-only (Claude Code's built-in read-only"
            " commands: ls, cat, grep, git status, … ask nothing there)",
            file=sys.stderr,
        )
        for skipped in conversion.skipped:
            print(f"askgate import: not converted: {describe(skipped)}", file=sys.stderr)
        return 0
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except ImportError_ as exc:
        print(f"askgate import claude-code: error: {exc}", file=sys.stderr)
        return 2


def _write(path: str, text: str, *, force: bool) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | (0 if force else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        raise ImportError_(f"{path} exists (use --force to replace it)") from None
    except OSError as exc:
        raise ImportError_(f"{path}: cannot write: {exc.strerror or exc}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)

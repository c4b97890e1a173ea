"""The sandbox plan: the policy's own rules turned into what the kernel must enforce.

Not a second decision: every entry comes from a rule of the loaded policy (or from the
`[sandbox]` table, or from askgate's built-in protections) and names it.

* **writable**: the project root, its extra directories, the literal roots of write allow
  rules (`~/.cache/**` -> `~/.cache`), `[sandbox] writable`, and the scratch directories
  (`/tmp`, `$TMPDIR`). Everything else is read-only. A write allow that is not a whole tree
  or a single path (`/tmp/*.txt`) cannot be a mount: it is listed in `notes` and not made
  writable (fail closed).
* **write holes**: read-only islands inside writable roots — write deny and ask rules
  (nobody can be asked in the middle of a command), askgate's own state, the files that
  register askgate with an agent, `.git/config` and `.git/hooks`. A hole that does not
  exist yet gets a placeholder at its first missing component (so nothing can be created
  there), made and removed by `placeholders.py`.
* **read denies**: read deny and ask rules and `[sandbox] hidden`. A rooted pattern is used
  as it is (`~/.ssh/**` hides `~/.ssh`); other patterns are expanded to the paths that
  exist (`expand.py`), searched from their fixed prefix, anywhere-patterns (`**/.env*`)
  from the project root, extra directories and writable roots. Each match is checked
  against the policy's own evaluation, so a nested allow (`**/.env.example`) stays
  readable. Past the search budget the plan carries `ask_reason`: the command is asked
  about instead.
* **refusals** (fail closed: the sandbox does not start): a denied path that passes through
  a symlink the sandbox can write (it could be re-pointed after the mask is placed), a
  hidden file with other hard links when the policy says `hard_links = "refuse"`.

Reads the filesystem (stat, realpath, directory walks) but writes nothing.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Sequence

import msgspec

from askgate.policy.engine import Policy
from askgate.policy.model import Action, Rule, Surface
from askgate.policy.paths import fold_lexically, is_inside
from askgate.policy.rules import expand_path_pattern
from askgate.policy.sandbox_table import SandboxSettings
from askgate.sandbox.expand import MAX_SECONDS, Expansion, expand, expand_all, fixed_prefix

# Files that register askgate with an agent: an agent rewriting them could unhook askgate.
# (`~` = HOME, anything else relative to the project root.)
AGENT_REGISTRATION_PATHS: tuple[str, ...] = (
    ".claude/settings.json",
    ".claude/settings.local.json",
    "~/.claude/settings.json",
    "~/.codex/config.toml",
    ".codex/**",
    "~/.gemini/settings.json",
    ".gemini/**",
    "~/.pi/agent/settings.json",
)
SCRATCH_DIRECTORIES: tuple[str, ...] = ("/tmp", "/var/tmp")
SCRATCH = "scratch directory"
_BLOCKING = (Action.DENY, Action.ASK)


class PlanEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One path the kernel enforces, and the rule it comes from."""

    path: str  # symlinks resolved: what the mount covers
    named: str = ""  # the path as the rule names it (before symlinks are resolved)
    kind: str  # "dir" | "file" | "missing" | "other"
    why: str  # the rule, e.g. `read "~/.ssh/**" = deny (user: /h/.config/askgate/policy.toml:3)`
    pattern: str = ""
    placeholder: str | None = None  # holes only: the first missing component to create


class SandboxPlan(msgspec.Struct, frozen=True, kw_only=True):
    cwd: str
    project_root: str
    mode: str  # "off" | "on" | "required"
    network: bool
    hard_links: str
    writable: tuple[PlanEntry, ...]
    write_holes: tuple[PlanEntry, ...]
    read_denies: tuple[PlanEntry, ...]
    refusals: tuple[str, ...] = ()  # non-empty: the sandbox must not start
    ask_reason: str | None = None  # the plan is incomplete: ask about the command instead
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # `network = "policy"` (netproxy.py): no network of its own (`network` is False), only
    # the hosts these `[net]` rules and default allow, through askgate's proxy.
    net_proxy: bool = False
    net_rules: tuple[Rule, ...] = ()
    net_default: str = "ask"
    net_yolo: bool = False

    @property
    def startable(self) -> bool:
        return not self.refusals and self.ask_reason is None


class _Source(msgspec.Struct, frozen=True):
    pattern: str  # absolute, or starting with **
    why: str
    # A missing path gets a placeholder only where creating one cannot confuse a running
    # program: never for an agent's own settings files (an empty JSON file breaks them).
    placeholder_ok: bool = True
    rule: bool = False  # from a policy rule: checked against the policy's own evaluation


def describe_rule(rule: Rule) -> str:
    where = f"{rule.origin}: {rule.source}:{rule.line}" if rule.source else str(rule.origin)
    agent = f"agent.{rule.agent}." if rule.agent else ""
    quoted = msgspec.json.encode(rule.pattern).decode()
    return f"{agent}{rule.surface} {quoted} = {rule.action} ({where})"


def _kind(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "other"


def _real(path: str) -> str:
    return fold_lexically(os.path.realpath(path))


def _inside_any(path: str, roots: Iterable[str]) -> bool:
    return any(is_inside(path, root) for root in roots)


class _Builder:
    def __init__(
        self, policy: Policy, settings: SandboxSettings, cwd: str, agent: str | None
    ) -> None:
        self.policy = policy
        self.settings = settings
        self.cwd = fold_lexically(cwd)
        self.agent = agent
        self.home = policy.home
        self.root = policy.project_root
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.refusals: list[str] = []
        self.ask_reason: str | None = None
        # One time budget for all the pattern walks of this plan.
        self.deadline = time.monotonic() + MAX_SECONDS
        self.expanded: dict[str, Expansion] = {}

    def _rules(self, surface: Surface, actions: Sequence[Action]) -> list[Rule]:
        return [
            rule
            for rule in self.policy.rules.rules
            if rule.surface is surface
            and rule.action in actions
            and (rule.agent is None or rule.agent == self.agent)
        ]

    def _absolute(self, rule: Rule) -> str:
        return expand_path_pattern(rule.pattern, home=self.home, base_dir=rule.base_dir)

    # --- writable roots ----------------------------------------------------------------

    def writable(self) -> list[PlanEntry]:
        candidates: list[tuple[str, str]] = [(self.root, "the project root")]
        candidates += [(d, "extra_directories") for d in self.policy.extra_directories]
        for rule in self._rules(Surface.WRITE, (Action.ALLOW,)):
            pattern = self._absolute(rule)
            prefix, rest = fixed_prefix(pattern)
            if prefix.startswith("/") and rest in ("", "**"):
                if self._blocked(Surface.WRITE, prefix):
                    self.notes.append(
                        f"not writable: a stricter rule covers {prefix} ({describe_rule(rule)})"
                    )
                    continue
                candidates.append((prefix, describe_rule(rule)))
            else:
                self.notes.append(
                    f"not writable in the sandbox (not a whole tree or a path): "
                    f"{describe_rule(rule)}"
                )
        candidates += [(p, "[sandbox] writable") for p in self.settings.writable]
        tmpdir = self.policy.env.get("TMPDIR", "")
        scratch = [*SCRATCH_DIRECTORIES, *([tmpdir] if tmpdir.startswith("/") else [])]
        candidates += [(p, SCRATCH) for p in scratch]
        entries: list[PlanEntry] = []
        for path, why in candidates:
            real = _real(path)
            kind = _kind(real)
            if kind not in ("dir", "file"):
                if why != SCRATCH:
                    self.notes.append(f"writable path is not a file or directory: {path} ({why})")
                continue
            if real == "/":
                self.notes.append(f"refusing to make / writable ({why})")
                continue
            if any(entry.path == real for entry in entries):
                continue
            entries.append(PlanEntry(path=real, named=path, kind=kind, why=why))
        return entries

    # --- write holes -------------------------------------------------------------------

    def hole_sources(self) -> list[_Source]:
        from askgate.policy.protected import protected_paths

        sources = [
            _Source(self._absolute(rule), describe_rule(rule), rule=True)
            for rule in self._rules(Surface.WRITE, _BLOCKING)
        ]
        protected = "askgate's own configuration and state"
        sources += [_Source(p, protected) for p in protected_paths(self.policy.env, self.root)]
        for path in AGENT_REGISTRATION_PATHS:
            absolute = expand_path_pattern(path, home=self.home, base_dir=self.root)
            sources.append(_Source(absolute, "registers askgate with an agent", False))
        git = os.path.join(self.root, ".git")
        if os.path.isdir(git) and not os.path.islink(git):
            sources.append(_Source(git + "/config", "git configuration (can run programs)"))
            sources.append(_Source(git + "/hooks/**", "git hooks (run programs)"))
        elif os.path.lexists(git):
            sources.append(_Source(git, "git worktree link"))
        return sources

    def search_roots(self, writable: Sequence[PlanEntry]) -> list[str]:
        """Where patterns without a fixed prefix (`**/.env*`) are searched: where the agent
        works, not shared scratch space (a walk of /tmp would be slow and list other
        people's files)."""
        search = list(dict.fromkeys([self.root, *self.policy.extra_directories]))
        search += [
            entry.path
            for entry in writable
            if entry.path not in search and entry.why != SCRATCH and entry.kind == "dir"
        ]
        return search

    def holes(self, writable: Sequence[PlanEntry]) -> list[PlanEntry]:
        roots = [entry.path for entry in writable]
        holes: list[PlanEntry] = []
        for source in self.hole_sources():
            for path, _whole in self._paths(source, searched=self.search_roots(writable)):
                if source.rule and not self._blocked(Surface.WRITE, path):
                    continue  # a nested allow wins here (it is a writable root of its own)
                real = _real(path)
                if not _inside_any(real, roots):
                    continue  # already read-only
                kind = _kind(real)
                placeholder = None
                if kind == "missing":
                    placeholder = _first_missing(real)
                    if (
                        placeholder is None
                        or not source.placeholder_ok
                        or not _inside_any(os.path.dirname(placeholder), roots)
                    ):
                        continue
                holes.append(
                    PlanEntry(
                        path=real,
                        named=path,
                        kind=kind,
                        why=source.why,
                        pattern=source.pattern,
                        placeholder=placeholder,
                    )
                )
        return _outermost(holes)

    # --- read denies -------------------------------------------------------------------

    def read_sources(self) -> list[tuple[_Source, Rule | None]]:
        sources: list[tuple[_Source, Rule | None]] = [
            (_Source(self._absolute(rule), describe_rule(rule)), rule)
            for rule in self._rules(Surface.READ, _BLOCKING)
        ]
        sources += [(_Source(p, "[sandbox] hidden"), None) for p in self.settings.hidden]
        return sources

    def read_denies(self, writable: Sequence[PlanEntry]) -> list[PlanEntry]:
        search = self.search_roots(writable)
        entries: list[PlanEntry] = []
        for source, rule in self.read_sources():
            for path, _whole in self._paths(source, searched=search):
                if rule is not None and not self._blocked(Surface.READ, path):
                    continue  # a nested allow (`**/.env.example`) wins for this file
                real = _real(path)
                kind = _kind(real)
                if kind == "missing":
                    continue  # nothing there to hide; what the command creates is its own
                entries.append(
                    PlanEntry(
                        path=real, named=path, kind=kind, why=source.why, pattern=source.pattern
                    )
                )
        return _outermost(entries)

    def _blocked(self, surface: Surface, path: str) -> bool:
        """Does the policy itself (all rules, overrides included) deny or ask `path`?"""
        for form in dict.fromkeys((path, _real(path))):
            evaluation = self.policy.rules.evaluate(surface, form, self.agent)
            if evaluation.action in _BLOCKING:
                return True
        return False

    def expand_sources(self, writable: Sequence[PlanEntry]) -> None:
        """Expand every pattern of the plan up front: one walk for all of them."""
        patterns = [source.pattern for source in self.hole_sources()]
        patterns += [source.pattern for source, _rule in self.read_sources()]
        self.expanded = expand_all(patterns, self.search_roots(writable), deadline=self.deadline)

    def _paths(self, source: _Source, *, searched: Sequence[str]) -> list[tuple[str, bool]]:
        expansion = self.expanded.get(source.pattern)
        if expansion is None:
            expansion = expand(source.pattern, searched, deadline=self.deadline)
        if expansion.over_budget is not None and self.ask_reason is None:
            self.ask_reason = (
                f"the sandbox cannot list every path {source.pattern!r} covers "
                f"({expansion.over_budget}; {source.why})"
            )
        return [(path, expansion.whole_tree) for path in expansion.paths]

    # --- fail-closed checks ------------------------------------------------------------

    def check(
        self,
        writable: Sequence[PlanEntry],
        holes: Sequence[PlanEntry],
        denies: Sequence[PlanEntry],
    ) -> None:
        frozen = [h.path for h in holes] + [d.path for d in denies]
        roots = [w.path for w in writable]
        for entry in (*holes, *denies):
            link = _writable_symlink(entry.named, roots, frozen)
            if link is not None:
                self.refusals.append(
                    f"{entry.named} passes through the symlink {link}, which the sandbox "
                    f"could re-point ({entry.why})"
                )
        # A path-based mount never covers another name of the same inode: a hidden file's
        # other hard links stay readable, a frozen file's stay writable.
        for entries, verb in ((denies, "hide"), (holes, "keep read-only")):
            for entry in entries:
                links = _hard_links(entry)
                if links > 1:
                    text = (
                        f"{entry.path} has {links - 1} other hard link(s) the sandbox cannot "
                        f"{verb} ({entry.why})"
                    )
                    target = (
                        self.refusals if self.settings.hard_links == "refuse" else self.warnings
                    )
                    target.append(text)


def _hard_links(entry: PlanEntry) -> int:
    if entry.kind != "file":
        return 1
    try:
        return os.stat(entry.path).st_nlink
    except OSError:
        return 1


def _first_missing(path: str) -> str | None:
    """The shallowest component of `path` that does not exist (None if all exist)."""
    current = "/"
    for segment in path.strip("/").split("/"):
        current = os.path.join(current, segment)
        if not os.path.lexists(current):
            return current
    return None


def _outermost(entries: Sequence[PlanEntry]) -> list[PlanEntry]:
    """Drop entries inside another entry (its mount already covers them), keep order."""
    kept: list[PlanEntry] = []
    for entry in sorted(entries, key=lambda e: (e.path.count("/"), e.path)):
        if not any(is_inside(entry.path, other.path) for other in kept):
            kept.append(entry)
    return kept


def _writable_symlink(named: str, roots: Sequence[str], frozen: Sequence[str]) -> str | None:
    """The first directory symlink on the way to `named` (its last component excluded:
    the mask covers the resolved target whatever the name later points to) that sits in a
    directory the sandbox can write (inside a writable root and not frozen), else None."""
    if not named.startswith("/"):
        return None
    current = "/"
    for segment in named.strip("/").split("/")[:-1]:
        parent_real = _real(current)
        current = os.path.join(current, segment)
        if not os.path.islink(current):
            if not os.path.lexists(current):
                return None
            continue
        if _inside_any(parent_real, roots) and not _inside_any(parent_real, frozen):
            return current
    return None


def build_plan(
    policy: Policy,
    settings: SandboxSettings,
    *,
    cwd: str,
    agent: str | None = None,
    mode: str | None = None,
) -> SandboxPlan:
    """The plan for commands run in `cwd` by `agent` under `policy`."""
    builder = _Builder(policy, settings, cwd, agent)
    writable = builder.writable()
    builder.expand_sources(writable)
    holes = builder.holes(writable)
    denies = builder.read_denies(writable)
    # A hole inside a hidden directory is covered by the (read-only) mask already.
    holes = [h for h in holes if not _inside_any(h.path, [d.path for d in denies])]
    builder.check(writable, holes, denies)
    if policy.errors:
        builder.refusals.append(f"a policy file failed to load: {policy.errors[0]}")
    net: dict[str, object] = {}
    if settings.network == "policy":  # the [net] hosts, through askgate's proxy
        from askgate.sandbox.netproxy import plan_fields

        net = plan_fields(policy, agent)
    return SandboxPlan(
        cwd=builder.cwd,
        project_root=policy.project_root,
        mode=mode or settings.bash,
        network=settings.network == "on",
        hard_links=settings.hard_links,
        writable=tuple(writable),
        write_holes=tuple(holes),
        read_denies=tuple(denies),
        refusals=tuple(builder.refusals),
        ask_reason=builder.ask_reason,
        warnings=tuple(builder.warnings),
        notes=tuple(builder.notes),
        **net,  # type: ignore[arg-type]
    )

"""From a (surface, value) to a Decision: which surfaces are consulted and how they combine.

Pure apart from reading the filesystem to resolve symlinks (paths.resolve) and
loading policy files (Policy.load). No prompting, no events, no logging: the gate
does that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from askgate.policy import paths
from askgate.policy.model import (
    Action,
    Basis,
    Check,
    Decision,
    Origin,
    Rule,
    RuleRef,
    ShellAnalysis,
    Surface,
    Unit,
    UnitDecision,
)
from askgate.policy.net import NETWORK_PROGRAMS
from askgate.policy.patterns import Pattern, compile_pattern
from askgate.policy.recursive_reads import NAME_LISTERS
from askgate.policy.recursive_writes import literal_root, reaches_below
from askgate.policy.rules import Evaluation, RuleSet, expand_path_pattern
from askgate.policy.sandbox_table import SandboxSettings

if TYPE_CHECKING:
    from askgate.policy.config import LoadedPolicy

MAX_VALUE_LENGTH = 100_000
# An unquoted glob in a bash command is expanded when deciding, up to this many names.
MAX_GLOB_MATCHES = 256
# Lookups are pure given the rules, so their results are remembered per value (a bounded
# memo: cleared when full, never used for values so long that keeping them costs memory).
_LOOKUP_CACHE_LIMIT = 8_192
_LOOKUP_CACHE_VALUE_LIMIT = 1_024
_STRICTNESS = {Action.ALLOW: 0, Action.ASK: 1, Action.DENY: 2}
SHELL_RESERVED_WORDS = frozenset(
    {
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc", "{", "}", "!", "[[", "]]",
    }
)  # fmt: skip


class Policy:
    """A policy ready to evaluate: rules plus the settings that go with them. Its rules and
    settings are fixed at construction; it memoises lookups as it answers."""

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        project_root: str,
        default: Action = Action.ASK,
        default_origin: Origin = Origin.BUILTIN,
        yolo: bool = False,
        infrastructure_read_paths: Sequence[str] = (),
        extra_directories: Sequence[str] = (),
        errors: Sequence[str] = (),
        warnings: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        fatal_errors: Sequence[str] = (),
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.home = paths.home_directory(self.env)
        self.project_root = project_root
        self.rules = RuleSet(rules, home=self.home)
        self._refs: dict[int, RuleRef] = {}  # id(rule) -> its reported form
        # (surface, value, agent) -> what _lookup answers (the rules never change).
        self._lookups: dict[tuple[Surface, str, str | None], tuple[Action | None, Check | None]]
        self._lookups = {}
        self._primaries: dict[tuple[str, str | None], tuple[Check, str]] = {}
        # (unit, request cwd, agent) -> a verdict that looked at no file (_decide_unit)
        self._unit_decisions: dict[tuple[Unit, str, str | None], UnitDecision] = {}
        self._roots_cache: dict[tuple[str | None, int], list[tuple[str, Rule]]] = {}
        self._anywhere_cache: dict[str | None, list[Pattern]] = {}
        self._guards: tuple[bool, list[str]] | None = None  # see _path_guards
        self._env_rules: list[Rule] | None = None  # see _secret_env_checks
        self._guard_memo: dict[str, bool] = {}
        # (request cwd, unit cwd, other cwds) -> _unit_directories' answer
        self._directories_memo: dict[
            tuple[str, str | None, tuple[str, ...]], list[str] | Check
        ] = {}
        self.default = default
        self.default_origin = default_origin
        self.yolo = yolo
        self.extra_directories = tuple(
            paths.normalize(d, project_root, self.env) for d in extra_directories
        )
        # Nothing is "inside the project" when the root given is `/`, the home directory or
        # an ancestor of it (a session started in `~`): config.project_root_of.
        try:
            inside = paths.bounded_project_root(project_root, project_root, self.home)
        except ValueError:
            inside = paths.NO_PROJECT_ROOT
        self._roots = paths.inside_roots(inside, self.extra_directories)
        self.infrastructure_read_paths = tuple(
            paths.normalize(p, project_root, self.env) for p in infrastructure_read_paths
        )
        # A policy file that failed to load could have constrained anything: while
        # any error stands, no answer may be "allow" (fail closed).
        self.errors = tuple(errors)
        self.sandbox = SandboxSettings()  # from_loaded sets the merged [sandbox] tables
        self.warnings = tuple(warnings)
        # A managed file that failed to load: its floor is unknown, so nothing but deny.
        self.fatal_errors = tuple(fatal_errors)

    @classmethod
    def from_rules(cls, rules: Iterable[Rule], **kwargs: Any) -> Policy:
        """A policy of `rules`; `kwargs` are `Policy`'s own keyword arguments."""
        kwargs.setdefault("project_root", os.getcwd())
        return cls(rules, **kwargs)

    @classmethod
    def load(
        cls,
        cwd: str,
        *,
        config_files: Sequence[str] = (),
        agent: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Policy:
        from askgate.policy.config import load_policy

        loaded = load_policy(cwd, config_files=config_files, agent=agent, env=env)
        return cls.from_loaded(loaded, env=env)

    @classmethod
    def from_loaded(cls, loaded: LoadedPolicy, *, env: Mapping[str, str] | None = None) -> Policy:
        """The loaded files' rules plus the built-in ones: the rule files shipped in
        policy/builtin/rules/ and the denies that keep askgate's own configuration and
        state out of agents' reach (policy/protected.py)."""
        from askgate.policy.protected import protected_rules

        environ = os.environ if env is None else env
        policy = cls(
            [
                *loaded.rules,
                *loaded.builtin_rules,
                *protected_rules(environ, loaded.project_root),
            ],
            project_root=loaded.project_root,
            default=loaded.default,
            default_origin=loaded.default_origin,
            yolo=loaded.yolo,
            infrastructure_read_paths=loaded.infrastructure_read_paths,
            extra_directories=loaded.extra_directories,
            errors=[str(e) for e in loaded.errors],
            warnings=loaded.warnings,
            env=env,
            fatal_errors=[str(e) for e in loaded.fatal_errors],
        )
        # The merged [sandbox] settings travel with the policy, so a hook that already
        # loaded it can plan the sandbox without parsing every file again.
        policy.sandbox = loaded.sandbox
        return policy

    # --- public --------------------------------------------------------------------

    def decide(
        self,
        surface: Surface | str,
        value: str,
        *,
        cwd: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        analysis: ShellAnalysis | None = None,
    ) -> Decision:
        """Evaluate one value on one surface. `tool` names the tool whose `tool` rule is
        the fallback for path and mcp surfaces. Never raises for hostile values: they
        come back as ask with the reason."""
        surface = _SURFACE_BY_NAME.get(surface) or Surface(surface)  # ValueError if unknown
        cwd = cwd or self.project_root
        problem = _value_problem(surface, value)
        if self.fatal_errors:
            why = "the managed policy file failed to load, so everything is denied: "
            decision = _refuse(surface, _printable(value), why + self.fatal_errors[0], Action.DENY)
        elif problem is not None:
            decision = _refuse(surface, _printable(value), problem)
        elif surface is Surface.BASH:
            decision = self._decide_bash(value, cwd, agent, analysis)
        elif surface.is_path:
            decision = self._decide_path(surface, value, cwd, agent, tool)
        elif surface is Surface.NET:
            decision = self._decide_net(value, agent, tool)
        else:
            decision = self._decide_name(surface, value, agent, tool)
        return self._clamp(decision)

    # --- net (policy/net.py, docs/network.md) --------------------------------------

    def check_net(
        self, host: str, port: int, *, agent: str | None = None, tool: str | None = None
    ) -> Decision:
        """May `host:port` be contacted? The `net` rules, then `tool`'s rule, then the
        default. For callers holding a host (the sandbox's proxy, the MCP gateway)."""
        from askgate.policy.net import net_target

        try:
            value = net_target(host, port).value
        except ValueError as error:
            return self._clamp(_refuse(Surface.NET, _printable(host), f"not a host: {error}"))
        return self.decide(Surface.NET, value, agent=agent, tool=tool)

    def check_url(self, url: str, *, agent: str | None = None, tool: str | None = None) -> Decision:
        """`check_net` for the host and port a URL connects to. A URL whose host cannot be
        read for sure gets the default (never a named host's allow)."""
        from askgate.policy.net import parse_url

        target = parse_url(url)
        if target is None:
            return self._clamp(
                _decision(
                    Surface.NET,
                    _printable(url),
                    self.default,
                    [self._unknown_host_check(url)],
                    units=(),
                )
            )
        return self.decide(Surface.NET, target.value, agent=agent, tool=tool)

    def _decide_net(self, value: str, agent: str | None, tool: str | None) -> Decision:
        from askgate.policy.net import parse_example

        try:
            target = parse_example(value)  # HOST:PORT, a URL, or HOST (port 443)
        except ValueError as error:
            if tool in TEXT_URL_TOOLS:  # a prompt naming its URLs (Gemini's web_fetch)
                return self._decide_urls_in(value, agent, tool)
            return _refuse(Surface.NET, _printable(value), f"not a host and port: {error}")
        decision = self._decide_name(Surface.NET, target.value, agent, tool)
        if tool:
            # A deny or ask of the tool itself (`[tool] "WebFetch" = "deny"`) still holds
            # where a net rule allows the host: the host list cannot turn a tool back on.
            action, check = self._lookup(Surface.TOOL, tool, agent)
            if (
                check is not None
                and action is not None
                and action.strictness > (decision.action.strictness)
            ):
                checks = [*decision.checks, check]
                return _decision(Surface.NET, target.value, action, checks, units=())
        return decision

    def _decide_urls_in(self, text: str, agent: str | None, tool: str | None) -> Decision:
        """Every URL a free-text input names must be allowed; none: the tool's own rule."""
        from askgate.policy.net import urls_in

        urls = urls_in(text)
        if urls is None:
            return _refuse(Surface.NET, _printable(text), "too many URLs to check one by one")
        if not urls:
            return self._decide_name(Surface.TOOL, tool or "", agent, None)
        decisions = [self._decide_net(url, agent, tool) for url in urls]
        return max(decisions, key=lambda decision: decision.action.strictness)

    def _unknown_host_check(self, what: str) -> Check:
        note = (
            f"the host it contacts cannot be told from {_printable(what)[:120]!r}; "
            f"default is {self.default} ({self.default_origin})"
        )
        return Check(
            surface=Surface.NET, value="?", action=self.default, rule=None,
            basis=Basis.DEFAULT, note=note,
        )  # fmt: skip

    def _net_checks(
        self, unit: Unit, cwd: str, agent: str | None, consent: bool
    ) -> tuple[list[Check], bool]:
        """The hosts a unit's network tool contacts, each on the `net` surface: a net
        rule, else the default (a wildcard bash allow such as `curl *` allows running
        curl, not reaching any host). A bash rule without `*` speaks for the hosts it
        spells out (only net deny/ask apply), as it does for paths; so do the commands
        an unknown program may run, and the hosts a program contacts without the command
        naming them (npm's registry for `npm install`).
        Returns (checks, whether a git configuration was read)."""
        from askgate.policy.shell.network import Implied, contacted, looks_at_files

        directories = self._unit_directories(unit, cwd)
        directory = directories[0] if isinstance(directories, list) else cwd
        checks: list[Check] = []
        looked = False
        for command, tighten in ((unit.command, consent), *((f, True) for f in unit.may_run)):
            looked = looked or looks_at_files(command)
            words = unit.words if command is unit.command else ()
            for target in contacted(command, directory, words):
                if target is None:
                    if not tighten:
                        checks.append(self._unknown_host_check(command))
                    continue
                action, check = self._lookup(Surface.NET, target.value, agent)
                stricter_only = tighten or isinstance(target, Implied)
                if check is None:
                    if not stricter_only:
                        checks.append(self._default_check(Surface.NET, target.value))
                elif stricter_only and action is Action.ALLOW:
                    checks.append(_ignored(check))
                else:
                    checks.append(check)
        return checks, looked

    # --- surfaces --------------------------------------------------------------------

    def _lookup(
        self, surface: Surface, value: str, agent: str | None
    ) -> tuple[Action | None, Check | None]:
        key = (surface, value, agent)
        found = self._lookups.get(key)
        if found is not None:
            return found
        ev: Evaluation = self.rules.evaluate(surface, value, agent)
        if ev.rule is None or ev.action is None:
            found = (None, None)
        else:
            ref = self._refs.get(id(ev.rule))
            if ref is None:
                ref = self._refs[id(ev.rule)] = RuleRef.of(ev.rule)
            check = Check(surface=surface, value=value, action=ev.action, rule=ref)
            found = (ev.action, check)
        if len(value) <= _LOOKUP_CACHE_VALUE_LIMIT:
            if len(self._lookups) >= _LOOKUP_CACHE_LIMIT:
                self._lookups.clear()
            self._lookups[key] = found
        return found

    def _default_check(self, surface: Surface, value: str) -> Check:
        return Check(
            surface=surface,
            value=value,
            action=self.default,
            rule=None,
            basis=Basis.DEFAULT,
            note=f"no rule matches; default is {self.default} ({self.default_origin})",
        )

    def _with_fallback(self, chain: Sequence[tuple[Surface, str]], agent: str | None) -> Check:
        for surface, value in chain:
            _, check = self._lookup(surface, value, agent)
            if check is not None:
                return check
        return self._default_check(*chain[0])

    def _decide_name(
        self, surface: Surface, value: str, agent: str | None, tool: str | None
    ) -> Decision:
        chain = [(surface, value)]
        if surface is not Surface.TOOL and tool:
            chain.append((Surface.TOOL, tool))
        check = self._with_fallback(chain, agent)
        return _decision(surface, value, check.action, [check], units=())

    def _path_checks(
        self,
        surface: Surface,
        forms: paths.PathForms,
        agent: str | None,
        fallback: Sequence[tuple[Surface, str]],
        *,
        stricter_only: bool,
    ) -> list[Check]:
        """Checks for one path on one path surface, each symlink form separately.

        An allow must hold for the link and its target; a deny or ask from either form
        applies. `stricter_only`: an unmatched form adds nothing and a matching allow
        is recorded but cannot loosen (used for paths inside a bash command)."""
        checks: list[Check] = []
        for form in forms.forms:
            action, check = self._lookup(surface, form, agent)
            if check is None:
                if not stricter_only:
                    checks.append(self._with_fallback([(surface, form), *fallback], agent))
                continue
            if stricter_only and action is Action.ALLOW:
                checks.append(_ignored(check))
                continue
            checks.append(check)
        return checks

    def _external_checks(self, forms: paths.PathForms, agent: str | None) -> list[Check]:
        if paths.is_safe_device(forms.lexical):
            return []
        out: list[Check] = []
        for form in forms.forms:
            if any(paths.is_inside(form, root) for root in self._roots):
                continue
            _, check = self._lookup(Surface.EXTERNAL_DIRECTORY, form, agent)
            out.append(check or self._default_check(Surface.EXTERNAL_DIRECTORY, form))
        return out

    def _resolve(self, path: str, cwd: str) -> paths.PathForms | Check:
        why = self._unplaceable(path)
        if why is not None:
            return _floor(Surface.READ, path[:200], Action.ASK, why)
        try:
            forms = paths.resolve(path, cwd, self.env)
        except (ValueError, OSError) as exc:
            return _floor(Surface.READ, path[:200], Action.ASK, f"path cannot be checked: {exc}")
        if (
            forms.lexical.startswith(("/proc/", "/dev/")) or forms.resolved != forms.lexical
        ) and not paths.is_safe_device(forms.lexical):
            through = _process_view(forms.lexical)
            if through is not None:
                note = (
                    f"{path[:200]!r} reaches a file through {through}, which names the files "
                    "of whichever process opens it (the agent's and askgate's differ)"
                )
                return _floor(Surface.READ, path[:200], Action.ASK, note)
        return forms

    def _unplaceable(self, path: str) -> str | None:
        """Why a path cannot be placed before it is opened: `~alice/…` is another user's
        home (or, for an unknown name, a relative directory called `~alice`)."""
        if not path.startswith("~") or path == "~" or path.startswith(("~/", "~+", "~-")):
            return None
        name = path[1:].partition("/")[0]
        if name == _own_login() and self.home == _own_home():
            return None
        return f"{path[:200]!r} is in another user's home (~{name}), which cannot be placed"

    def _decide_path(
        self, surface: Surface, value: str, cwd: str, agent: str | None, tool: str | None
    ) -> Decision:
        forms = self._resolve(value, cwd)
        if isinstance(forms, Check):
            return _decision(surface, value, Action.ASK, [forms], units=())
        fallback = [(Surface.TOOL, tool)] if tool else []
        checks = self._path_checks(surface, forms, agent, fallback, stricter_only=False)
        if surface is Surface.READ and tool in RECURSIVE_TOOLS:
            # A content search (Grep) runs in the agent's process, outside any sandbox:
            # a file below that an anywhere-pattern read rule names asks (its `glob`
            # filter is not modelled); a name lister (Glob) opens no file.
            searches = tool in CONTENT_SEARCH_TOOLS
            checks += self._recursive_checks(
                forms.lexical, cwd, agent, contents=searches, cap=Action.ASK, kernel=False
            )
        if surface is not Surface.EXTERNAL_DIRECTORY:
            checks += self._external_checks(forms, agent)
        action = Action.strictest(*(c.action for c in checks if c.basis != Basis.IGNORED))
        return _decision(surface, forms.lexical, action, checks, units=())

    def _decide_bash(
        self, command: str, cwd: str, agent: str | None, analysis: ShellAnalysis | None
    ) -> Decision:
        if analysis is None:
            from askgate.policy.shell import analyze

            analysis = analyze(command, cwd=cwd, home=self.home)
        # Within one decision the filesystem is taken as fixed: a path named by several
        # units is resolved and checked once.
        path_memo: dict[tuple[Surface, str, str], list[Check]] = {}
        units = [self._decide_unit(u, cwd, agent, path_memo) for u in analysis.units]
        checks: list[Check] = []
        if analysis.floor is not None:
            checks.append(
                _floor(Surface.BASH, command[:500], analysis.floor, analysis.floor_reason)
            )
        if not units and not checks:
            # Nothing runs (empty, or assignments only): the bash rule for the whole
            # string decides, else the default.
            checks.append(self._with_fallback([(Surface.BASH, command.strip())], agent))
        checks.extend(self._secret_env_checks(command, analysis.units, agent))
        actions = [u.action for u in units] + [c.action for c in checks]
        action = Action.strictest(*actions)
        decision = _decision(Surface.BASH, command, action, checks, units=tuple(units))
        return decision

    def _primary_check(self, command: str, agent: str | None) -> tuple[Check, str]:
        """A unit's own bash check (its rule, else the default) and the reason it gives."""
        key = (command, agent)
        found = self._primaries.get(key)
        if found is None:
            _, check = self._lookup(Surface.BASH, command, agent)
            if check is None:
                check = self._default_check(Surface.BASH, command)
            found = (check, _check_reason(check))
            if len(command) <= _LOOKUP_CACHE_VALUE_LIMIT:
                if len(self._primaries) >= _LOOKUP_CACHE_LIMIT:
                    self._primaries.clear()
                self._primaries[key] = found
        return found

    def _decide_unit(
        self,
        unit: Unit,
        cwd: str,
        agent: str | None,
        path_memo: dict[tuple[Surface, str, str], list[Check]],
    ) -> UnitDecision:
        """A unit's verdict. One that looked at no file (no path it names could matter) is
        remembered per (unit, cwd, agent): it depends on the rules alone, which never
        change; one that did is worked out afresh in every decision."""
        if unit.reads or unit.writes:
            return self._judge_unit(unit, cwd, agent, path_memo)[0]  # (looks at files)
        key = (unit, cwd, agent)
        found = self._unit_decisions.get(key)
        if found is None:
            found, looked_at_files = self._judge_unit(unit, cwd, agent, path_memo)
            if not looked_at_files and len(unit.command) <= _LOOKUP_CACHE_VALUE_LIMIT:
                if len(self._unit_decisions) >= _LOOKUP_CACHE_LIMIT:
                    self._unit_decisions.clear()
                self._unit_decisions[key] = found
        return found

    def _unit_floor(self, unit: Unit, consent: bool) -> list[Check]:
        """The unit's own floor: lifted (kept as ignored) by literal consent unless it is
        about what a path means."""
        assert unit.floor is not None
        if unit.floor_reason in _HELD_BY_THE_SANDBOX:
            # Code the command wrote and then runs: under `[sandbox] bash = "required"`
            # the kernel holds what it can reach; otherwise nothing does (ask).
            if self.sandbox.bash == "required":
                return []
            return [_floor(Surface.BASH, unit.command, unit.floor, unit.floor_reason)]
        check = _floor(Surface.BASH, unit.command, unit.floor, unit.floor_reason)
        if consent and not _path_floor(unit.floor_reason):
            return [_ignored(check, _CONSENT_NOTE)]
        return [check]

    def _judge_unit(
        self,
        unit: Unit,
        cwd: str,
        agent: str | None,
        path_memo: dict[tuple[Surface, str, str], list[Check]],
    ) -> tuple[UnitDecision, bool]:
        """A unit's verdict, and whether it looked at files."""
        primary, primary_reason = self._primary_check(unit.command, agent)
        checks: list[Check] = [primary]
        for alternate in unit.alternates:
            action, check = self._lookup(Surface.BASH, alternate, agent)
            if check is not None:
                checks.append(check if action is not Action.ALLOW else _ignored(check))
        first_word = unit.command.partition(" ")[0]
        if first_word in SHELL_RESERVED_WORDS:
            # A reserved word where a command name should be means the parse did not
            # see the structure bash will run (`time if …; then rm …; fi`): never allow.
            note = f"the shell keyword {first_word!r} in command position was not understood"
            checks.append(_floor(Surface.BASH, unit.command, Action.ASK, note))
        # Only worth asking when there is something a literal rule could lift or vouch for.
        consent = (
            bool(unit.floor or unit.may_run or unit.writes)
            and _literal_consent(primary)
            and not _wrapped(unit)
        )
        if unit.floor is not None:
            checks += self._unit_floor(unit, consent)
        if unit.unknown_names and any(self._path_guards()):  # (bash-programs: xargs, tar -T)
            checks.append(_floor(Surface.BASH, unit.command, Action.ASK, unit.unknown_names))
        if not consent:
            for form in unit.may_run:
                checks.extend(self._may_run_checks(form, agent))
        looks_at_files = bool(
            unit.reads
            or unit.writes
            or ((unit.operands or unit.recursive_reads) and self._operands_matter(unit, cwd, agent))
        )
        if looks_at_files:
            checks += self._unit_path_checks(unit, cwd, agent, path_memo, consent)
        if first_word.rpartition("/")[2] in NETWORK_PROGRAMS or unit.may_run:
            speaks = consent or _literal_consent(primary)  # a bash rule without `*`
            net_checks, read_git_config = self._net_checks(unit, cwd, agent, speaks)
            checks += net_checks
            looks_at_files = looks_at_files or read_git_config
        # The strictest action among the checks that count, and the first check giving it.
        decisive = checks[0]  # never an ignored check
        strictness = _STRICTNESS[decisive.action]
        for check in checks:
            if check.basis != Basis.IGNORED and _STRICTNESS[check.action] > strictness:
                decisive, strictness = check, _STRICTNESS[check.action]
        action = decisive.action
        decision = UnitDecision(
            command=unit.command,
            action=action,
            rule=decisive.rule,
            reason=primary_reason if decisive is primary else _check_reason(decisive),
            checks=tuple(checks),
            context=unit.context,
        )
        return decision, looks_at_files

    def _guarded_roots(self, agent: str | None) -> list[tuple[str, Rule]]:
        """Read deny/ask rules with a literal root (`~/.ssh/**` -> ~/.ssh), for
        recursive readers. Anywhere-patterns (`**/.env*`) have no root: they apply to
        the paths a command names only (docs/bash.md)."""
        key = (agent, len(self.rules))
        cached = self._roots_cache.get(key)
        if cached is not None:
            return cached
        found: list[tuple[str, Rule]] = []
        for rule in self.rules.rules:
            if rule.surface is not Surface.READ or rule.action is Action.ALLOW:
                continue
            if rule.agent is not None and rule.agent != agent:
                continue
            root = _literal_root(
                expand_path_pattern(rule.pattern, home=self.home, base_dir=rule.base_dir)
            )
            if root is not None:
                found.append((root, rule))
        self._roots_cache[key] = found
        return found

    def _anywhere_reads(self, agent: str | None) -> list[Pattern]:
        """Read deny/ask rules without a literal root (`**/.env*`), compiled: a
        recursive reader may open any file they name (recursive_reads.py)."""
        cached = self._anywhere_cache.get(agent)
        if cached is not None:
            return cached
        found: list[Pattern] = []
        for rule in self.rules.rules:
            if rule.surface is not Surface.READ or rule.action is Action.ALLOW:
                continue
            if rule.agent is not None and rule.agent != agent:
                continue
            expanded = expand_path_pattern(rule.pattern, home=self.home, base_dir=rule.base_dir)
            if _literal_root(expanded) is None:
                found.append(compile_pattern("path", expanded))
        self._anywhere_cache[agent] = found
        return found

    def _recursive_guards(self, agent: str | None) -> bool:
        return bool(self._guarded_roots(agent) or self._anywhere_reads(agent))

    def _kernel_hides(self, directory: str) -> bool:
        """With `[sandbox] bash = "required"` an allowed command runs in the sandbox,
        which hides the files read rules name inside the project (sandbox/plan.py
        searches the project and its added directories for anywhere-patterns)."""
        if self.sandbox.bash != "required":
            return False
        return any(paths.is_inside(directory, root) for root in self._roots)

    def _recursive_content_checks(
        self, directory: str, agent: str | None, cap: Action | None, kernel: bool = True
    ) -> list[Check]:
        """The files below `directory` an anywhere-pattern read rule names, each decided
        as a read of that file (deny stays deny, unless `cap`); a walk that cannot
        finish asks."""
        from askgate.policy.recursive_reads import matching_below

        patterns = self._anywhere_reads(agent)
        if not patterns or (kernel and self._kernel_hides(directory)):
            return []
        walk = matching_below(directory, lambda p: any(pt.match(p) for pt in patterns))
        checks: list[Check] = []
        if walk.incomplete is not None:
            note = (
                f"reads the files below {directory}, which may include a file a read rule "
                f"names, and {walk.incomplete}"
            )
            checks.append(_floor(Surface.READ, directory, Action.ASK, note))
        for match in walk.matches:
            action, check = self._lookup(Surface.READ, match, agent)
            if check is None or action is Action.ALLOW or action is None:
                continue
            if cap is not None and _STRICTNESS[action] > _STRICTNESS[cap]:
                action = cap
            note = f"reads everything below {directory}, including {match} ({check.action})"
            checks.append(
                Check(
                    surface=Surface.READ,
                    value=match,
                    action=action,
                    rule=check.rule,
                    basis=Basis.FLOOR,
                    note=note,
                )
            )
            break  # one named file is enough to say why
        return checks

    def _recursive_checks(
        self,
        path: str,
        cwd: str,
        agent: str | None,
        contents: bool = False,
        cap: Action | None = None,
        kernel: bool = True,
    ) -> list[Check]:
        """A directory read with everything below it: a read deny or ask rule whose
        literal root lies inside makes the read ask, naming the rule; when the reader
        opens the files (`contents`), a file below it that an anywhere-pattern read
        rule names is decided as that rule says (`recursive_reads.py`), at most `cap`.
        `kernel`: the reader is a bash command, which the sandbox may confine."""
        roots = self._guarded_roots(agent)
        if not roots and not (contents and self._anywhere_reads(agent)):
            return []
        forms = self._resolve(path, cwd)
        if isinstance(forms, Check):
            return [forms]
        checks: list[Check] = []
        if contents:
            checks += self._recursive_content_checks(forms.resolved, agent, cap, kernel)
        for root, rule in roots:
            for form in forms.forms:
                if paths.is_inside(root, form):
                    ref = self._refs.get(id(rule)) or RuleRef.of(rule)
                    note = (
                        f"reads everything below {form}, including {rule.pattern!r} "
                        f"({rule.action} by a read rule)"
                    )
                    checks.append(
                        Check(
                            surface=Surface.READ,
                            value=form,
                            action=Action.ASK,
                            rule=ref,
                            basis=Basis.FLOOR,
                            note=note,
                        )
                    )
                    break
        return checks

    def _recursive_write_checks(self, path: str, cwd: str, agent: str | None) -> list[Check]:
        """A directory written with everything below it (recursive_writes.py): a write
        deny or ask rule that can match below it makes the write ask, naming the rule."""
        forms = self._resolve(path, cwd)
        if isinstance(forms, Check):
            return [forms]
        checks: list[Check] = []
        for rule in self.rules.rules:
            if rule.surface is not Surface.WRITE or rule.action is Action.ALLOW:
                continue
            if rule.agent is not None and rule.agent != agent:
                continue
            expanded = expand_path_pattern(rule.pattern, home=self.home, base_dir=rule.base_dir)
            pattern = compile_pattern("path", expanded)
            root = literal_root(expanded)
            for form in forms.forms:
                if reaches_below(form, expanded, pattern) or (
                    # Outside the project a rule's whole tree below the directory counts
                    # (`tar -x -C ~` may write ~/.bashrc); inside it, only rules that name
                    # the directory do, so `tar -xf x.tar` in the project stays allowed.
                    root is not None
                    and paths.is_inside(root, form)
                    and not any(paths.is_inside(form, r) for r in self._roots)
                ):
                    note = f"writes everything below {form}, including {rule.pattern!r}"
                    ref = self._refs.get(id(rule)) or RuleRef.of(rule)
                    checks.append(Check(surface=Surface.WRITE, value=form, action=Action.ASK,
                                        rule=ref, basis=Basis.FLOOR, note=note))  # fmt: skip
                    break
        return checks

    def _secret_env_checks(
        self, command: str, units: Sequence[Unit], agent: str | None
    ) -> list[Check]:
        """(bash-programs) Secret variables the command expands, prints or sends
        (shell/environment.py), decided by the `env` rules: a matching ask becomes deny
        when the command runs a network tool; printing the whole environment meets every
        env deny or ask rule; `${!…}` may name any variable (ask). No env rule: nothing."""
        rules = self._env_rules
        if rules is None:
            rules = self._env_rules = [
                r for r in self.rules.rules if r.surface is Surface.ENV and r.action != Action.ALLOW
            ]
        if not rules:
            return []
        from askgate.policy.shell.environment import env_uses

        use = env_uses(command, units)
        if use is None:
            return []
        checks: list[Check] = []
        sent = f", and the network tool `{use.network}` would send it" if use.network else ""
        if use.indirect:
            note = f"`{use.indirect}` names variables at run time: it may expand a secret"
            checks.append(_floor(Surface.ENV, use.indirect, Action.ASK, note))
        for name in use.names:
            action, check = self._lookup(Surface.ENV, name, agent)
            if check is None or action is Action.ALLOW:
                continue
            if use.network and check.rule is not None:
                named = check.rule.pattern
                note = f"the secret variable {name} (env rule {named!r}) is expanded{sent}"
                check = Check(surface=Surface.ENV, value=name, action=Action.DENY,
                              rule=check.rule, basis=Basis.FLOOR, note=note)  # fmt: skip
            checks.append(check)
        if use.dump:
            mine = [r for r in rules if r.agent is None or r.agent == agent]
            if mine:
                strictest = max(mine, key=lambda r: _STRICTNESS[r.action])
                action = Action.DENY if use.network else strictest.action
                note = f"`{use.dump}` prints the environment, secrets included{sent}"
                ref = self._refs.get(id(strictest)) or RuleRef.of(strictest)
                checks.append(Check(surface=Surface.ENV, value=strictest.pattern, action=action,
                                    rule=ref, basis=Basis.FLOOR, note=note))  # fmt: skip
        return checks

    def _may_run_checks(self, form: str, agent: str | None) -> list[Check]:
        """A command an unknown program may run: a matching deny or ask makes it ask."""
        action, check = self._lookup(Surface.BASH, form, agent)
        if check is None or action is Action.ALLOW:
            return []
        note = f"may run {form!r}, which {_check_reason(check)}"
        return [_floor(Surface.BASH, form, Action.ASK, note)]

    def _unit_directories(self, unit: Unit, cwd: str) -> list[str] | Check:
        """The absolute directories a unit may run in (`~`, `~user`, `$HOME` expanded)."""
        if unit.cwd is None and not unit.other_cwds:
            return [cwd]
        key = (cwd, unit.cwd, unit.other_cwds)
        found_before = self._directories_memo.get(key)
        if found_before is not None:
            return found_before
        answer = self._directories(unit, cwd)
        if len(self._directories_memo) >= _LOOKUP_CACHE_LIMIT:
            self._directories_memo.clear()
        self._directories_memo[key] = answer
        return answer

    def _directories(self, unit: Unit, cwd: str) -> list[str] | Check:
        found: list[str] = []
        for directory in (unit.cwd or "", *unit.other_cwds):
            if not directory:
                found.append(cwd)
                continue
            why = self._unplaceable(directory)
            if why is not None:
                return _floor(Surface.BASH, unit.command, Action.ASK, why)
            try:
                # `..` kept: after a physical cd through a link, `link/..` is the link
                # target's parent, which `resolve` computes from the unfolded form.
                found.append(paths.absolute(directory, cwd, self.env))
            except ValueError as exc:
                note = f"the directory {directory!r} cannot be checked: {exc}"
                return _floor(Surface.BASH, unit.command, Action.ASK, note)
        return list(dict.fromkeys(found))

    def _unit_path_checks(
        self,
        unit: Unit,
        cwd: str,
        agent: str | None,
        path_memo: dict[tuple[Surface, str, str], list[Check]],
        consent: bool = False,
    ) -> list[Check]:
        """Reads, writes and unknown-role operands of one unit, under every directory it
        may run in (absolute paths once). `consent`: a literal bash allow spelled these
        paths out, so a write needs no allow of its own (write deny/ask still apply)."""
        directories = self._unit_directories(unit, cwd)
        if isinstance(directories, Check):
            return [directories]
        checks: list[Check] = []
        if self.env.get("CDPATH") and _cdpath_matters(unit):
            note = "CDPATH is set, so a relative cd may lead anywhere"
            checks.append(_floor(Surface.BASH, unit.command, Action.ASK, note))
        if len(directories) == 1 and not (
            unit.globbed or unit.operands or unit.recursive_reads or unit.recursive_writes
        ):
            # The common case: one directory, paths as written.
            directory = directories[0]
            for surface, unit_paths in ((Surface.READ, unit.reads), (Surface.WRITE, unit.writes)):
                tighten = consent and surface is Surface.WRITE
                for path in unit_paths:
                    key = (surface, ("\x00" + path) if tighten else path, directory)
                    found = path_memo.get(key)
                    if found is None:
                        found = path_memo[key] = (
                            self._tightening_checks(surface, path, directory, agent)
                            if tighten
                            else self._command_path_checks(surface, path, directory, agent)
                        )
                    checks += found
            return checks

        def check(surface: Surface, path: str, directory: str, tighten: bool = False) -> None:
            key = (surface, ("\x00" + path) if tighten else path, directory)
            found = path_memo.get(key)
            if found is None:
                if tighten:
                    found = self._tightening_checks(surface, path, directory, agent)
                else:
                    found = self._command_path_checks(surface, path, directory, agent)
                path_memo[key] = found
            checks.extend(found)

        globbed = unit.globbed

        def named(path: str, directory: str) -> list[str]:
            if not globbed or path not in globbed:
                return [path]
            matches = self._expand_glob(path, directory)
            if isinstance(matches, str):
                checks.append(_floor(Surface.BASH, unit.command, Action.ASK, matches))
                return []
            return matches

        for surface, unit_paths in ((Surface.READ, unit.reads), (Surface.WRITE, unit.writes)):
            tighten = consent and surface is Surface.WRITE
            for written in unit_paths:
                for directory in directories if _is_relative(written) else directories[:1]:
                    names = named(written, directory)
                    for path in names:
                        check(surface, path, directory, tighten)
                        if len(names) > 1:
                            # One word became several (`cp {.env,/tmp/x}`): the program
                            # gives them roles by position, so each is a read and a write.
                            check(Surface.READ, path, directory)
                            check(Surface.WRITE, path, directory, tighten=True)
        checks += self._unit_tree_checks(unit, directories, named, path_memo, agent)
        for written in unit.operands:
            for directory in directories if _is_relative(written) else directories[:1]:
                for word in named(written, directory):
                    if not _names_path(word) and not self._may_be_guarded(directory):
                        continue  # no rule could say anything about a file here
                    if _names_path(word) or _exists(directory, word):
                        # Role unknown: read, and a write that can only tighten.
                        check(Surface.READ, word, directory)
                        check(Surface.WRITE, word, directory, tighten=True)
        return checks

    def _unit_tree_checks(
        self,
        unit: Unit,
        directories: list[str],
        named: Callable[[str, str], list[str]],
        path_memo: dict[tuple[Surface, str, str], list[Check]],
        agent: str | None,
    ) -> list[Check]:
        """Directories the unit reads or writes with everything below them."""
        checks: list[Check] = []
        recursive = unit.recursive_reads if self._recursive_guards(agent) else ()
        program = unit.command.partition(" ")[0].rpartition("/")[2]
        contents = program not in NAME_LISTERS
        # git add -A stages what .gitignore does not exclude, which is not modelled: ask.
        # xargs' unknown names may or may not include the file: ask (Names passed as data).
        cap = Action.ASK if program == "git" or unit.unknown_names else None
        for written in recursive:
            for directory in directories if _is_relative(written) else directories[:1]:
                for path in named(written, directory):
                    key = (Surface.READ, ("\x01" if contents else "\x03") + path, directory)
                    found = path_memo.get(key)
                    if found is None:
                        found = path_memo[key] = self._recursive_checks(
                            path, directory, agent, contents, cap
                        )
                    checks.extend(found)
        for written in unit.recursive_writes:  # (bash-programs: rm -r D, mv D x …)
            for directory in directories if _is_relative(written) else directories[:1]:
                for path in named(written, directory):
                    checks.extend(self._recursive_write_checks(path, directory, agent))
        return checks

    def _expand_glob(self, pattern: str, directory: str) -> list[str] | str:
        """What bash would expand an unquoted glob to in `directory` (shell/globs.py:
        bash's braces, brackets, classes and dotfile rules; no match: the pattern
        itself), or why it cannot be known (too many names, a feature not modelled)."""
        from askgate.policy.shell.globs import Unmodelled, expand

        too_many = f"the glob {pattern!r} names more than {MAX_GLOB_MATCHES} files"
        if sum(1 for part in pattern.split("/") if _GLOB_CHARACTERS.search(part)) > 2:
            return too_many  # `/*/*/*/x*` could walk the whole disk before it answers
        try:
            matches = expand(pattern, directory, MAX_GLOB_MATCHES, self._expand_home)
        except Unmodelled as exc:
            return f"the glob {pattern!r} cannot be expanded in advance: {exc}"
        except (ValueError, OSError) as exc:
            return f"the glob {pattern!r} cannot be expanded in advance: {exc}"
        if matches is None:
            return too_many
        for match in matches:
            if match.startswith("-"):
                # `tar cf x.tar *` beside a file named `--checkpoint-action=exec=…`: the
                # name becomes an option nobody wrote.
                return f"the glob {pattern!r} names {match[:80]!r}, which reads as an option"
        return matches

    def _expand_home(self, word: str) -> str:
        why = self._unplaceable(word)
        if why is not None:
            raise ValueError(why)
        return paths.expand_user(word, self.env)

    def _operands_matter(self, unit: Unit, cwd: str, agent: str | None) -> bool:
        """False when the unit's only paths are bare words in the request's directory
        and no rule could say anything about a file there (the common `git status`), and
        no read rule could be inside a directory it reads recursively."""
        if unit.recursive_reads and self._recursive_guards(agent):
            return True
        if not unit.operands:
            return False
        if unit.globbed:
            return True
        for word in unit.operands:
            if _names_path(word):
                return True
        if unit.cwd is None and not unit.other_cwds:
            return self._may_be_guarded(cwd)
        directories = self._unit_directories(unit, cwd)
        if isinstance(directories, Check):
            return True
        return any(self._may_be_guarded(directory) for directory in directories)

    def _may_be_guarded(self, directory: str) -> bool:
        """Could a read/write deny or ask rule, or external_directory, apply to a file
        named directly in `directory`? (Saves looking whether bare words exist.)"""
        found = self._guard_memo.get(directory)
        if found is not None:
            return found
        if not any(paths.is_inside(directory, root) for root in self._roots):
            found = True  # outside the project: external_directory applies
        else:
            anywhere, roots = self._path_guards()
            found = anywhere or any(
                paths.is_inside(root, directory) or paths.is_inside(directory, root)
                for root in roots
            )
        if len(self._guard_memo) >= _LOOKUP_CACHE_LIMIT:
            self._guard_memo.clear()
        self._guard_memo[directory] = found
        return found

    def _path_guards(self) -> tuple[bool, list[str]]:
        """(an anywhere-pattern read/write deny or ask exists, the literal roots of the
        others)."""
        if self._guards is None:
            anywhere = False
            roots: list[str] = []
            for rule in self.rules.rules:
                if rule.surface not in (Surface.READ, Surface.WRITE):
                    continue
                if rule.action is Action.ALLOW:
                    continue
                expanded = expand_path_pattern(rule.pattern, home=self.home, base_dir=rule.base_dir)
                root = _literal_root(expanded)
                if root is None:
                    anywhere = True
                else:
                    roots.append(root)
            self._guards = (anywhere, roots)
        return self._guards

    def _tightening_checks(
        self, surface: Surface, path: str, cwd: str, agent: str | None
    ) -> list[Check]:
        forms = self._resolve(path, cwd)
        if isinstance(forms, Check):
            return [forms]
        if paths.is_safe_device(forms.lexical):
            return []
        return self._path_checks(surface, forms, agent, (), stricter_only=True)

    def _command_path_checks(
        self, surface: Surface, path: str, cwd: str, agent: str | None
    ) -> list[Check]:
        forms = self._resolve(path, cwd)
        if isinstance(forms, Check):
            return [forms]
        if paths.is_safe_device(forms.lexical):
            return []
        # A read inside a command can only tighten; a write falls back to the default
        # when no write rule matches (a redirect is a file write like any other).
        checks = self._path_checks(surface, forms, agent, (), stricter_only=surface is Surface.READ)
        return checks + self._external_checks(forms, agent)

    def _clamp(self, decision: Decision) -> Decision:
        if not self.errors or decision.action is not Action.ALLOW:
            return decision
        note = "a policy file failed to load, so nothing is allowed without asking: "
        return msgspec.structs.replace(
            decision, action=Action.ASK, reason=note + self.errors[0], clamped=True
        )


# --- helpers -----------------------------------------------------------------------------


def _value_problem(surface: Surface, value: object) -> str | None:
    """Why a value cannot be matched safely, or None. (A bash command is analysed even
    with NULs or bad bytes: the analysis floors it to ask and still shows denies its
    units.)"""
    if not isinstance(value, str):
        return "value is not a string"
    if len(value) > MAX_VALUE_LENGTH:
        return f"value is longer than {MAX_VALUE_LENGTH} characters"
    if surface is Surface.BASH:
        return None
    bad = (_UNSAFE_PATH if surface.is_path else _UNSAFE_NAME).search(value)
    if bad is None:
        return None
    char = bad.group()
    if char == "\x00":
        return "value contains a NUL byte"
    if "\ud800" <= char <= "\udfff":
        return "value contains bytes that are not valid UTF-8"
    return "name contains a control character"


# One scan each: NUL and lone surrogates (undecodable bytes) anywhere; in names (tool,
# mcp, skill) any control character too.
_SURFACE_BY_NAME: dict[str, Surface] = {s.value: s for s in Surface}
# Escapes for `re`, not literal characters: same classes, compiled in a tenth of the time
# (every one-shot hook process compiles them).
_UNSAFE_PATH = re.compile(r"[\x00\ud800-\udfff]")
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")


def _printable(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text[:200].encode("utf-8", "backslashreplace").decode("utf-8")


# Tools whose input is free text naming the URLs to fetch (Gemini CLI's web_fetch prompt).
TEXT_URL_TOOLS = frozenset({"web_fetch"})
# Tools that search a directory and everything below it (Claude Code's Glob and Grep,
# pi's grep and find, Gemini CLI's glob, grep_search and search_file_content).
RECURSIVE_TOOLS = frozenset(
    {"Glob", "Grep", "grep", "find", "glob", "grep_search", "search_file_content"}
)
# Those among them that open the files they search (the others list names).
CONTENT_SEARCH_TOOLS = frozenset({"Grep", "grep", "grep_search", "search_file_content"})
_GLOB_CHARACTERS = re.compile(r"[*?\[{]")


def _literal_root(pattern: str) -> str | None:
    """The directory a path pattern cannot match outside of; None for anywhere-patterns."""
    if not pattern.startswith("/"):
        return None
    glob = _GLOB_CHARACTERS.search(pattern)
    if glob is None:
        return paths.fold_lexically(pattern)
    literal = pattern[: glob.start()]
    root = literal.rsplit("/", 1)[0] if not literal.endswith("/") else literal
    return paths.fold_lexically(root or "/")


# /proc/self, /proc/thread-self and /proc/PID name the files of the process that opens
# them (its cwd, root, descriptors, memory): askgate deciding in the daemon (cwd `/`) or
# in a one-shot hook would resolve them differently from the agent. Such a path is ask,
# in every process alike (docs/policy.md, "Which surfaces a request consults").
_PROCESS_VIEW = re.compile(r"^/proc/(?:self|thread-self|[0-9]+)(?:/|$)")
_MAX_LINK_HOPS = 40


def _process_view(path: str) -> str | None:
    """The /proc directory an absolute path passes through, following its symlinks as
    the kernel would (`..` after a link climbs out of the target), or None."""
    match = _PROCESS_VIEW.match(path)
    if match is not None:
        return match.group().rstrip("/")
    pending = [p for p in path.split("/") if p]
    pending.reverse()
    current = "/"
    hops = 0
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        if _PROCESS_VIEW.match(candidate):
            return candidate
        try:
            target = os.readlink(candidate)
        except (OSError, ValueError):
            current = candidate
            continue
        hops += 1
        if hops > _MAX_LINK_HOPS:
            return "a chain of symlinks too long to follow"
        if target.startswith("/"):
            current = "/"
        pending.extend(reversed([p for p in target.split("/") if p]))
    return None


def _own_login() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (KeyError, OSError, ImportError):
        return None


def _own_home() -> str | None:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError, ImportError):
        return None


def _is_relative(path: str) -> bool:
    """A path word whose meaning depends on the working directory."""
    return not path.startswith(("/", "~")) and not (path == "$HOME" or path.startswith("$HOME/"))


def _cdpath_matters(unit: Unit) -> bool:
    """A unit moved by a relative `cd` (searched in $CDPATH first) naming a relative path."""
    moved = any(
        d and _is_relative(d) and not d.startswith("$") for d in (unit.cwd, *unit.other_cwds)
    )
    return moved and any(
        _is_relative(p) for p in (*unit.reads, *unit.writes, *unit.recursive_reads)
    )


def _names_path(word: str) -> bool:
    """A word of unknown role that names a path by its spelling alone."""
    return "/" in word or word.startswith("~") or word in (".", "..")


def _exists(directory: str, name: str) -> bool:
    """Whether `name` names something under `directory` (a dangling link counts)."""
    try:
        return os.path.lexists(os.path.join(directory, name))
    except (ValueError, OSError):
        return True  # cannot tell: treat it as a path (stricter)


def _ignored(check: Check, note: str = "an allow here cannot loosen the command") -> Check:
    return Check(
        surface=check.surface,
        value=check.value,
        action=check.action,
        rule=check.rule,
        basis=Basis.IGNORED,
        note=note,
    )


_CONSENT_NOTE = "lifted: a bash rule without `*` allows exactly this command"
# Unit floors about what a path means (not about what runs): a literal rule cannot speak
# for a path whose directory or target is not known (shell/commands.py, shell/links.py).
_WRITTEN_EARLIER = "runs a file written earlier in the same command"  # (shell/__init__.py)
# Floors the required sandbox holds: code the command wrote and runs, and an interpreter's
# program in a heredoc (`python - <<EOF`, like `python -c`): shell/commands.py.
_HELD_BY_THE_SANDBOX = frozenset(
    {_WRITTEN_EARLIER, "an interpreter reading its program from a heredoc"}
)
_PATH_FLOORS = ("a relative path", "through a link", "pass through", "through a process",
                "open file whose name", "written earlier in the same command")  # fmt: skip


def _literal_consent(primary: Check) -> bool:
    """The unit is allowed by a bash rule with no `*`: it speaks for the unit's paths
    and lifts the unit's own floor (DESIGN.md, "Which surfaces a request consults")."""
    rule = primary.rule
    return (
        rule is not None
        and primary.action is Action.ALLOW
        and primary.basis != Basis.DEFAULT
        and "*" not in rule.pattern
    )


def _wrapped(unit: Unit) -> bool:
    """The unit was written with more around it than its primary form: an env prefix, a
    wrapper, a shell running it, git's global options (`PATH=src id`, `BASH_ENV=x bash -c
    true`, `timeout 5 rm -rf ./build`). A literal rule consents to the command it spells,
    not to what is wrapped around it."""
    size = unit.command.count(" ")
    return any(alternate.count(" ") > size for alternate in unit.alternates)


def _path_floor(reason: str | None) -> bool:
    return reason is not None and any(marker in reason for marker in _PATH_FLOORS)


def _floor(surface: Surface, value: str, action: Action, note: str | None) -> Check:
    """A check no rule made: a construct or value the analysis cannot see through."""
    return Check(
        surface=surface, value=value, action=action, rule=None, basis=Basis.FLOOR, note=note
    )


def _refuse(surface: Surface, value: str, why: str, action: Action = Action.ASK) -> Decision:
    check = _floor(surface, value, action, why)
    return Decision(
        action=action, reason=why, surface=surface, value=value, rule=None, checks=(check,)
    )


def _check_reason(check: Check) -> str:
    from askgate.policy.shipped import describe_source  # not .builtin: no parser import

    if check.basis == Basis.FLOOR:
        return check.note or "needs a human"
    if check.rule is None:
        return f"no {check.surface} rule matches {check.value!r}; {check.note or 'default applies'}"
    rule = check.rule
    where = f" ({rule.origin}: {describe_source(rule.source, rule.line)})" if rule.source else ""
    where = where or f" ({rule.origin})"
    text = f"{check.surface} rule {rule.pattern!r} = {rule.action} matches {check.value!r}{where}"
    if rule.reason:
        text += f": {rule.reason}"
    return text


def _decision(
    surface: Surface,
    value: str,
    action: Action,
    checks: Sequence[Check],
    *,
    units: tuple[UnitDecision, ...],
) -> Decision:
    decisive_unit = next((u for u in units if u.action is action), None)
    effective = [c for c in checks if c.basis != Basis.IGNORED and c.action is action]
    if decisive_unit is not None and (not effective or effective[0].basis == Basis.DEFAULT):
        reason = f"{decisive_unit.command!r}: {decisive_unit.reason}"
        rule = decisive_unit.rule
    elif effective:
        reason = _check_reason(effective[0])
        rule = effective[0].rule
    else:
        reason, rule = "no rule applies", None
    return Decision(
        action=action,
        reason=reason,
        surface=surface,
        value=value,
        rule=rule,
        units=units,
        checks=tuple(checks),
    )

"""Policy files: discovery, project trust, and the merge of every scope into one policy.

This module produces `Rule`s and settings; it never evaluates them (`rules.py` does).
Parsing one file lives in `policy_file`; trust in `trust`; both are re-exported here.
Scopes, lowest to highest rank:

    user            $XDG_CONFIG_HOME/askgate/policy.toml        rank 100
    project         <project root>/.askgate/policy.toml         rank 200
    user agents     [agent.NAME.*] of the user file             rank 300
    project agents  [agent.NAME.*] of the project file          rank 400
    managed         /etc/askgate/policy.toml                    rank 600
    managed agents  [agent.NAME.*] of the managed file          rank 800
    built-in        policy/builtin/rules/*.toml, protected.py   rank 1,000,000

A file's `profiles = [...]` load the named built-in profiles one rank below the file.

`--config FILE` (repeatable) replaces the user and project files: file i loads at rank
100 + 2i (its profiles at 99 + 2i) and its agent sections at 300 + i, so every config
file's agent sections sit above all config files' base sections, mirroring user/project.
The managed file still applies on top: an administrator's floor cannot be bypassed with
`--config`.

Relative path patterns and relative `extra_directories` of every file (user, managed and
`--config` files included) are relative to the project root of the working directory —
the one project the policy is being loaded for.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence

import msgspec

from askgate import locations
from askgate.policy.examples import RuleExample
from askgate.policy.model import Action, Origin, Rule
from askgate.policy.paths import (
    NO_PROJECT_ROOT,
    bounded_project_root,
    find_project_root,
    fold_lexically,
    home_directory,
    normalize,
)
from askgate.policy.policy_file import (
    ConfigError,
    PolicyFile,
    one_line,
    parse_policy_bytes,
    parse_policy_text,
)
from askgate.policy.sandbox_table import SandboxSettings, merge_sandbox_tables
from askgate.policy.schema import MAX_FILE_BYTES, policy_json_schema
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

__all__ = [
    "ConfigError",
    "ExampleRun",
    "LoadedPolicy",
    "PolicyFile",
    "TrustError",
    "discover_paths",
    "find_project_root",
    "is_trusted",
    "load_policy",
    "managed_policy_path",
    "merge_files",
    "parse_policy_bytes",
    "parse_policy_text",
    "policy_json_schema",
    "project_policy_path",
    "project_root_of",
    "run_examples",
    "trust_project",
    "trust_store_path",
    "untrust_project",
    "user_policy_path",
]

RANK_USER = 100
RANK_PROJECT = 200
RANK_USER_AGENT = 300
RANK_PROJECT_AGENT = 400
RANK_MANAGED = 600
RANK_MANAGED_AGENT = 800
RANK_CONFIG = 100  # + 2 x index of the --config file (the odd rank below is its profiles')
RANK_CONFIG_AGENT = 300  # + index of the --config file
# A file's profiles load one rank below the file itself: its own rules override them, and
# they override the scopes below it like the file's rules would.
PROFILE_RANK_OFFSET = -1
MAX_CONFIG_FILES = 100  # keeps config ranks below the next scope's

DEFAULT_MANAGED_POLICY = locations.SYSTEM_MANAGED_POLICY


class LoadedPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Every file that loaded, merged; `errors` non-empty means the caller must fail closed."""

    files: tuple[PolicyFile, ...]
    errors: tuple[ConfigError, ...]
    warnings: tuple[str, ...]
    rules: tuple[Rule, ...]  # sorted by rank; agent rules only for `agent`
    default: Action
    default_origin: Origin
    yolo: bool
    infrastructure_read_paths: tuple[str, ...]
    extra_directories: tuple[str, ...]
    project_root: str
    agent: str | None
    # askgate's built-in rule files (policy/builtin/rules/*.toml), kept apart from the
    # files a user wrote; the engine adds their rules above every scope.
    builtin_files: tuple[PolicyFile, ...] = ()
    builtin_rules: tuple[Rule, ...] = ()
    # Errors of the managed file: the administrator's floor cannot be known, so the
    # caller must deny everything (not merely clamp to ask). Also listed in `errors`.
    fatal_errors: tuple[ConfigError, ...] = ()
    sandbox: SandboxSettings = SandboxSettings()  # merged [sandbox] tables (docs/sandbox.md)


# --- discovery ------------------------------------------------------------------------


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def config_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_CONFIG_HOME`, or `~/.config` when unset or not absolute (askgate.locations)."""
    return locations.config_home(env)


def user_policy_path(env: Mapping[str, str] | None = None) -> str:
    return locations.user_policy_path(env)


def managed_policy_path(env: Mapping[str, str] | None = None) -> str:
    """`/etc/askgate/policy.toml`; `ASKGATE_MANAGED_POLICY` names another file only while
    nothing exists there (a test seam: it cannot replace a real managed file)."""
    return locations.managed_policy_path(env)


def project_root_of(cwd: str, env: Mapping[str, str] | None = None) -> str:
    """The project root policies are applied to: find_project_root's answer, but never
    `/`, the home directory or an ancestor of it (paths.bounded_project_root)."""
    root = find_project_root(cwd)
    try:
        home: str | None = home_directory(env)
    except ValueError:
        home = None
    try:
        return bounded_project_root(root, cwd, home)
    except ValueError:
        return NO_PROJECT_ROOT


def discover_paths(cwd: str, env: Mapping[str, str] | None = None) -> list[tuple[Origin, str]]:
    """Candidate policy files in scope order (user, project, managed), existing or not.

    The user file is left out when neither XDG_CONFIG_HOME nor HOME says where it is.
    """
    candidates: list[tuple[Origin, str]] = []
    with contextlib.suppress(ValueError):  # neither XDG_CONFIG_HOME nor HOME known
        candidates.append((Origin.USER, user_policy_path(env)))
    candidates.append((Origin.PROJECT, project_policy_path(project_root_of(cwd, env))))
    candidates.append((Origin.MANAGED, managed_policy_path(env)))
    return candidates


# --- loading and merging --------------------------------------------------------------


class _Source(msgspec.Struct, frozen=True):
    origin: Origin
    path: str
    rank: int
    agent_rank: int
    required: bool  # named explicitly: a missing file is an error


def _sources(
    cwd: str, config_files: Sequence[str], env: Mapping[str, str] | None, errors: list[ConfigError]
) -> list[_Source]:
    sources: list[_Source] = []
    if config_files:
        if len(config_files) > MAX_CONFIG_FILES:
            errors.append(
                ConfigError("--config", None, None, f"more than {MAX_CONFIG_FILES} files")
            )
        for index, name in enumerate(config_files[:MAX_CONFIG_FILES]):
            try:
                base = cwd if cwd.startswith("/") else os.path.join(os.getcwd(), cwd)
                path = normalize(name, fold_lexically(base), env)
            except ValueError as error:
                errors.append(ConfigError(one_line(str(name)), None, None, str(error)))
                continue
            rank, agent_rank = RANK_CONFIG + 2 * index, RANK_CONFIG_AGENT + index
            sources.append(_Source(Origin.CONFIG, path, rank, agent_rank, required=True))
    else:
        for origin, path in discover_paths(cwd, env):
            if origin is Origin.USER:
                sources.append(_Source(origin, path, RANK_USER, RANK_USER_AGENT, required=False))
            elif origin is Origin.PROJECT:
                sources.append(_Source(origin, path, RANK_PROJECT, RANK_PROJECT_AGENT, False))
    managed = managed_policy_path(env)
    sources.append(_Source(Origin.MANAGED, managed, RANK_MANAGED, RANK_MANAGED_AGENT, False))
    return sources


def _load_file(
    source: _Source, root: str, env: Mapping[str, str] | None
) -> tuple[PolicyFile | None, ConfigError | None]:
    try:
        data = read_regular_file(source.path, MAX_FILE_BYTES)
    except (OSError, ValueError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        return None, ConfigError(source.path, None, None, f"cannot read: {reason}")
    if data is None:
        missing = ConfigError(source.path, None, None, "file not found")
        return None, missing if source.required else None
    trusted = True
    if source.origin is Origin.PROJECT:
        trusted = is_trusted_digest(root, policy_digest(data), env)
    try:
        loaded = parse_policy_bytes(
            data,
            path=source.path,
            origin=source.origin,
            rank_base=source.rank,
            agent_rank=source.agent_rank,
            trusted=trusted,
            base_dir=root,
            env=env,
        )
    except ConfigError as error:
        return None, error
    return loaded, None


def _untrusted_warning(policy: PolicyFile) -> str:
    ignored = f"; ignored {len(policy.ignored)}: {', '.join(policy.ignored[:5])}"
    more = " …" if len(policy.ignored) > 5 else ""
    return one_line(
        f"{policy.path}: project policy is not trusted (run `askgate trust` after reviewing it):"
        f" loaded its {len(policy.rules)} deny/ask rules only, overriding nothing"
        + (ignored + more if policy.ignored else "")
    )


def _profiles_of(
    policy: PolicyFile, root: str, env: Mapping[str, str] | None
) -> tuple[list[PolicyFile], ConfigError | None]:
    """The profiles a trusted file selects, one rank below it. A profile that cannot load
    is reported as an error of the selecting file (so that file's scope clamps)."""
    from askgate.policy.builtin import load_profile

    loaded: list[PolicyFile] = []
    for name in policy.profiles:
        try:
            loaded.append(
                load_profile(
                    name,
                    origin=policy.origin,
                    rank=policy.rank_base + PROFILE_RANK_OFFSET,
                    base_dir=root,
                    env=env,
                )
            )
        except (ConfigError, OSError, ValueError) as error:
            message = f"profile {name!r} cannot load: {error}"
            return loaded, ConfigError(policy.path, policy.profiles_line, "profiles", message)
    return loaded, None


def _builtin_files(
    root: str, env: Mapping[str, str] | None
) -> tuple[list[PolicyFile], ConfigError | None]:
    from askgate.policy.builtin import load_builtin_rules

    try:
        return load_builtin_rules(base_dir=root, env=env), None
    except (ConfigError, OSError, ValueError) as error:
        return [], ConfigError("<built-in rules>", None, None, f"cannot load: {error}")


def load_policy(
    cwd: str,
    *,
    config_files: Sequence[str] = (),
    agent: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LoadedPolicy:
    """Discover, parse and merge every scope for `cwd`. Never raises for a bad file.

    A file that fails to load contributes nothing and is listed in `errors`; the caller
    must then fail closed (the CLI exits 2, the gate clamps every allow to ask). A
    managed file that fails to load is also listed in `fatal_errors`: everything is
    denied, since the administrator's floor cannot be known.
    """
    root = project_root_of(cwd, env)
    errors: list[ConfigError] = []
    fatal: list[ConfigError] = []
    warnings: list[str] = []
    files: list[PolicyFile] = []
    for source in _sources(cwd, config_files, env, errors):
        loaded, error = _load_file(source, root, env)
        if error is not None:
            errors.append(error)
            if source.origin is Origin.MANAGED:
                fatal.append(error)
        if loaded is not None:
            files.append(loaded)
            if not loaded.trusted:
                warnings.append(_untrusted_warning(loaded))
            profiles, error = _profiles_of(loaded, root, env)
            files.extend(profiles)
            if error is not None:
                errors.append(error)
                if source.origin is Origin.MANAGED:
                    fatal.append(error)
    builtin, error = _builtin_files(root, env)
    if error is not None:  # the built-in floors cannot be known: like a broken managed file
        errors.append(error)
        fatal.append(error)
    merged = merge_files(files, errors=errors, warnings=warnings, project_root=root, agent=agent)
    builtin_rules = tuple(
        rule
        for policy in builtin
        for rule in policy.rules
        if rule.agent is None or (agent is not None and rule.agent == agent)
    )
    merged = msgspec.structs.replace(
        merged, builtin_files=tuple(builtin), builtin_rules=builtin_rules
    )
    return msgspec.structs.replace(merged, fatal_errors=tuple(fatal)) if fatal else merged


def merge_files(
    files: Sequence[PolicyFile],
    *,
    errors: Sequence[ConfigError] = (),
    warnings: Sequence[str] = (),
    project_root: str,
    agent: str | None = None,
) -> LoadedPolicy:
    """Merge parsed files: rules of all scopes, settings from the highest scope setting them."""
    ordered = sorted(files, key=lambda policy: policy.rank_base)
    rules = [
        rule
        for policy in ordered
        for rule in policy.rules
        if rule.agent is None or (agent is not None and rule.agent == agent)
    ]
    rules.sort(key=lambda rule: rule.rank)
    default, default_origin, yolo = Action.ASK, Origin.BUILTIN, False
    infrastructure: list[str] = []
    extra: list[str] = []
    for policy in ordered:
        if not policy.trusted:
            continue  # belt and braces: parse_policy_text already dropped its settings
        if policy.default is not None:
            default, default_origin = policy.default, policy.origin
        if policy.yolo is not None:
            yolo = policy.yolo
        infrastructure += [p for p in policy.infrastructure_read_paths if p not in infrastructure]
        extra += [p for p in policy.extra_directories if p not in extra]
    return LoadedPolicy(
        files=tuple(ordered),
        errors=tuple(errors),
        warnings=tuple(warnings),
        rules=tuple(rules),
        default=default,
        default_origin=default_origin,
        yolo=yolo,
        infrastructure_read_paths=tuple(infrastructure),
        extra_directories=tuple(extra),
        project_root=project_root,
        agent=agent,
        sandbox=_merge_sandbox(ordered, agent),
    )


# --- rule examples ----------------------------------------------------------------------


class ExampleRun(msgspec.Struct, frozen=True, kw_only=True):
    """The examples of one file (`error` set when the file cannot be parsed at all)."""

    path: str
    examples: tuple[RuleExample, ...] = ()
    error: str | None = None


def _example_run(
    path: str, data: bytes, origin: Origin, root: str, env: Mapping[str, str] | None
) -> tuple[ExampleRun, tuple[str, ...]]:
    try:
        parsed = parse_policy_bytes(
            data,
            path=path,
            origin=origin,
            rank_base=0,
            trusted=True,  # examples are checked whatever the file's trust
            base_dir=root,
            env=env,
            check_examples=False,
        )
    except ConfigError as error:
        return ExampleRun(path=path, error=str(error)), ()
    return ExampleRun(path=path, examples=parsed.examples), parsed.profiles


def run_examples(
    cwd: str, *, config_files: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> list[ExampleRun]:
    """Every rule example of every file that applies to `cwd` (the profiles they select and
    the built-in rule files included), each checked, none raising: `askgate config test`."""
    from askgate.policy.builtin import builtin_rule_paths, profile_path

    root = project_root_of(cwd, env)
    runs: list[ExampleRun] = []
    profiles: list[str] = []
    for source in _sources(cwd, config_files, env, []):
        try:
            data = read_regular_file(source.path, MAX_FILE_BYTES)
        except (OSError, ValueError) as error:
            runs.append(ExampleRun(path=source.path, error=f"cannot read: {error}"))
            continue
        if data is None:
            if source.required:
                runs.append(ExampleRun(path=source.path, error="file not found"))
            continue
        run, selected = _example_run(source.path, data, source.origin, root, env)
        runs.append(run)
        profiles += [name for name in selected if name not in profiles]
    builtin = [profile_path(name) for name in profiles] + list(builtin_rule_paths())
    for path in builtin:
        with open(path, "rb") as handle:
            run, _ = _example_run(path, handle.read(), Origin.BUILTIN, root, env)
        runs.append(run)
    return runs


def _merge_sandbox(files: Sequence[PolicyFile], agent: str | None) -> SandboxSettings:
    """`[sandbox]` tables by rank, `[agent.NAME.sandbox]` at their file's agent rank."""
    tables = [(f.rank_base, f.sandbox, f.trusted) for f in files if f.sandbox is not None]
    tables += [
        (f.agent_rank, table, f.trusted)
        for f in files
        for name, table in f.agent_sandbox
        if agent is not None and name == agent
    ]
    tables.sort(key=lambda entry: entry[0])
    return merge_sandbox_tables((table, trusted) for _, table, trusted in tables)

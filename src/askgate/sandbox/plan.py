"""The sandbox plan: the policy's own rules turned into what the kernel must enforce.

Not a second decision: every entry comes from a rule of the loaded policy (or from the
`[sandbox]` table, or from askgate's built-in protections) and names it.

* **writable**: the project root, its extra directories, the literal roots of write allow
  rules (`~/.cache/**` -> `~/.cache`), `[sandbox] writable`, and the scratch directories
  (`/tmp`, `$TMPDIR`). Everything else is read-only. A write allow that is not a whole tree
  or a single path (`/tmp/*.txt`) cannot be a mount: it is listed in `notes` and not made
  writable (fail closed).
* **write holes**: read-only islands inside writable roots — write deny and ask rules
  (nobody can be asked in the middle of a command), askgate's own configuration, the files
  that register askgate with an agent, and the parts of `.git` that run programs or move
  git's configuration (`config`, `config.worktree`, `hooks/`, `commondir`,
  `info/attributes`; the rest of `.git` stays writable for ordinary git work, also under
  a write *ask* on `.git/**`). A hole that does not exist yet gets a placeholder at its
  first missing component (so nothing can be created there), made and removed by
  `placeholders.py` — except a missing *file* in a place a placeholder would disturb
  (`.envrc`, `.git/commondir`: git and `git add -A` would see it): that one is a
  **tripwire**, checked after the command (every process of which is gone by then) and
  moved aside if it appeared.
* **pinned**: every directory between a writable root and a hole or tripwire is bound
  onto itself, so it cannot be renamed away and rebuilt (`mv .git .git-old && mkdir .git`
  fails with EBUSY).
* **read denies** (hidden: reads as empty): read deny and ask rules, `[sandbox] hidden`,
  and askgate's control plane (its state directory with the daemon's secret and control
  token, its data directory with the trust store, the approval server's keys and the
  sandbox's own run records and plans, the daemon's runtime directory and socket). A
  rooted pattern is used as it is (`~/.ssh/**` hides `~/.ssh`; a missing one gets a
  placeholder where this user could create it); other patterns are expanded to the paths
  that exist (`expand.py`), searched from their fixed prefix, anywhere-patterns
  (`**/.env*`) from the project root, extra directories and writable roots. Each match
  is checked against the policy's own evaluation, so a nested allow (`**/.env.example`)
  stays readable — and the walk goes on below it. Past the search budget, or at a
  directory that can be entered but not listed, the plan carries `ask_reason`: the
  command is asked about instead.
* **agent sockets**: when the policy hides anything, `SSH_AUTH_SOCK` and the like are not
  passed in and the sockets they name, `$XDG_RUNTIME_DIR` and `/tmp/ssh-*` are hidden.
* **refusals** (fail closed: the sandbox does not start): a denied path that passes through
  a symlink the sandbox can write (it could be re-pointed after the mask is placed), a
  hidden file (or a file in a hidden directory) with other hard links when the policy
  says `hard_links = "refuse"`.

Reads the filesystem (stat, realpath, directory walks) but writes nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import itertools
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from askgate import locations
from askgate.policy.engine import Policy
from askgate.policy.model import Action, Rule, Surface
from askgate.policy.paths import fold_lexically
from askgate.policy.rules import expand_path_pattern
from askgate.policy.sandbox_table import SandboxSettings
from askgate.sandbox.expand import (
    MAX_SECONDS,
    MAX_VISITED,
    Expansion,
    expand,
    expand_all,
    fixed_prefix,
)
from askgate.sandbox.planentry import PlanEntry, TreeWatch, _Source
from askgate.sandbox.planentry import gitdir_of_link as _gitdir_of_link

# The parts of a git directory that run programs (`config`: core.fsmonitor, aliases;
# `hooks/`) or make git read its configuration from elsewhere (`commondir`,
# `config.worktree`, `info/attributes`' drivers): read-only inside, the rest of `.git`
# (objects, refs, index, HEAD, logs, worktrees' own state) writable for ordinary git work.
GIT_PROTECTED: tuple[str, ...] = (
    "config",
    "config.worktree",
    "hooks/**",
    "commondir",
    "info/attributes",
    "worktrees/*/config.worktree",
    "worktrees/*/commondir",
    "modules/*/config",
    "modules/*/hooks/**",
)
# A linked worktree's own git directory (`main/.git/worktrees/NAME`): what git reads
# configuration from there (its hooks and config are the common directory's).
LINKED_WORKTREE_PROTECTED: tuple[str, ...] = ("config.worktree", "commondir")
# Environment variables naming an agent's socket: a key agent signs with keys the sandbox
# hides (`ssh -A` through `SSH_AUTH_SOCK` works with ~/.ssh hidden and network off).
AGENT_SOCKET_VARIABLES: tuple[str, ...] = ("SSH_AUTH_SOCK", "GPG_AGENT_INFO", "SSH_AGENT_PID")
# A container runtime's socket is root on the host (`docker run -v /:/host`): hidden with
# the agents' sockets whenever the plan hides secrets. `$XDG_RUNTIME_DIR` (rootless
# docker and podman) is hidden whole; `DOCKER_HOST` / `CONTAINER_HOST` may name another.
CONTAINER_SOCKETS: tuple[str, ...] = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/run/buildkit/buildkitd.sock",
)
CONTAINER_SOCKET_VARIABLES: tuple[str, ...] = ("DOCKER_HOST", "CONTAINER_HOST")
CONTAINER_SOCKET = "a container runtime's socket (the plan hides secrets)"
SCRATCH_SOCKET = "a server's socket in a scratch directory (the plan hides secrets)"
# Missing registration files get a placeholder the agent can still parse.
JSON_PLACEHOLDER = b"{}\n"
REGISTERS = "registers askgate with an agent"
GIT_LINK_FILE = "git: a .git file names the git directory git uses there"
SCRATCH_DIRECTORIES: tuple[str, ...] = ("/tmp", "/var/tmp")
SCRATCH = "scratch directory"
CONTROL_PLANE = "askgate's control plane (hidden in every sandbox)"
DAEMON_SOCKET = "askgate's daemon socket directory (hidden in every sandbox)"
SECRET_HOLDER = "holds the daemon's secret (an http hook's X-Askgate-Secret header)"
DAEMON_SECRET_HEADER = b"X-Askgate-Secret"
MAX_SETTINGS_BYTES = 1 << 20
_BLOCKING = (Action.DENY, Action.ASK)


class SandboxPlan(msgspec.Struct, frozen=True, kw_only=True):
    cwd: str
    project_root: str
    mode: str  # "off" | "on" | "required"
    network: bool
    hard_links: str
    writable: tuple[PlanEntry, ...]
    write_holes: tuple[PlanEntry, ...]
    read_denies: tuple[PlanEntry, ...]
    pinned: tuple[str, ...] = ()  # directories bound onto themselves (cannot be renamed)
    tripwires: tuple[PlanEntry, ...] = ()  # missing protected files: moved aside if made
    # Protected names made below the roots: the directories to watch (treewatch.py).
    watch: TreeWatch | None = None
    unset_env: tuple[str, ...] = ()  # agent sockets not passed in
    environment: tuple[str, ...] | None = None  # [sandbox] environment: only these pass in
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
    # askgate's own loopback ports (netplan.askgate_ports): refused whatever `[net]` says.
    net_floor_ports: tuple[int, ...] = ()

    @property
    def startable(self) -> bool:
        return not self.refusals and self.ask_reason is None


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


# One plan asks for the same few real paths many times (each candidate, each form of it):
# remembered for the length of one `build_plan` only (a context variable, so the
# daemon's concurrent plans never share one).
_REAL_PATHS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "askgate_sandbox_real_paths", default=None
)


def _real(path: str) -> str:
    cache = _REAL_PATHS.get()
    if cache is None or not path.startswith("/"):
        return fold_lexically(os.path.realpath(path))
    return _resolve(path, cache)


def _resolve(path: str, cache: dict[str, str]) -> str:
    """`realpath` one component at a time, each resolved directory remembered: the
    candidates of a plan share most of their parents (one lstat each, not one per path
    per component). A symlinked component is resolved by `realpath` itself."""
    found = cache.get(path)
    if found is not None:
        return found
    parent, name = os.path.split(path)
    if parent == path:
        return "/"
    base = _resolve(parent, cache) if parent != "/" else "/"
    if name in ("", "."):
        found = base
    elif name == "..":
        found = os.path.dirname(base)  # after the links: `link/..` is the target's parent
    else:
        candidate = os.path.join(base, name)
        found = (
            fold_lexically(os.path.realpath(candidate)) if os.path.islink(candidate) else candidate
        )
    cache[path] = found
    return found


def _under(path: str, root: str) -> bool:
    """`is_inside` for paths already absolute and folded (every path of a plan is)."""
    return path == root or root == "/" or path.startswith(root + "/")


def _inside_any(path: str, roots: Iterable[str]) -> bool:
    return any(_under(path, root) for root in roots)


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
        self.listed: set[str] = set()  # the directories the anywhere-walk listed
        self._hole_sources: list[_Source] | None = None

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

    def control_plane(self) -> list[str]:
        """askgate's own state that a sandboxed command must not even see: the state
        directory (review log, the daemon's secret and control token), the data directory
        (trust store, approval server keys, the sandbox's run records, plans and
        placeholder registry) and the daemon's runtime directory (its socket)."""
        env = self.policy.env
        found: list[str] = []
        for directory in (locations.state_dir, locations.trust_store_dir):
            try:
                found.append(directory(env))
            except ValueError:
                continue
        found.append(locations.daemon_socket_dir(env))
        return [p for p in dict.fromkeys(found) if p.startswith("/") and p != "/"]

    def hole_sources(self) -> list[_Source]:
        """The write-protecting patterns (rules, floors, git's parts): made once per plan
        (the walk, the holes and the watch read them; git configs are parsed here)."""
        if self._hole_sources is None:
            self._hole_sources = self._make_hole_sources()
        return self._hole_sources

    def _make_hole_sources(self) -> list[_Source]:
        from askgate.policy.protected import protected_paths, registration_paths

        sources = [
            _Source(self._absolute(rule), describe_rule(rule), rule=True)
            for rule in self._rules(Surface.WRITE, _BLOCKING)
        ]
        protected = "askgate's own configuration and state"
        hidden = [p + "/**" for p in self.control_plane()]
        sources += [
            _Source(p, protected)
            for p in protected_paths(self.policy.env, self.root)
            if p not in hidden
        ]
        sources += [
            _Source(expand_path_pattern(p, home=self.home, base_dir=self.root), REGISTERS)
            for p in registration_paths(self.policy.env)
        ]
        git = os.path.join(self.root, ".git")
        why = "git: git runs programs or reads its configuration from here"
        if os.path.lexists(git) and (os.path.islink(git) or not os.path.isdir(git)):
            sources.append(_Source(git, "git worktree link"))
        # A submodule's or linked worktree's `.git` *file* below the root names the git
        # directory `git status` outside recurses into: re-pointed, it runs that one's
        # fsmonitor. Existing files only (holes below); a `.git` directory stays writable.
        sources.append(_Source("**/.git", GIT_LINK_FILE))
        sources += [
            _Source(f"{directory}/{part}", why)
            for directory, parts in git_directories(git)
            for part in parts
        ]
        sources += git_config_sources(git, self.root, self.policy.env)
        return sources

    def search_roots(self, writable: Sequence[PlanEntry]) -> list[str]:
        """Where patterns without a fixed prefix (`**/.env*`) are searched: where the agent
        works, not shared scratch space (a walk of /tmp would be slow and list other
        people's files). A scratch directory stays unsearched when a write rule names it
        or a directory in it (`"/tmp/**" = "allow"`), as it is without one — unless that
        root lies in the project, an extra directory or HOME (`~/.cache` with HOME in
        /tmp), which are searched whatever holds them."""
        search = list(dict.fromkeys([self.root, *self.policy.extra_directories]))
        scratch = self.scratch_directories()
        kept = [_real(p) for p in (*search, *([self.home] if self.home else []))]
        search += [
            entry.path
            for entry in writable
            if entry.path not in search
            and entry.why != SCRATCH
            and entry.kind == "dir"
            and (not _inside_any(entry.path, scratch) or _inside_any(entry.path, kept))
        ]
        return search

    def scratch_directories(self) -> list[str]:
        """The scratch directories (`/tmp`, `/var/tmp`, `$TMPDIR`, symlinks resolved),
        writable in every sandbox and never searched."""
        tmpdir = self.policy.env.get("TMPDIR", "")
        named = [*SCRATCH_DIRECTORIES, *([tmpdir] if tmpdir.startswith("/") else [])]
        return [p for p in dict.fromkeys(_real(p) for p in named) if p != "/"]

    def unsearched_scratch(self) -> list[str]:
        """The scratch directories a walk from a wider root (`"/var/**" = "allow"` holds
        /var/tmp) does not enter: those outside the project, the extra directories and
        HOME (a scratch directory there was always searched with them)."""
        kept = [self.root, *self.policy.extra_directories, *([self.home] if self.home else [])]
        real = [_real(p) for p in kept]
        return [p for p in self.scratch_directories() if not _inside_any(p, real)]

    def _at_roots(self, source: _Source) -> list[str]:
        """An anywhere-pattern with a literal tail (`**/.envrc`, `**/.claude/settings.json`,
        `**/.codex/**`) also names that path at the project root and each extra directory,
        existing or not: a missing one must not be created there either."""
        if not source.pattern.startswith("**/"):
            return []
        tail = source.pattern[3:]
        prefix, rest = fixed_prefix(tail)
        if not prefix or rest not in ("", "**"):
            return []
        roots = dict.fromkeys([self.root, *self.policy.extra_directories])
        return [os.path.join(root, prefix) for root in roots]

    def holes(self, writable: Sequence[PlanEntry]) -> tuple[list[PlanEntry], list[PlanEntry]]:
        """(holes, tripwires) inside the writable roots."""
        roots = [entry.path for entry in writable]
        holes: list[PlanEntry] = []
        tripwires: list[PlanEntry] = []
        search = self.search_roots(writable)
        sources = self.hole_sources()
        for source in sources:
            found = [path for path, _whole in self._paths(source, searched=search)]
            for path in dict.fromkeys([*found, *self._at_roots(source)]):
                real = _real(path)
                wire = _link_tripwire(path, roots, source)
                if wire is not None and (not source.rule or self._blocked(Surface.WRITE, path)):
                    tripwires.append(wire)
                if not _inside_any(real, roots):
                    continue  # already read-only
                if source.rule and not self._blocked(Surface.WRITE, path):
                    continue  # a nested allow wins here (it is a writable root of its own)
                if source.rule and self._is_git_dir_asked(path):
                    continue  # ordinary git work stays writable; GIT_PROTECTED holds
                kind = _kind(real)
                if source.why == GIT_LINK_FILE and (kind != "file" or os.path.islink(path)):
                    continue  # a repository's own .git directory, or none: git init works
                placeholder = None
                if kind == "missing":
                    placeholder = _first_missing(real)
                    if placeholder is None or not _inside_any(os.path.dirname(placeholder), roots):
                        continue
                    if os.path.basename(os.path.dirname(real)) == ".git" and not os.path.isdir(
                        os.path.dirname(real)
                    ):
                        continue  # no repository here: `git init` must still work
                entry = PlanEntry(
                    path=real,
                    named=path,
                    kind=kind,
                    why=source.why,
                    pattern=source.pattern,
                    placeholder=placeholder,
                )
                if placeholder is not None and _is_tripwire(entry):
                    tripwires.append(msgspec.structs.replace(entry, placeholder=None))
                else:
                    holes.append(entry)
        from askgate.sandbox.tripwires import startup_globs

        tripwires += startup_globs(sources, roots, self.policy.env, self._blocked)
        tripwires += gitlink_tripwires(os.path.join(self.root, ".git"), self.root, roots)
        kept = _outermost(holes)
        covered = [h.placeholder or h.path for h in kept]
        return kept, [t for t in _outermost(tripwires) if not _inside_any(t.path, covered)]

    def tree_watch(
        self,
        writable: Sequence[PlanEntry],
        holes: Sequence[PlanEntry],
        denies: Sequence[PlanEntry],
        tripwires: Sequence[PlanEntry],
    ) -> TreeWatch | None:
        """The directories where a protected name missing below the roots could be made
        (treewatch.py): those the walk listed, in a writable root, not hidden or frozen."""
        from askgate.sandbox import treewatch

        sources = self.hole_sources()
        tails = treewatch.literal_tails(sources, self.root, self._blocked)
        tail_patterns = {f"**/{tail}" for tail, _why in tails}
        tail_patterns |= {f"**/{tail}/**" for tail, _why in tails}
        existing = [
            path
            for pattern, expansion in self.expanded.items()
            if pattern in tail_patterns
            for path in expansion.paths
        ]
        covered = [h.path for h in holes if h.kind == "dir"]
        covered += [h.placeholder for h in holes if h.placeholder]
        covered += [_target(d) for d in denies]
        search = self.search_roots(writable)
        return treewatch.build(
            listed=self.listed,
            real_roots=sorted(((p, _real(p)) for p in search), key=lambda x: -len(x[0])),
            writable=[w.path for w in writable if w.kind == "dir"],
            covered=covered,
            git_dir=_real(os.path.join(self.root, ".git")),
            tails=tails,
            existing=[*existing, *treewatch.entries_of([*holes, *tripwires])],
        )

    def _is_git_dir_asked(self, path: str) -> bool:
        """A git directory under a write *ask* (the init profile's `.git/**`): nobody can
        be asked mid-command, and freezing all of it breaks every commit. Its dangerous
        parts are holes of their own (GIT_PROTECTED); a *deny* still freezes all of it."""
        if os.path.basename(path) != ".git" or not os.path.isdir(path):
            return False
        actions = {
            self.policy.rules.evaluate(Surface.WRITE, form, self.agent).action
            for form in dict.fromkeys((path, _real(path)))
        }
        return Action.DENY not in actions

    # --- read denies -------------------------------------------------------------------

    def read_sources(self) -> list[tuple[_Source, Rule | None]]:
        # The control plane first: where a built-in read deny (policy/protected.py) names
        # the same directory, the control plane's entry is the one kept (`_outermost` is
        # stable), so it stays pinned and Landlock knows the socket directory.
        socket_dir = locations.daemon_socket_dir(self.policy.env)
        sources: list[tuple[_Source, Rule | None]] = [
            (_Source(p + "/**", DAEMON_SOCKET if p == socket_dir else CONTROL_PLANE), None)
            for p in self.control_plane()
        ]
        sources += [
            (_Source(self._absolute(rule), describe_rule(rule)), rule)
            for rule in self._rules(Surface.READ, _BLOCKING)
        ]
        sources += [(_Source(p, "[sandbox] hidden"), None) for p in self.settings.hidden]
        return sources

    def holding(self) -> str | None:
        """askgate's holding directory for redirect placeholders, when this plan hides it
        (it lies in the data directory, part of the control plane): else None, and every
        placeholder is a mount."""
        try:
            held = holding_directory(self.policy.env)
            data = locations.trust_store_dir(self.policy.env)
        except ValueError:
            return None
        if not held.startswith("/") or data not in self.control_plane():
            return None
        return held

    def read_denies(self, writable: Sequence[PlanEntry]) -> list[PlanEntry]:
        search = self.search_roots(writable)
        roots = [entry.path for entry in writable]
        held = self.holding()
        entries: list[PlanEntry] = []
        for source, rule in self.read_sources():
            if source.why in (CONTROL_PLANE, DAEMON_SOCKET):
                hold: str | None = None  # never a redirect: the holding directory is in it
            else:
                hold = held
            for path, whole in self._paths(source, searched=search):
                if rule is not None and not self._blocked(Surface.READ, path):
                    continue  # a nested allow (`**/.env.example`) wins for this file
                real = _real(path)
                kind = _kind(real)
                placeholder = None
                redirect = False
                link = _held_link(path, hold, roots) if hold and whole else None
                if link is not None:  # a live run's redirect placeholder: shared
                    real, kind, placeholder, redirect = link[0], "missing", link[1], True
                elif kind == "missing":
                    # A rooted deny names a path that may appear while the command runs
                    # (made outside, by the user or another program): hold its place.
                    # Where this user cannot create it, no command of theirs can either.
                    placeholder = _first_missing(real) if whole else None
                    if placeholder is None or not os.access(os.path.dirname(placeholder), os.W_OK):
                        continue
                    redirect = hold is not None and not _inside_any(
                        os.path.dirname(placeholder), roots
                    )
                entries.append(
                    PlanEntry(
                        path=real,
                        named=path,
                        kind=kind,
                        why=source.why,
                        pattern=source.pattern,
                        placeholder=placeholder,
                        redirect=redirect,
                    )
                )
        entries += self.secret_holders()
        entries += self.agent_sockets(_secrets(entries))
        return _outermost(entries)

    def secret_holders(self) -> list[PlanEntry]:
        """Registration files that hold the daemon's secret (`askgate install claude-code
        --http` writes it into the hook's `X-Askgate-Secret` header): hidden, not only
        read-only — with the secret a command could forge hook calls to the daemon."""
        from askgate.policy.protected import registration_paths

        candidates: list[str] = []
        for pattern in registration_paths(self.policy.env):
            absolute = expand_path_pattern(pattern, home=self.home, base_dir=self.root)
            if absolute.startswith("**/"):
                candidates += self._at_roots(_Source(absolute, ""))
            elif "*" not in absolute:
                candidates.append(absolute)
        entries: list[PlanEntry] = []
        for path in dict.fromkeys(c for c in candidates if c.endswith(".json")):
            if _holds_daemon_secret(path):
                entries.append(
                    PlanEntry(path=_real(path), named=path, kind="file", why=SECRET_HOLDER)
                )
        return entries

    def agent_sockets(self, hidden: Sequence[PlanEntry]) -> list[PlanEntry]:
        """With secrets hidden, the agents that hold them are hidden too: the sockets the
        agent variables name, the session's runtime directory, ssh-agent's /tmp/ssh-*."""
        if not hidden:
            return []
        env = self.policy.env
        why = "an agent's socket (the plan hides secrets)"
        paths = [env.get(name, "") for name in AGENT_SOCKET_VARIABLES[:2]]
        paths = [p.split(":", 1)[0] for p in paths]
        runtime = env.get("XDG_RUNTIME_DIR", "")
        paths.append(runtime)
        scratch_found = [p for d in self.scratch_directories() for p in scratch_sockets(d)]
        containers = list(CONTAINER_SOCKETS)
        if runtime.startswith("/"):
            containers += [f"{runtime}/docker.sock", f"{runtime}/podman/podman.sock"]
        for name in CONTAINER_SOCKET_VARIABLES:
            value = env.get(name, "")
            if value.startswith("unix://"):
                containers.append(value[len("unix://") :])
        entries: list[PlanEntry] = []
        named = [(p, why) for p in paths] + [(p, CONTAINER_SOCKET) for p in containers]
        named += [(p, SCRATCH_SOCKET) for p in scratch_found]
        seen: set[str] = set()
        for path, reason in named:
            if not path.startswith("/") or path == "/" or path in seen:
                continue
            seen.add(path)
            real = _real(path)
            kind = _kind(real)
            if kind != "missing" and real not in (e.path for e in entries):
                entries.append(PlanEntry(path=real, named=path, kind=kind, why=reason))
        return entries

    def unset_env(self, hidden: Sequence[PlanEntry]) -> tuple[str, ...]:
        if not hidden:
            return ()
        return tuple(name for name in AGENT_SOCKET_VARIABLES if name in self.policy.env)

    def _blocked(self, surface: Surface, path: str) -> bool:
        """Does the policy itself (all rules, overrides included) deny or ask `path`?"""
        for form in dict.fromkeys((path, _real(path))):
            evaluation = self.policy.rules.evaluate(surface, form, self.agent)
            if evaluation.action in _BLOCKING:
                return True
        return False

    def expand_sources(self, writable: Sequence[PlanEntry]) -> None:
        """Expand every pattern of the plan up front: one walk for all of them."""
        holes = self.hole_sources()
        reads = self.read_sources()
        # Which surface each rule pattern speaks for: a directory a rule matches is only
        # masked (and not walked below) where the policy's evaluation agrees.
        rule_surfaces: dict[str, set[Surface]] = {}
        unconditional: set[str] = set()
        for source in holes:
            if source.rule:
                rule_surfaces.setdefault(source.pattern, set()).add(Surface.WRITE)
            else:
                unconditional.add(source.pattern)
        for source, rule in reads:
            if rule is not None:
                rule_surfaces.setdefault(source.pattern, set()).add(Surface.READ)
            else:
                unconditional.add(source.pattern)

        def final(pattern: str, path: str) -> bool:
            if pattern in unconditional:
                return True
            return any(self._blocked(surface, path) for surface in rule_surfaces.get(pattern, ()))

        patterns = [source.pattern for source in holes]
        patterns += [source.pattern for source, _rule in reads]
        self.expanded = expand_all(
            patterns,
            self.search_roots(writable),
            deadline=self.deadline,
            final=final,
            skip=self.unsearched_scratch(),
            listed=self.listed,
        )

    def _paths(self, source: _Source, *, searched: Sequence[str]) -> list[tuple[str, bool]]:
        expansion = self.expanded.get(source.pattern)
        if expansion is None:
            expansion = expand(source.pattern, searched, deadline=self.deadline)
        if expansion.over_budget is not None and self.ask_reason is None:
            self.ask_reason = (
                f"the sandbox cannot list every path {source.pattern!r} covers "
                f"({expansion.over_budget}; {source.why})"
            )
        for tree in expansion.unsearched:  # a data tree past its own budget (expand.py)
            note = f"a data tree not searched to the end (its own budget ran out): {tree}"
            if note not in self.notes:
                self.notes.append(note)
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
        # other hard links stay readable, a frozen file's stay writable. Under "refuse",
        # the files inside hidden and frozen directories are looked at too.
        refuse = self.settings.hard_links == "refuse"
        for entries, verb in ((denies, "hide"), (holes, "keep read-only")):
            for entry in entries:
                for path, links in self._linked_files(entry, deep=refuse):
                    text = (
                        f"{path} has {links - 1} other hard link(s) the sandbox cannot "
                        f"{verb} ({entry.why})"
                    )
                    (self.refusals if refuse else self.warnings).append(text)

    def _linked_files(self, entry: PlanEntry, *, deep: bool) -> list[tuple[str, int]]:
        if entry.kind == "file":
            links = _hard_links(entry.path)
            return [(entry.path, links)] if links > 1 else []
        if entry.kind != "dir" or not deep:
            return []
        found: list[tuple[str, int]] = []
        stack, visited = [entry.path], 0
        while stack:
            directory = stack.pop()
            try:
                children = list(os.scandir(directory))
            except OSError as error:
                if error.errno == errno.EACCES and os.access(directory, os.X_OK):
                    self._incomplete(f"{directory} can be entered but not listed", entry)
                continue
            visited += len(children)
            if visited > MAX_VISITED or time.monotonic() > self.deadline:
                self._incomplete(f"too many files below {entry.path} to check", entry)
                break
            for child in children:
                with contextlib.suppress(OSError):
                    info = child.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(child.path)
                    elif stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
                        found.append((child.path, info.st_nlink))
        return found

    def _incomplete(self, why: str, entry: PlanEntry) -> None:
        if self.ask_reason is None:
            self.ask_reason = f"the sandbox cannot check hard links: {why} ({entry.why})"


# Directories in a scratch directory that hold the sockets of servers that run what they
# are sent (a tmux server's `run-shell`, an X server's keystrokes, an ssh agent's keys).
SOCKET_DIRECTORIES = re.compile(r"(tmux-\d+|ssh-.+|\.X11-unix|\.ICE-unix|emacs\d+|nvim.*|screen.*)")
# Directories of this user there, of other names, looked into for a socket (at most).
MAX_OWNED_SCANS = 256
MAX_SOCKET_DIR_ENTRIES = 64


def scratch_sockets(scratch: str) -> list[str]:
    """The Unix sockets of a scratch directory (shared with the sandbox, writable): each
    socket at its top, each directory named like a server's socket directory, and each
    directory of this user holding a socket. A read-only bind does not stop `connect()`,
    and no network is needed: the user's tmux server would run a command outside.

    Every entry is looked at, however many a command put there (a count bound would let
    it push `tmux-UID` out of sight); most cost only their directory record (the entry's
    type), a stat only for what is neither a file, a directory nor a link. Only the look
    into other directories of this user (the best-effort part) is bounded."""
    found: list[str] = []
    me = os.getuid()
    scans = 0
    try:
        with os.scandir(scratch) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                        continue
                    if not entry.is_dir(follow_symlinks=False):
                        if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                            found.append(entry.path)
                    elif SOCKET_DIRECTORIES.fullmatch(entry.name):
                        found.append(entry.path)
                    elif scans < MAX_OWNED_SCANS and entry.stat(follow_symlinks=False).st_uid == me:
                        scans += 1
                        if _holds_socket(entry.path):
                            found.append(entry.path)
    except OSError:
        pass
    return found


def _holds_socket(directory: str) -> bool:
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in itertools.islice(entries, MAX_SOCKET_DIR_ENTRIES):
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    return True
    return False


def _holds_daemon_secret(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return DAEMON_SECRET_HEADER in handle.read(MAX_SETTINGS_BYTES)
    except OSError:
        return False


def _secrets(hidden: Sequence[PlanEntry]) -> list[PlanEntry]:
    """What the policy hides (askgate's own control plane is hidden in every plan)."""
    return [e for e in hidden if e.why not in (CONTROL_PLANE, DAEMON_SOCKET)]


def _common_dir(git_dir: str) -> str | None:
    """The directory `GIT_DIR/commondir` names (relative to GIT_DIR), or None."""
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as handle:
            text = handle.read(4096).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return None
    return fold_lexically(os.path.join(git_dir, text)) if text else None


def git_directories(git: str) -> list[tuple[str, tuple[str, ...]]]:
    """Every git directory whose configuration and hooks a `git` run in the project
    obeys, with the parts of it to protect: the project's `.git` directory (all of
    GIT_PROTECTED) — or, for a linked worktree (a `.git` file), the directory it names
    (`…/.git/worktrees/NAME`: git reads its `config.worktree` and `commondir`) — and the
    common directory its `commondir` points to (the main repository's `.git`: `config`,
    `hooks/`, …). Symlinks resolved; existing directories only."""
    if os.path.isdir(git):
        first, parts = _real(git), GIT_PROTECTED
    elif os.path.isfile(git):
        named = _gitdir_of_link(git)
        if named is None:
            return []
        first, parts = _real(named), LINKED_WORKTREE_PROTECTED
    else:
        return []
    if not os.path.isdir(first):
        return []
    found = [(first, parts)]
    common = _common_dir(first)
    if common is not None and os.path.isdir(common) and _real(common) != first:
        found.append((_real(common), GIT_PROTECTED))
    return found


def gitlink_tripwires(git: str, worktree: str, roots: Sequence[str]) -> list[PlanEntry]:
    """The index of the project's git directory, watched for planted gitlinks."""
    from askgate.sandbox.tripwires import index_tripwire

    found = git_directories(git)
    wire = index_tripwire(found[0][0], worktree, roots) if found else None
    return [wire] if wire is not None else []


def git_config_sources(git: str, worktree: str, env: Mapping[str, str]) -> list[_Source]:
    """What the frozen git configuration names (hooks path, included files, programs):
    frozen too (gitconfig.py)."""
    from askgate.sandbox.gitconfig import global_files, named_paths, submodule_configs

    files = [
        f"{directory}/{name}"
        for directory, parts in git_directories(git)
        for name in ("config", "config.worktree")
        if name in parts
    ]
    files += submodule_configs(git_directories(git))
    found = named_paths([*files, *global_files(env)], worktree=worktree, env=env)
    return [_Source(f"{path}/**" if kind == "dir" else path, why) for path, kind, why in found]


def _link_tripwire(path: str, roots: Sequence[str], source: _Source) -> PlanEntry | None:
    """A protected name that is itself a symlink (`.git/hooks -> ../tools/hooks`, a stowed
    `~/.bashrc`) is frozen at its target; the link, in a writable directory, is watched:
    put back after the run if it was replaced (tripwires.py)."""
    if not os.path.islink(path):
        return None
    parent = _real(os.path.dirname(path))
    if not _inside_any(parent, roots):
        return None  # the link's directory is read-only inside
    try:
        text = os.readlink(path)
    except OSError:
        return None
    where = os.path.join(parent, os.path.basename(path))
    why = f"{source.why} (a symlink: frozen at its target, put back if replaced)"
    return PlanEntry(
        path=where, named=path, kind="link", why=why, pattern=source.pattern, link=text
    )


def _is_tripwire(entry: PlanEntry) -> bool:
    """A missing protected *file* whose placeholder would be seen (git, `git add -A`,
    direnv): watched instead. Registration files get a `{}` placeholder (an agent watching
    its settings must never see a rewritten one, even for the length of a command); any
    other JSON file (`.mcp.json`, which git would list) is a tripwire like the rest."""
    if entry.placeholder != entry.path or entry.pattern.endswith("/**"):
        return False  # a directory placeholder: invisible to git, harmless to programs
    return not (entry.why == REGISTERS and entry.path.endswith(".json"))


def _hard_links(path: str) -> int:
    try:
        return os.stat(path).st_nlink
    except OSError:
        return 1


def _first_missing(path: str) -> str | None:
    """The shallowest component of `path` that does not exist (None if all exist): found
    walking up from `path`, since most of its parents exist."""
    if os.path.lexists(path):
        return None
    current = path
    while True:
        parent = os.path.dirname(current)
        if parent == current or os.path.lexists(parent):
            return current
        current = parent


HELD = "held"


def holding_directory(env: Mapping[str, str]) -> str:
    """Where redirect placeholders point: `$XDG_DATA_HOME/askgate/sandbox/held`, inside
    askgate's data directory, which every sandbox hides (placeholders.state_directory)."""
    return os.path.join(locations.trust_store_dir(env), "sandbox", HELD)


def _held_link(named: str, held: str, roots: Sequence[str]) -> tuple[str, str] | None:
    """(path, link) when a component of `named` is a live redirect placeholder — a
    symlink into the holding directory, in a directory the sandbox cannot write — else
    None. `path` is `named` with symlinks above the link resolved."""
    if not named.startswith("/"):
        return None
    current = "/"
    for segment in named.strip("/").split("/"):
        current = os.path.join(current, segment)
        if not os.path.islink(current):
            if not os.path.lexists(current):
                return None
            continue
        if not _under(_real(current), held):
            continue
        parent = _real(os.path.dirname(current))
        if _inside_any(parent, roots):
            return None  # one the command could have made: not a placeholder of ours
        link = os.path.join(parent, os.path.basename(current))
        rest = os.path.relpath(named, current)
        return (link if rest == "." else os.path.join(link, rest)), link
    return None


def _target(entry: PlanEntry) -> str:
    """Where the entry's mount goes: its placeholder (first missing component) or itself."""
    return entry.placeholder or entry.path


def _outermost(entries: Sequence[PlanEntry]) -> list[PlanEntry]:
    """Drop entries inside another entry (its mount already covers them), keep order.
    Compared by path *and* by mount target: a mount whose target lies below another
    entry's placeholder would have to be made inside that read-only mount (bwrap: "Can't
    create file … Read-only file system"), and the outer mount covers it anyway."""
    kept: list[PlanEntry] = []
    for entry in sorted(entries, key=lambda e: (_target(e).count("/"), e.path)):
        target = _target(entry)
        if not any(
            _under(entry.path, other.path)
            or (target != _target(other) and _under(target, _target(other)))
            for other in kept
        ):
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
    token = _REAL_PATHS.set({})
    try:
        return _build_plan(policy, settings, cwd=cwd, agent=agent, mode=mode)
    finally:
        _REAL_PATHS.reset(token)


def _build_plan(
    policy: Policy, settings: SandboxSettings, *, cwd: str, agent: str | None, mode: str | None
) -> SandboxPlan:
    builder = _Builder(policy, settings, cwd, agent)
    writable = builder.writable()
    builder.expand_sources(writable)
    holes, tripwires = builder.holes(writable)
    denies = builder.read_denies(writable)
    # A hole inside a hidden directory is covered by the (read-only) mask already.
    hidden = [_target(d) for d in denies]
    holes = [h for h in holes if not _inside_any(h.path, hidden)]
    holes = [h for h in holes if not any(_target(h) != t and _under(_target(h), t) for t in hidden)]
    tripwires = [t for t in tripwires if not _inside_any(t.path, hidden)]
    builder.check(writable, holes, denies)
    watch = builder.tree_watch(writable, holes, denies, tripwires)
    if policy.errors:
        builder.refusals.append(f"a policy file failed to load: {policy.errors[0]}")
    net: dict[str, object] = {}
    if settings.network == "policy":  # the [net] hosts, through askgate's proxy
        from askgate.sandbox.netplan import plan_fields

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
        # askgate's control plane is hidden *and* guarded: renaming ~/.local away from
        # the state directory would let the command rebuild it (a forged control token).
        pinned=pinned_ancestors(
            writable,
            [
                *holes,
                *(t for t in tripwires if t.kind not in ("glob", "index")),  # no mount
                *(d for d in denies if d.why in (CONTROL_PLANE, DAEMON_SOCKET)),
            ],
        ),
        tripwires=tuple(tripwires),
        watch=watch,
        unset_env=builder.unset_env(_secrets(denies)),
        environment=settings.environment,
        refusals=tuple(builder.refusals),
        ask_reason=builder.ask_reason,
        warnings=tuple(builder.warnings),
        notes=tuple(builder.notes),
        **net,  # type: ignore[arg-type]
    )


def pinned_ancestors(
    writable: Sequence[PlanEntry], guarded: Sequence[PlanEntry]
) -> tuple[str, ...]:
    """The directories between a writable root and each guarded path (a hole, its
    placeholder, a tripwire): each is bound onto itself, so it is a mount point inside and
    renaming or removing it fails (EBUSY). Without that, `mv .git .git-old && mkdir .git`
    leaves the holes behind in .git-old and rebuilds .git/config freely."""
    roots = [entry.path for entry in writable if entry.kind == "dir"]
    pinned: list[str] = []
    for entry in guarded:
        target = entry.placeholder or entry.path
        inside = [root for root in roots if _under(target, root) and root != target]
        if not inside:
            continue
        root = max(inside, key=len)  # the deepest writable root: its own mount
        current = os.path.dirname(target)
        while current != root and _under(current, root) and current != "/":
            if current not in roots and os.path.isdir(current):
                pinned.append(current)
            current = os.path.dirname(current)
    return tuple(sorted(dict.fromkeys(pinned), key=lambda p: (p.count("/"), p)))

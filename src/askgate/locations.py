"""Where askgate keeps its state: one place for every path it owns, and for the XDG rules.

    user policy        $XDG_CONFIG_HOME/askgate/policy.toml     (~/.config)
    managed policy     /etc/askgate/policy.toml
    trust store        $XDG_DATA_HOME/askgate/trusted.json      (~/.local/share)
    approval server    $XDG_DATA_HOME/askgate/server/           (database, keys)
    state directory    $XDG_STATE_HOME/askgate/                 (~/.local/state)
    review log         <state directory>/review.jsonl
    daemon socket dir  $ASKGATE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/askgate  (/tmp/askgate-<uid>)
    forwarding root    $ASKGATE_FORWARDING_DIR, else <pi agent dir>/sessions/permission-forwarding

An XDG variable that is unset, empty or *relative* is ignored, as the XDG Base Directory
specification says: a relative `XDG_STATE_HOME` would otherwise put the review log inside
whatever project the agent runs in, where the agent can rewrite it. The same goes for
askgate's own directory variables (`ASKGATE_FORWARDING_DIR`, `PI_CODING_AGENT_DIR`).

This module is a leaf: it imports nothing of askgate's, so every layer may use it —
`policy/` included, which otherwise imports nothing else of ours (the rules here are data
about the machine, not about decisions, and policy needs them to find its files and to
protect askgate's state).

Test seams: `ASKGATE_MANAGED_POLICY` names another managed file only while the real
`/etc/askgate/policy.toml` does not exist (nothing exists there on a test machine), and
`ASKGATE_AUDIT_LOG=off` silences the review log only while no managed file exists. So
neither variable can replace or silence an administrator's managed policy.
"""

from __future__ import annotations

import os
import pwd

TYPE_CHECKING = False  # not `typing`: the relay imports this module on every tool call
if TYPE_CHECKING:
    from collections.abc import Mapping

SYSTEM_MANAGED_POLICY = "/etc/askgate/policy.toml"
MANAGED_POLICY_ENV = "ASKGATE_MANAGED_POLICY"
AUDIT_LOG_ENV = "ASKGATE_AUDIT_LOG"
RUNTIME_DIR_ENV = "ASKGATE_RUNTIME_DIR"
FORWARDING_DIR_ENV = "ASKGATE_FORWARDING_DIR"
PI_AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
APP = "askgate"


def _environ(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _absolute(value: str | None) -> str | None:
    """`value` when it is a usable absolute path, else None (unset, relative, NUL)."""
    if not value or not value.startswith("/") or "\x00" in value:
        return None
    return value


def home(env: Mapping[str, str] | None = None) -> str:
    """`$HOME` when absolute; with the real environment, else the password database.

    An explicit `env` without an absolute HOME is an error rather than a guess, so tests
    never reach the real home directory. Raises ValueError.
    """
    found = _absolute(_environ(env).get("HOME"))
    if found is None and env is None:
        try:
            found = _absolute(pwd.getpwuid(os.getuid()).pw_dir)
        except (KeyError, OSError):
            found = None
    if found is None:
        raise ValueError("HOME is not set to an absolute path")
    return found


def _account_home(env: Mapping[str, str] | None) -> str:
    """`home(env)`, else this account's home from the password database: for locations
    shared with other programs (pi's), which must be found even without HOME."""
    try:
        return home(env)
    except ValueError:
        return home(None) if env is not None and "HOME" not in env else home(env)


def _xdg(variable: str, fallback: tuple[str, ...], env: Mapping[str, str] | None) -> str:
    configured = _absolute(_environ(env).get(variable))
    return configured if configured is not None else os.path.join(home(env), *fallback)


def config_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_CONFIG_HOME`, or `~/.config`."""
    return _xdg("XDG_CONFIG_HOME", (".config",), env)


def data_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_DATA_HOME`, or `~/.local/share`."""
    return _xdg("XDG_DATA_HOME", (".local", "share"), env)


def state_home(env: Mapping[str, str] | None = None) -> str:
    """`$XDG_STATE_HOME`, or `~/.local/state`."""
    return _xdg("XDG_STATE_HOME", (".local", "state"), env)


def runtime_dir(env: Mapping[str, str] | None = None) -> str | None:
    """`$XDG_RUNTIME_DIR` when set to an absolute path, else None."""
    return _absolute(_environ(env).get("XDG_RUNTIME_DIR"))


# --- askgate's own paths ---------------------------------------------------------------


def user_policy_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(config_home(env), APP)


def user_policy_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(user_policy_dir(env), "policy.toml")


def managed_policy_path(env: Mapping[str, str] | None = None) -> str:
    """`/etc/askgate/policy.toml`; `ASKGATE_MANAGED_POLICY` names another file only
    while nothing exists there (a test seam that cannot replace a real managed file)."""
    override = _environ(env).get(MANAGED_POLICY_ENV)
    if override and not os.path.lexists(SYSTEM_MANAGED_POLICY):
        return override
    return SYSTEM_MANAGED_POLICY


def managed_policy_exists(env: Mapping[str, str] | None = None) -> bool:
    """True when something (file, link, anything) stands at the managed policy path."""
    return os.path.lexists(managed_policy_path(env))


def trust_store_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(data_home(env), APP)


def trust_store_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(trust_store_dir(env), "trusted.json")


def server_data_dir(env: Mapping[str, str] | None = None) -> str:
    """The approval server's database and keys."""
    return os.path.join(data_home(env), APP, "server")


def state_dir(env: Mapping[str, str] | None = None) -> str:
    """askgate's state: the review log, the daemon's state and secret."""
    return os.path.join(state_home(env), APP)


def review_log_path(env: Mapping[str, str] | None = None) -> str:
    """`$ASKGATE_AUDIT_LOG` when it names an absolute file, else the XDG state location."""
    configured = _absolute(_environ(env).get(AUDIT_LOG_ENV))
    if configured is not None:
        return configured
    return os.path.join(state_dir(env), "review.jsonl")


def review_log_disabled(env: Mapping[str, str] | None = None) -> bool:
    """`ASKGATE_AUDIT_LOG=off`, honoured only while no managed policy file exists."""
    if _environ(env).get(AUDIT_LOG_ENV) != "off":
        return False
    return not managed_policy_exists(env)


def pi_agent_dir(env: Mapping[str, str] | None = None) -> str:
    """`$PI_CODING_AGENT_DIR` (absolute, `~` expanded), else `~/.pi/agent`."""
    configured = _environ(env).get(PI_AGENT_DIR_ENV, "").strip()
    if configured.startswith("~/") or configured == "~":
        configured = _account_home(env) + configured[1:]
    found = _absolute(configured)
    return found if found is not None else os.path.join(_account_home(env), ".pi", "agent")


def forwarding_root(env: Mapping[str, str] | None = None) -> str:
    """`$ASKGATE_FORWARDING_DIR` (absolute, `~` expanded), else pi's own location, so a
    Python parent and a pi child (or the other way round) meet in the same directory."""
    configured = _environ(env).get(FORWARDING_DIR_ENV, "").strip()
    if configured.startswith("~/") or configured == "~":
        configured = _account_home(env) + configured[1:]
    found = _absolute(configured)
    if found is not None:
        return found
    return os.path.join(pi_agent_dir(env), "sessions", "permission-forwarding")


def _shared_tmp_runtime_dir() -> str:
    return f"/tmp/{APP}-{os.getuid()}"


def shared_runtime_dir_refusal(path: str) -> str | None:
    """Why the `/tmp` fallback `path` must not be used (None: usable or not there yet).

    /tmp is shared: a directory there that someone else owns, that is not a directory, or
    that others can reach (a machine had `/tmp/askgate-0` at 0755) is never used."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path} cannot be examined ({exc.strerror})"
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != os.getuid():
        return f"{path} is owned by uid {st.st_uid}, not {os.getuid()}"
    if st.st_mode & 0o077:
        return f"{path} is accessible to other users (mode {st.st_mode & 0o777:o})"
    return None


def daemon_socket_dir(env: Mapping[str, str] | None = None) -> str:
    """`$ASKGATE_RUNTIME_DIR` (absolute), else `$XDG_RUNTIME_DIR/askgate`, else
    `/tmp/askgate-<uid>` (the spec's advice: a replacement directory the user alone owns;
    the daemon creates it 0700) — unless that one already exists and is not private to us
    (see `shared_runtime_dir_refusal`): then `<state directory>/run`, which is ours."""
    explicit = _absolute(_environ(env).get(RUNTIME_DIR_ENV))
    if explicit is not None:
        return explicit
    runtime = runtime_dir(env)
    if runtime is not None:
        return os.path.join(runtime, APP)
    shared = _shared_tmp_runtime_dir()
    if shared_runtime_dir_refusal(shared) is None:
        return shared
    try:
        return os.path.join(state_dir(env), "run")
    except ValueError:
        return shared  # no home to fall back to: the daemon then refuses `shared`, closed


def daemon_socket_dir_notice(env: Mapping[str, str] | None = None) -> str | None:
    """One line for `askgate daemon` when the /tmp fallback was refused (None otherwise)."""
    env_ = _environ(env)
    if _absolute(env_.get(RUNTIME_DIR_ENV)) is not None or runtime_dir(env) is not None:
        return None
    why = shared_runtime_dir_refusal(_shared_tmp_runtime_dir())
    if why is None:
        return None
    return f"{why}: not used; using {daemon_socket_dir(env)} instead"


def state_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """Every path askgate owns that no agent may write, as path globs (`/**` = a tree).

    A location that cannot be computed (no HOME) is left out: its rule could not match.
    """
    found: list[str] = []
    for directory in (
        user_policy_dir,
        trust_store_dir,
        state_dir,
        forwarding_root,
        daemon_socket_dir,
    ):
        try:
            found.append(directory(env).rstrip("/") + "/**")
        except ValueError:
            continue
    found.append(SYSTEM_MANAGED_POLICY)
    for file in (managed_policy_path, review_log_path):
        try:
            found.append(file(env))
        except ValueError:
            continue
    return list(dict.fromkeys(p for p in found if p.startswith("/")))

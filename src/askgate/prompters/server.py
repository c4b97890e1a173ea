"""Asking through the approval server (seed 003): a web page or a phone answers.

`ServerPrompter.prompt` registers the call (tool and exact input) with the server, which
notifies the human; then it long-polls within its budget. Before it returns *approved* it
recomputes the SHA-256 of the canonical input it is about to permit and compares it with the
digest the server recorded for the approval: a mismatch is refused (logged `input-changed`).
When the budget ends it tells the server it gave up (the row records `timeout`, still decidable
until it expires; a later identical ask then gets that late approval once) and returns TIMED_OUT,
never a human's denial.

Every failure is a refusal, never an approval: unreachable or failing server ->
`approval-server-unreachable`; approvals disabled -> `approvals-disabled`; a bad token ->
`approval-server-rejected-token`; half-configured -> `approval-server-misconfigured`.

Configuration, highest first: the `[approvals]` table of the managed policy file; the
environment (`ASKGATE_SERVER` with `ASKGATE_TOKEN` or `ASKGATE_TOKEN_FILE`, optional
`ASKGATE_APPROVAL_BUDGET`); the `[approvals]` table of the user policy file. Never a project
file, trusted or not: a repository must not send your approvals to its own server.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import tomllib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import msgspec

from askgate.lazylog import LazyLogger
from askgate.prompt import PromptReply, PromptRequest, PromptState

if TYPE_CHECKING:
    import httpx

    from askgate.gate import Gate, Pending
    from askgate.outcome import Outcome

# Imports logging only when it logs (askgate.lazylog): not on every tool call.
log = LazyLogger("askgate.prompters.server")

DEFAULT_BUDGET = 110.0  # seconds; must stay below the agent's hook timeout (askgate doctor)
POLL_SLICE = 50.0  # one long-poll request, under the common 60 s proxy idle limit
CONNECT_TIMEOUT = 3.0
REQUEST_TIMEOUT = 10.0
RETRY_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)

UNREACHABLE = "approval-server-unreachable"
DISABLED = "approvals-disabled"
REJECTED = "approval-server-rejected-token"
MISCONFIGURED = "approval-server-misconfigured"
INPUT_CHANGED = "input-changed"


class ApprovalConfigError(Exception):
    """The approval server is configured, but not usably (fail closed, say why)."""


class ServerSettings(msgspec.Struct, frozen=True, kw_only=True):
    url: str
    token: str
    budget: float = DEFAULT_BUDGET
    source: str = "environment"


def _read_token(path: str, source: str) -> str:
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            token = handle.read(4096).strip()
    except OSError as exc:
        why = f"{source}: cannot read token_file {path}: {exc.strerror}"
        raise ApprovalConfigError(why) from None
    if not token:
        raise ApprovalConfigError(f"{source}: token_file {path} is empty")
    return token


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ApprovalConfigError(f"{source}: not an http(s) URL: {url!r}"[:300])
    return url.rstrip("/")


def _budget(value: object, source: str) -> float:
    try:
        # Any TOML or environment value: float() raises what it cannot read (caught below).
        budget = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ApprovalConfigError(f"{source}: budget must be a number of seconds") from None
    if not 0 < budget <= 86400:
        raise ApprovalConfigError(f"{source}: budget must be in (0, 86400] seconds")
    return budget


def _from_file(path: str) -> ServerSettings | None:
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        return None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        # A broken file that might configure approvals: refuse rather than guess.
        raise ApprovalConfigError(f"{path}: cannot read [approvals]: {exc}"[:300]) from None
    table = document.get("approvals")
    if table is None:
        return None
    if not isinstance(table, dict) or not isinstance(table.get("server"), str):
        raise ApprovalConfigError(f'{path}: [approvals] needs server = "https://…"')
    if not isinstance(table.get("token_file"), str):
        raise ApprovalConfigError(f'{path}: [approvals] needs token_file = "…"')
    return ServerSettings(
        url=_check_url(table["server"], path),
        token=_read_token(table["token_file"], path),
        budget=_budget(table.get("budget", DEFAULT_BUDGET), path),
        source=path,
    )


def _from_env(env: Mapping[str, str]) -> ServerSettings | None:
    url = env.get("ASKGATE_SERVER", "").strip()
    if not url:
        return None
    source = "ASKGATE_SERVER"
    token = env.get("ASKGATE_TOKEN", "").strip()
    if not token and env.get("ASKGATE_TOKEN_FILE"):
        token = _read_token(env["ASKGATE_TOKEN_FILE"], "ASKGATE_TOKEN_FILE")
    if not token:
        raise ApprovalConfigError("ASKGATE_SERVER is set but ASKGATE_TOKEN is not")
    budget = _budget(env.get("ASKGATE_APPROVAL_BUDGET") or DEFAULT_BUDGET, source)
    return ServerSettings(url=_check_url(url, source), token=token, budget=budget, source=source)


def load_settings(env: Mapping[str, str] | None = None) -> ServerSettings | None:
    """Where approvals go, or None when no server is configured (raises ApprovalConfigError
    when one is configured unusably). Never reads a project policy file."""
    from askgate.policy.config import managed_policy_path, user_policy_path

    env = os.environ if env is None else env
    settings = _from_file(managed_policy_path(env)) or _from_env(env)
    if settings is not None:
        return settings
    try:
        user_file = user_policy_path(env)
    except ValueError:  # no HOME and no XDG_CONFIG_HOME: there is no user file to read
        return None
    return _from_file(user_file)


def _unavailable(detail: str) -> PromptReply:
    return PromptReply(state=PromptState.UNAVAILABLE, detail=detail[:400])


class _Unreachable(Exception):
    pass


class ServerPrompter:
    """A Prompter that reaches a human through the approval server."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        budget: float = DEFAULT_BUDGET,
        transport: httpx.BaseTransport | None = None,
        on_registered: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.budget = budget
        self._transport = transport
        # Told the server's view of each registered approval (the demo prints its card URL).
        self.on_registered = on_registered
        self._pause = threading.Event()  # never set: waits between retries end by timeout

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> ServerPrompter:
        return cls(settings.url, settings.token, budget=settings.budget)

    def available(self) -> bool:
        return True  # reachability is found out by asking; failures there deny, loudly

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        budget = self.budget if timeout is None else max(0.0, min(timeout, self.budget))
        tool_input = (
            request.tool_input
            if request.tool_input is not None
            else {"surface": request.surface, "value": request.value}
        )
        body = {
            "tool": request.tool or request.surface,
            "input": tool_input,
            "cwd": request.cwd,
            "session": request.session,
            "agent": request.agent,
            "surface": request.surface,
            "rule": request.rule,
        }
        try:
            return self._ask(body, tool_input, budget)
        except Exception as exc:  # never let a transport surprise become anything but a refusal
            log.warning("askgate: approval server failed: %r", exc)
            return _unavailable(f"{UNREACHABLE}: {type(exc).__name__}")

    # --- the round trip ----------------------------------------------------------------

    def _client(self) -> httpx.Client:
        import httpx

        return httpx.Client(
            headers={"Authorization": f"Bearer {self.token}", "User-Agent": "askgate-prompter"},
            timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=CONNECT_TIMEOUT),
            transport=self._transport,
            follow_redirects=False,
        )

    def _ask(self, body: dict[str, Any], tool_input: Any, budget: float) -> PromptReply:
        from askgate.server.keys import CanonicalError, input_digest

        try:
            digest = input_digest(tool_input)
        except CanonicalError as exc:
            return _unavailable(f"the tool input has no canonical JSON form: {exc}")
        deadline = time.monotonic() + budget
        with self._client() as client:
            try:
                created = self._request(client, "POST", "/v1/approvals", deadline, json=body)
            except _Unreachable as exc:
                return _unavailable(f"{UNREACHABLE}: {exc}")
            failure = self._refusal(created)
            if failure is not None:
                return failure
            view = created.json()
            approval_id = str(view.get("id", ""))
            if self.on_registered is not None:
                with contextlib.suppress(Exception):
                    self.on_registered(view)
            while True:
                reply = self._settled(view, digest)
                if reply is not None:
                    return reply
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return self._give_up(client, approval_id, budget)
                path = f"/v1/approvals/{quote(approval_id)}?wait={min(remaining, POLL_SLICE):.3f}"
                try:
                    polled = self._request(client, "GET", path, deadline, slice_=True)
                except _Unreachable:
                    return self._give_up(client, approval_id, budget)
                failure = self._refusal(polled)
                if failure is not None:
                    return failure
                view = polled.json()

    def _request(
        self,
        client: httpx.Client,
        method: str,
        path: str,
        deadline: float,
        *,
        slice_: bool = False,
        **kwargs: Any,
    ) -> httpx.Response:
        """One request, retried on connection failures and 5xx until the deadline (a
        restarted server is found again by the waiting client)."""
        import httpx

        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            read = POLL_SLICE + REQUEST_TIMEOUT if slice_ else REQUEST_TIMEOUT
            timeout = httpx.Timeout(
                min(read, max(remaining, 0.5) + 5.0), connect=min(CONNECT_TIMEOUT, remaining + 0.5)
            )
            why: str
            try:
                response = client.request(method, self.url + path, timeout=timeout, **kwargs)
                if response.status_code < 500:
                    return response
                why = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                why = type(exc).__name__
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            attempt += 1
            if time.monotonic() + delay >= deadline:
                raise _Unreachable(why)
            self._pause.wait(delay)

    def _refusal(self, response: httpx.Response) -> PromptReply | None:
        if response.status_code in (200, 201):
            try:
                body = response.json()
            except ValueError:
                return _unavailable(f"{UNREACHABLE}: the server sent no JSON")
            return None if isinstance(body, dict) and body.get("id") else _unavailable(UNREACHABLE)
        code = ""
        with contextlib.suppress(ValueError, AttributeError):
            code = str(response.json().get("error", ""))
        if code == DISABLED:
            log.warning("askgate: %s (the approval server takes no approvals)", DISABLED)
            return _unavailable(DISABLED)
        if response.status_code in (401, 403):
            return _unavailable(REJECTED)
        return _unavailable(f"{UNREACHABLE}: HTTP {response.status_code} {code}".strip())

    def _settled(self, view: dict[str, Any], digest: str) -> PromptReply | None:
        status = view.get("status")
        if status == "allow":
            if view.get("input_sha256") != digest:
                log.warning(
                    "askgate: %s: approval %s was given for another input; refused",
                    INPUT_CHANGED,
                    view.get("id"),
                )
                return _unavailable(INPUT_CHANGED)
            return PromptReply(
                state=PromptState.APPROVED, detail="late approval" if view.get("late") else None
            )
        if status == "deny":
            reason = view.get("reason")
            if isinstance(reason, str) and reason:
                return PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason=reason)
            return PromptReply(state=PromptState.DENIED)
        if status == "expired":
            return PromptReply(state=PromptState.TIMED_OUT, detail="the approval expired")
        if status in ("pending", "timeout"):
            return None
        return _unavailable(f"{UNREACHABLE}: unknown status {status!r}"[:200])

    def _give_up(self, client: httpx.Client, approval_id: str, budget: float) -> PromptReply:
        import httpx

        # Best effort: the row expires on its own, and the answer here is the same.
        with contextlib.suppress(httpx.HTTPError):
            client.post(
                f"{self.url}/v1/approvals/{quote(approval_id)}/abandon",
                timeout=httpx.Timeout(2.0, connect=1.0),
            )
        return PromptReply(state=PromptState.TIMED_OUT, detail=f"no answer in {budget:g}s")


class MisconfiguredPrompter:
    """Approvals are configured unusably: every ask is refused, saying why."""

    def __init__(self, why: str) -> None:
        self.why = why

    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return _unavailable(f"{MISCONFIGURED}: {self.why}")


def configured_prompter(
    env: Mapping[str, str] | None = None,
) -> ServerPrompter | MisconfiguredPrompter | None:
    """The approval-server prompter when one is configured (None when none is)."""
    try:
        settings = load_settings(env)
    except ApprovalConfigError as exc:
        log.warning("askgate: %s", exc)
        return MisconfiguredPrompter(str(exc))
    return None if settings is None else ServerPrompter.from_settings(settings)


def resolve_with_server(
    gate: Gate, result: Outcome | Pending, *, env: Mapping[str, str] | None = None
) -> Outcome | Pending:
    """For adapters whose agent has its own prompt (Claude Code): a Pending ask goes to the
    approval server when one is configured, and comes back as an Outcome (allow only when a
    human approved this exact input). Anything else is returned unchanged."""
    from askgate.gate import Gate as GateClass
    from askgate.gate import Pending

    if not isinstance(result, Pending):
        return result
    prompter = configured_prompter(env)
    if prompter is None:
        return result
    asker = GateClass(gate.policy, prompter=prompter, session=gate.session)
    return asker.resolve(result)

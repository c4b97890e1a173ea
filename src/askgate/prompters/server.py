"""Asking through the approval server (seed 003): a web page or a phone answers.

`ServerPrompter.prompt` registers the call (tool, exact input, cwd, session, agent, and how long
it waits) with the server, which notifies the human; then it long-polls. Every network step runs
under one deadline, so the call finishes inside its budget whatever the server does. An allow is
*consumed* (a guarded, once-only write on the server) by this call before it returns approved,
so one approval releases one execution. Before it returns *approved* it recomputes the SHA-256 of
the canonical input it is about to permit and compares it with the digest the server recorded: a
mismatch is refused (logged `input-changed`). At the deadline it returns TIMED_OUT, never a
human's denial; the server knows the deadline too, so an Approve landing at or after it is
recorded as `timeout` (a late approval, handed once to the next identical call of the same
person in the same cwd, session and agent).

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

from askgate.approvals.wire import MAX_WAIT_ANNOUNCED, ApprovalView, ErrorBody
from askgate.lazylog import LazyLogger
from askgate.prompt import PromptReply, PromptRequest, PromptState

if TYPE_CHECKING:
    import httpx

    from askgate.gate import Gate, Pending
    from askgate.outcome import Outcome

# Imports logging only when it logs (askgate.lazylog): not on every tool call.
log = LazyLogger("askgate.prompters.server")

DEFAULT_BUDGET = 110.0  # seconds; must stay below the agent's hook timeout (askgate doctor)
# The longest budget accepted: Claude Code's default hook timeout (600 s) less the margin
# `askgate doctor` requires between a budget and the hook timeout (askgate.server.doctor).
MAX_BUDGET = MAX_WAIT_ANNOUNCED
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
    if not 0 < budget <= MAX_BUDGET:
        raise ApprovalConfigError(
            f"{source}: budget must be in (0, {MAX_BUDGET:g}] seconds (below the agent's "
            "hook timeout; see askgate doctor)"
        )
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


class _Spent(Exception):
    """The budget ran out during a request."""


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
        from askgate.approvals.canonical import CanonicalError, input_digest

        try:
            digest = input_digest(tool_input)
        except CanonicalError as exc:
            return _unavailable(f"the tool input has no canonical JSON form: {exc}")
        # One deadline for every network step: the hook finishes inside its budget whatever
        # the server does (answers, hangs, trickles, is frozen mid-wait).
        deadline = time.monotonic() + budget
        body = {**body, "wait": budget}
        with self._client() as client:
            try:
                created = self._request(client, "POST", "/v1/approvals", deadline, json=body)
            except _Unreachable as exc:
                return _unavailable(f"{UNREACHABLE}: {exc}")
            view, failure = self._view(created)
            if failure is not None or view is None:
                return failure or _unavailable(UNREACHABLE)
            if self.on_registered is not None:
                with contextlib.suppress(Exception):
                    self.on_registered(msgspec.to_builtins(view))
            if view.released:  # a late approval of exactly this call, consumed for it
                return self._approved(view, digest, "late approval")
            while True:
                if view.status == "allow":
                    return self._consume(client, view, digest, deadline, budget)
                reply = self._settled(view, budget)
                if reply is not None:
                    return reply
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return _timed_out(budget)
                path = f"/v1/approvals/{quote(view.id)}?wait={min(remaining, POLL_SLICE):.3f}"
                try:
                    polled = self._request(client, "GET", path, deadline)
                except _Unreachable:
                    return _timed_out(budget)
                view, failure = self._view(polled)
                if failure is not None or view is None:
                    return failure or _unavailable(UNREACHABLE)

    def _consume(
        self, client: httpx.Client, view: ApprovalView, digest: str, deadline: float, budget: float
    ) -> PromptReply:
        """Allowed: take the allow for this call (once, server-side) before running it."""
        if view.input_sha256 != digest:
            return self._input_changed(view)
        try:
            taken = self._request(
                client, "POST", f"/v1/approvals/{quote(view.id)}/consume", deadline
            )
        except _Unreachable:
            return _timed_out(budget)
        if taken.status_code == 409:
            return _timed_out(budget)  # the deadline passed, or another call took it
        fresh, failure = self._view(taken)
        if failure is not None or fresh is None:
            return failure or _unavailable(UNREACHABLE)
        return self._approved(fresh, digest, None)

    def _approved(self, view: ApprovalView, digest: str, detail: str | None) -> PromptReply:
        if view.input_sha256 != digest:
            return self._input_changed(view)
        if not view.consumed:
            return _unavailable(f"{UNREACHABLE}: the server did not record the call taking it")
        return PromptReply(state=PromptState.APPROVED, detail=detail)

    @staticmethod
    def _input_changed(view: ApprovalView) -> PromptReply:
        log.warning(
            "askgate: %s: approval %s was given for another input; refused", INPUT_CHANGED, view.id
        )
        return _unavailable(INPUT_CHANGED)

    def _request(
        self,
        client: httpx.Client,
        method: str,
        path: str,
        deadline: float,
        **kwargs: Any,
    ) -> httpx.Response:
        """One request, retried on connection failures and 5xx until the deadline (a
        restarted server is found again by the waiting client). Each attempt runs under the
        time that is left, enforced by a watchdog rather than by per-read timeouts alone (a
        server that trickles bytes would stretch those)."""
        attempt = 0
        while True:
            why: str
            try:
                response = self._bounded(client, method, self.url + path, deadline, **kwargs)
                if response.status_code < 500:
                    return response
                why = f"HTTP {response.status_code}"
            except _Spent as exc:
                raise _Unreachable(str(exc)) from None
            except Exception as exc:  # httpx.HTTPError and whatever a transport raises
                why = type(exc).__name__
            delay = RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)]
            attempt += 1
            if time.monotonic() + delay >= deadline:
                raise _Unreachable(why)
            self._pause.wait(delay)

    @staticmethod
    def _bounded(
        client: httpx.Client, method: str, url: str, deadline: float, **kwargs: Any
    ) -> httpx.Response:
        import httpx

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Spent("the budget is spent")
        box: dict[str, Any] = {}
        done = threading.Event()
        timeout = httpx.Timeout(remaining, connect=min(CONNECT_TIMEOUT, remaining))

        def run() -> None:
            try:
                box["response"] = client.request(method, url, timeout=timeout, **kwargs)
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        worker = threading.Thread(target=run, name="askgate-approval-request", daemon=True)
        worker.start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            # The worker is left to its own timeout; the client is closed under it on return.
            raise _Spent("no answer within the budget")
        if "error" in box:
            raise box["error"]
        response: httpx.Response = box["response"]
        return response

    def _view(self, response: httpx.Response) -> tuple[ApprovalView | None, PromptReply | None]:
        if response.status_code in (200, 201):
            try:
                return msgspec.json.decode(response.content, type=ApprovalView), None
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                return None, _unavailable(f"{UNREACHABLE}: not an approval: {exc}"[:300])
        code = ""
        with contextlib.suppress(msgspec.ValidationError, msgspec.DecodeError):
            code = msgspec.json.decode(response.content, type=ErrorBody).error
        if code == DISABLED:
            log.warning("askgate: %s (the approval server takes no approvals)", DISABLED)
            return None, _unavailable(DISABLED)
        if response.status_code in (401, 403):
            return None, _unavailable(REJECTED)
        return None, _unavailable(f"{UNREACHABLE}: HTTP {response.status_code} {code}".strip())

    @staticmethod
    def _settled(view: ApprovalView, budget: float) -> PromptReply | None:
        """The reply for a final status other than allow; None while pending."""
        if view.status == "deny":
            if view.reason:
                return PromptReply(state=PromptState.DENIED_WITH_REASON, denial_reason=view.reason)
            return PromptReply(state=PromptState.DENIED)
        if view.status == "expired":
            return PromptReply(state=PromptState.TIMED_OUT, detail="the approval expired")
        if view.status == "timeout":
            return _timed_out(budget)
        return None


def _timed_out(budget: float) -> PromptReply:
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

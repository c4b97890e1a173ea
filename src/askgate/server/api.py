"""The `/v1` HTTP API: create, long-poll, consume, decide, abandon and list approvals; `/v1/me`;
`/v1/events` (Server-Sent Events); `/healthz`; `/openapi.json`. Bodies are the Structs of
`askgate.approvals.wire`.

Who sees what: a caller reads their own approvals and those filed in a group they approve; a
person decides their own personal approvals, and in a group only its approvers decide.

Status codes (contract): 400 a malformed body or a field over its bound (`field` names it); 401
no credential; 403 a bad, expired or foreign key, or a token that may not decide; 404 an unknown
id or one the caller may not read; 409 a conflicting decision or a consume that cannot be taken
(body: the recorded approval); 410 past expiry; 413 a body over the cap; 503 the database is
unavailable. Repeating the recorded decision answers 200.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from litestar import Request, Response, get, post
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import ServerSentEvent
from litestar.response.base import ASGIResponse
from litestar.response.sse import ServerSentEventMessage
from litestar.types import Receive, Scope, Send

from askgate.approvals.wire import (
    ApprovalList,
    ApprovalView,
    CreateApproval,
    DecideApproval,
    DecisionConflict,
    ErrorBody,
    Health,
    Me,
)
from askgate.server import keys
from askgate.server.context import ServerContext, approval_view, user_view
from askgate.server.store import Approval, User
from askgate.server.wake import END, Subscription, Wakeup

TOKEN_COOKIE = "askgate_token"
SSE_KEEPALIVE = 15.0
# Taken off the waiting call's announced wait (at most a tenth of it) for the server's own
# deadline, so that an allow the server hands out (consumed) before its deadline reaches the
# call before the call's own deadline: the call never runs out of time holding an allow it took.
DEADLINE_RESERVE = 1.0


def _errors(*codes: int) -> dict[int, ResponseSpec]:
    described = {
        400: "a malformed body or parameter; `field` names it",
        401: "no credential",
        403: "a bad, expired or foreign key, or a token that may not do this",
        404: "an unknown id, or one that is not the caller's (never told apart)",
        413: "a body over the size cap",
        503: "the database is unavailable (nothing half-written)",
    }
    return {
        code: ResponseSpec(
            data_container=ErrorBody, description=described[code], generate_examples=False
        )
        for code in codes
    }


def _conflicts() -> dict[int, ResponseSpec]:
    return {
        409: ResponseSpec(
            DecisionConflict,
            description="another answer was recorded first",
            generate_examples=False,
        ),
        410: ResponseSpec(
            DecisionConflict, description="past expiry; recorded expired", generate_examples=False
        ),
    }


def error(
    status: int, code: str, detail: str | None = None, field: str | None = None
) -> Response[Any]:
    return Response(content=ErrorBody(error=code, detail=detail, field=field), status_code=status)


def _conflict(status: int, body: DecisionConflict) -> Response[Any]:
    return Response(content=body, status_code=status)


def context(request: Request[Any, Any, Any]) -> ServerContext:
    ctx: ServerContext = request.app.state["ctx"]
    return ctx


async def caller(request: Request[Any, Any, Any], *, cookie: bool = False) -> User | None:
    """The user behind the bearer token (or, for browser routes, the token cookie)."""
    header = request.headers.get("authorization", "")
    token = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not token and cookie:
        token = request.cookies.get(TOKEN_COOKIE, "")
    if not token or len(token) > 200:
        return None
    return await context(request).store.user_for_token(token)


@post(
    "/v1/approvals",
    status_code=201,
    summary="Register an approval (before notifying)",
    responses={
        200: ResponseSpec(
            ApprovalView,
            description="answered by a late approval (released)",
            generate_examples=False,
        ),
        **_errors(400, 401, 404, 413, 503),
    },
)
async def create_approval(
    request: Request[Any, Any, Any], data: JSONBody[CreateApproval]
) -> Response[ApprovalView]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    if not ctx.config.approvals_enabled:
        return error(404, "approvals-disabled", "this server does not take approvals")
    expires_in = data.expires_in if data.expires_in is not None else ctx.config.default_expires_in
    try:
        canonical = keys.canonical_json(data.input)
    except keys.CanonicalError as exc:
        return error(400, "bad-request", f"input has no canonical JSON form: {exc}", "input")
    if len(canonical) > ctx.config.max_input:
        why = f"input is longer than {ctx.config.max_input} bytes in canonical form"
        return error(400, "bad-request", why, "input")
    late = await ctx.store.consume_late_approval(
        created_by=user.id,
        tool=data.tool,
        digest=keys.digest_of_canonical(canonical),
        cwd=data.cwd,
        session=data.session,
        agent=data.agent,
    )
    if late is not None:  # a human approved exactly this call after its waiter gave up
        return Response(content=approval_view(late, released=True), status_code=200)
    wait = None if data.wait is None else data.wait - min(DEADLINE_RESERVE, data.wait / 10)
    approval = await ctx.store.create(
        tenant=user.tenant,
        created_by=user.id,
        tool=data.tool,
        input_value=data.input,
        expires_in=expires_in,
        session=data.session,
        agent=data.agent,
        surface=data.surface,
        cwd=data.cwd,
        rule=data.rule,
        wait=wait,
        canonical=canonical,  # computed above for the bound check: once per create
    )
    ctx.notify_created(approval)
    card = ctx.card_url(approval) if user.may_decide_on(approval) else None
    return Response(content=approval_view(approval, card_url=card), status_code=201)


async def _await_decision(
    ctx: ServerContext, approval: Approval, wait: float, woken: Wakeup
) -> Approval:
    """Sleep until a decision wakes us, the wait ends, the waiter's deadline passes or the
    approval expires; no polling. `woken` was registered before `approval` was read, so a
    decision recorded in between has set it."""
    now_wall, now = time.time(), time.monotonic()
    ends = [now + wait, now + approval.expires_at - now_wall]
    if approval.wait_until is not None:
        ends.append(now + approval.wait_until - now_wall)
    deadline = min(ends)
    fresh: Approval | None = approval
    while True:
        if woken.is_set():
            # the decided row, as the waker had it; else (a lost NOTIFY) read it
            fresh = woken.row if woken.row is not None else await ctx.store.get(approval.id)
        if fresh is None or fresh.decided_at is not None:
            return fresh or approval
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return fresh
        woken.clear()
        woken.row = None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), remaining)


async def _readable(
    request: Request[Any, Any, Any], approval_id: str
) -> tuple[User | None, Approval | None, Response[Any] | None]:
    user = await caller(request)
    if user is None:
        return None, None, error(401, "unauthorized", "a bearer token is required")
    approval = await context(request).store.get(approval_id)
    if approval is None or not user.may_read(approval):
        return user, None, error(404, "not-found")
    return user, approval, None


@get(
    "/v1/approvals/{approval_id:str}",
    summary="Read an approval; ?wait=N long-polls",
    responses=_errors(400, 401, 404, 503),
)
async def read_approval(
    request: Request[Any, Any, Any], approval_id: FromPath[str], wait: FromQuery[float] = 0.0
) -> Response[ApprovalView]:
    ctx = context(request)
    wait = max(0.0, min(float(wait), float(ctx.config.max_wait)))
    # Registered before the row is read, so a decision landing in between wakes us.
    with ctx.waker.waiter(approval_id) as woken:
        _user, approval, failure = await _readable(request, approval_id)
        if failure is not None or approval is None:
            return failure or error(404, "not-found")
        if wait > 0 and approval.decided_at is None and approval.status() == "pending":
            approval = await _await_decision(ctx, approval, wait, woken)
    return Response(content=approval_view(approval), status_code=200)


@post(
    "/v1/approvals/{approval_id:str}/consume",
    status_code=200,
    summary="The call that executes takes its allow, exactly once",
    responses={
        409: ResponseSpec(
            DecisionConflict,
            description="not an allow, or already consumed",
            generate_examples=False,
        ),
        **_errors(400, 401, 404, 503),
    },
)
async def consume_approval(
    request: Request[Any, Any, Any], approval_id: FromPath[str]
) -> Response[ApprovalView]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    # The guarded UPDATE names the caller (only the asking call may run it), so it goes
    # first; the row is read only to tell 404 from 409 when nothing was taken.
    taken = await ctx.store.consume_row(approval_id, created_by=user.id)
    if taken is not None:  # the row as consumed, read back in the same statement
        return Response(content=approval_view(taken), status_code=200)
    fresh = await ctx.store.get(approval_id)
    if fresh is None or fresh.created_by != user.id:
        return error(404, "not-found")
    return _conflict(
        409,
        DecisionConflict(
            error="not-consumable",
            detail="only an unconsumed allow, before the waiter's deadline, can be taken",
            approval=approval_view(fresh),
        ),
    )


async def _decider(
    request: Request[Any, Any, Any],
    approval: Approval | None,
    key: str | None,
    user: User | None,
) -> tuple[str | None, Response[Any] | None]:
    """Who decides (a user id), or the error response."""
    ctx = context(request)
    if key is not None:
        if approval is None:
            return None, error(404, "not-found")
        valid = keys.verify_key(
            ctx.secret,
            key,
            tenant=approval.tenant,
            approval_id=approval.id,
            digest=approval.input_sha256,
            expires_at=approval.expires_at,
        )
        if not valid:
            return None, error(403, "forbidden", "the key is not valid for this approval")
        return approval.created_by, None
    user = user or await caller(request)
    if user is None:
        return None, error(401, "unauthorized", "a bearer token or a ?k= key is required")
    if approval is None or not user.may_read(approval):
        return None, error(404, "not-found")
    if not user.may_decide:
        return None, error(403, "forbidden", "an agent token cannot decide approvals")
    if not user.may_decide_on(approval):
        return None, error(403, "forbidden", "only the group's approvers decide this approval")
    return user.id, None


async def decide(
    request: Request[Any, Any, Any],
    approval_id: str,
    decision: str,
    reason: str | None,
    key: str | None,
    *,
    user: User | None = None,
) -> tuple[int, Any]:
    """Shared by the API and the page's form: (status code, body Struct)."""
    ctx = context(request)
    if reason is not None and (len(reason) > 2000 or "\x00" in reason):
        return 400, ErrorBody(
            error="bad-request", detail="reason is too long or holds NUL", field="reason"
        )
    approval = await ctx.store.get(approval_id)
    decided_by, failure = await _decider(request, approval, key, user)
    if failure is not None or approval is None or decided_by is None:
        assert failure is not None
        # litestar types status_code `int | None`; its __init__ always sets one (None -> 200).
        return failure.status_code, failure.content  # type: ignore[return-value]
    now = time.time()
    if approval.decided_at is None and now >= approval.expires_at:
        await ctx.record_decision(approval, "expired", decided_by="askgate", reason=None)
        fresh = await ctx.store.get(approval.id)
        return 410, DecisionConflict(error="expired", approval=approval_view(fresh or approval))
    recorded_row = (
        await ctx.record_decision(approval, decision, decided_by=decided_by, reason=reason)
        if approval.decided_at is None
        else None
    )
    if recorded_row is not None:  # read back from the row in the deciding statement
        await ctx.announce_decision(recorded_row)
        return 200, approval_view(recorded_row)
    fresh = await ctx.store.get(approval.id) or approval
    recorded = fresh.status()
    if recorded == decision or (recorded == "timeout" and fresh.late == decision):
        return 200, approval_view(fresh)
    if recorded == "expired":
        return 410, DecisionConflict(error="expired", approval=approval_view(fresh))
    return 409, DecisionConflict(error="already-decided", approval=approval_view(fresh))


@post(
    "/v1/approvals/{approval_id:str}/decide",
    status_code=200,
    summary="Record allow or deny (once); at or after the waiter's deadline it is recorded "
    "as timeout, the answer kept as `late`",
    responses={**_conflicts(), **_errors(400, 401, 403, 404, 503)},
)
async def decide_approval(
    request: Request[Any, Any, Any],
    approval_id: FromPath[str],
    data: JSONBody[DecideApproval],
    k: FromQuery[str | None] = None,
) -> Response[ApprovalView]:
    status, body = await decide(request, approval_id, data.decision, data.reason, k)
    return Response(content=body, status_code=status)


@post(
    "/v1/approvals/{approval_id:str}/abandon",
    status_code=200,
    summary="The waiter gave up (honoured only at or after its announced deadline)",
    responses=_errors(400, 401, 404, 503),
)
async def abandon_approval(
    request: Request[Any, Any, Any], approval_id: FromPath[str]
) -> Response[ApprovalView]:
    ctx = context(request)
    user, approval, failure = await _readable(request, approval_id)
    if failure is not None or approval is None or user is None:
        return failure or error(404, "not-found")
    await ctx.store.abandon(approval.id, created_by=user.id)
    fresh = await ctx.store.get(approval.id) or approval
    return Response(content=approval_view(fresh), status_code=200)


@get(
    "/v1/approvals",
    summary="Pending and recent approvals the caller may read",
    responses=_errors(400, 401, 503),
)
async def list_approvals(
    request: Request[Any, Any, Any],
    pending: FromQuery[bool] = False,
    limit: FromQuery[int] = 100,
) -> Response[ApprovalList]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    rows = await ctx.store.list(user=user, limit=max(1, min(limit, 500)), pending_only=pending)
    return Response(content=ApprovalList(approvals=[approval_view(r) for r in rows]))


@get(
    "/v1/me",
    summary="Who the token belongs to, and the enrollment state",
    responses=_errors(401, 503),
)
async def me(request: Request[Any, Any, Any]) -> Response[Me]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    enrolled = await ctx.store.enrollment(user.id)
    return Response(content=user_view(user, enrolled=enrolled is not None))


class EventStream(ServerSentEvent):
    """The SSE response of one subscription made before it: the subscription is released
    when the response ends for any reason (its body done, the client gone, the task
    cancelled at shutdown, the status line never sent), or if building it fails."""

    def __init__(self, subscription: Subscription) -> None:
        self.subscription = subscription
        super().__init__(_event_messages(subscription))

    def to_asgi_response(self, *args: Any, **kwargs: Any) -> ASGIResponse:
        try:
            inner = super().to_asgi_response(*args, **kwargs)
        except BaseException:
            self.subscription.close()
            raise
        return _ReleasingResponse(inner, self.subscription)


class _ReleasingResponse(ASGIResponse):
    """Runs the streaming response, then releases its subscription whatever happened. The
    stream's own generator releases it too, but a generator never started (the client gone
    before its first chunk, an error at the status line) runs no `finally`."""

    def __init__(self, inner: ASGIResponse, subscription: Subscription) -> None:
        super().__init__()
        self._inner = inner
        self._subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._inner(scope, receive, send)
        finally:
            self._subscription.close()


async def _event_messages(subscription: Subscription) -> AsyncIterator[ServerSentEventMessage]:
    try:
        yield ServerSentEventMessage(comment="askgate events", retry=2000)
        while True:
            item = await subscription.next(SSE_KEEPALIVE)
            if item is None:
                yield ServerSentEventMessage(comment="keepalive")
                continue
            if item is END:
                return  # the server shuts down; the client reconnects to another or later
            data = item.get("data", {"id": item.get("id")})
            yield ServerSentEventMessage(
                event=str(item.get("event")), id=str(item.get("id")), data=json.dumps(data)
            )
    finally:
        subscription.close()


@get(
    "/v1/events",
    summary="Server-Sent Events: permissions:decision and approval:requested for what the "
    "caller may read",
    responses=_errors(401, 503),
)
async def events(request: Request[Any, Any, Any]) -> Response[Any] | ServerSentEvent:
    ctx = context(request)
    user = await caller(request, cookie=True)
    if user is None:
        return error(401, "unauthorized", "a bearer token or the sign-in cookie is required")
    # Subscribed here, before the status line: whatever is published once the client has
    # the 200 reaches it (a subscription made as the body starts missed events in between).
    subscription = ctx.waker.subscribe(user.tenants)
    try:
        return EventStream(subscription)
    except BaseException:
        subscription.close()
        raise


@get("/healthz", summary="Liveness and database reachability", responses=_errors(503))
async def healthz(request: Request[Any, Any, Any]) -> Response[Health]:
    ctx = context(request)
    try:
        await ctx.store.ping()
    except Exception as exc:
        return error(503, "database-unavailable", type(exc).__name__)
    return Response(content=Health(ok=True, waiting=ctx.waker.waiting), status_code=200)


@get("/openapi.json", include_in_schema=False)
async def openapi_json(request: Request[Any, Any, Any]) -> Response[Any]:
    schema = request.app.openapi_schema.to_schema()
    return Response(content=schema, status_code=200)


HANDLERS = [
    create_approval,
    read_approval,
    consume_approval,
    decide_approval,
    abandon_approval,
    list_approvals,
    me,
    events,
    healthz,
    openapi_json,
]

"""The `/v1` HTTP API: create, long-poll, decide, abandon and list approvals; `/v1/me`;
`/v1/events` (Server-Sent Events); `/healthz`; `/openapi.json`.

Status codes (contract): 401 no credential; 403 a bad, expired or foreign key, or a token that
may not decide; 404 an unknown id or one owned by another tenant; 409 a conflicting decision
(body: the recorded verdict); 410 past expiry; 413 a body over the cap; 400 a malformed body;
503 the database is unavailable. Repeating the recorded decision answers 200 (ntfy shows any
non-2xx as a failed action on the second phone).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any, Literal

import msgspec
from litestar import Request, Response, get, post
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.response import ServerSentEvent
from litestar.response.sse import ServerSentEventMessage

from askgate.server import keys
from askgate.server.context import ServerContext, approval_view, user_view
from askgate.server.store import Approval, User

TOKEN_COOKIE = "askgate_token"
MAX_TEXT = 4096
SSE_KEEPALIVE = 15.0


class CreateApproval(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of POST /v1/approvals."""

    tool: str
    input: dict[str, Any]
    cwd: str | None = None
    session: str | None = None
    agent: str | None = None
    surface: str | None = None
    rule: str | None = None
    expires_in: int | None = None


class DecideApproval(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of POST /v1/approvals/{id}/decide."""

    decision: Literal["allow", "deny"]
    reason: str | None = None


def error(status: int, code: str, detail: str | None = None, **extra: Any) -> Response[Any]:
    body: dict[str, Any] = {"error": code}
    if detail:
        body["detail"] = detail
    body.update(extra)
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


def _text_ok(value: str | None, limit: int = MAX_TEXT) -> bool:
    return value is None or (len(value) <= limit and "\x00" not in value)


@post("/v1/approvals", status_code=201, summary="Register an approval (before notifying)")
async def create_approval(
    request: Request[Any, Any, Any], data: JSONBody[CreateApproval]
) -> Response[Any]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    if not ctx.config.approvals_enabled:
        return error(404, "approvals-disabled", "this server does not take approvals")
    fields = (data.tool, data.cwd, data.session, data.agent, data.surface, data.rule)
    if not data.tool or not all(_text_ok(v) for v in fields):
        return error(400, "bad-request", "text fields must be short and NUL-free; tool non-empty")
    expires_in = data.expires_in if data.expires_in is not None else ctx.config.default_expires_in
    if not 1 <= expires_in <= 7 * 24 * 3600:
        return error(400, "bad-request", "expires_in must be between 1 and 604800 seconds")
    try:
        digest = keys.input_digest(data.input)
    except keys.CanonicalError as exc:
        return error(400, "bad-request", f"input has no canonical JSON form: {exc}")
    late = await ctx.store.consume_late_approval(
        tenant=user.tenant, session=data.session, tool=data.tool, digest=digest
    )
    if late is not None:  # a human allowed exactly this call after its waiter gave up
        return Response(content=approval_view(late, extra={"late": True}), status_code=200)
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
    )
    await ctx.notify_created(approval)
    extra = {"card_url": ctx.card_url(approval)} if user.may_decide else None
    return Response(content=approval_view(approval, extra=extra), status_code=201)


async def _await_decision(ctx: ServerContext, approval: Approval, wait: float) -> Approval:
    """Sleep until a decision wakes us, the wait ends or the approval expires; no polling."""
    deadline = min(time.monotonic() + wait, time.monotonic() + approval.expires_at - time.time())
    with ctx.waker.waiter(approval.id) as woken:
        while True:
            fresh = woken.row if woken.is_set() and woken.row is not None else None
            if fresh is None:  # the waker had no row (first pass, or a lost NOTIFY)
                fresh = await ctx.store.get(approval.id, tenant=approval.tenant)
            if fresh is None or fresh.decided_at is not None:
                return fresh or approval
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return fresh
            woken.clear()
            woken.row = None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken.wait(), remaining)


@get("/v1/approvals/{approval_id:str}", summary="Read an approval; ?wait=N long-polls")
async def read_approval(
    request: Request[Any, Any, Any], approval_id: FromPath[str], wait: FromQuery[float] = 0.0
) -> Response[Any]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    approval = await ctx.store.get(approval_id, tenant=user.tenant)
    if approval is None:
        return error(404, "not-found")
    wait = max(0.0, min(float(wait), float(ctx.config.max_wait)))
    if wait > 0 and approval.decided_at is None and approval.status() != "expired":
        approval = await _await_decision(ctx, approval, wait)
    return Response(content=approval_view(approval), status_code=200)


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
    if approval is None or approval.tenant != user.tenant:
        return None, error(404, "not-found")
    if not user.may_decide:
        return None, error(403, "forbidden", "an agent token cannot decide approvals")
    return user.id, None


async def decide(
    request: Request[Any, Any, Any],
    approval_id: str,
    decision: str,
    reason: str | None,
    key: str | None,
    *,
    user: User | None = None,
) -> tuple[int, dict[str, Any]]:
    """Shared by the API and the page's form: (status code, body)."""
    ctx = context(request)
    if reason is not None and not _text_ok(reason, 2000):
        return 400, {"error": "bad-request", "detail": "reason is too long or holds NUL"}
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
        return 410, {"error": "expired", **approval_view(fresh or approval)}
    won = approval.decided_at is None and await ctx.record_decision(
        approval, decision, decided_by=decided_by, reason=reason
    )
    fresh = await ctx.store.get(approval.id) or approval
    if won:
        await ctx.announce_decision(fresh)
        return 200, approval_view(fresh)
    recorded = fresh.status()
    if recorded == decision:
        return 200, approval_view(fresh)
    if recorded == "expired":
        return 410, {"error": "expired", **approval_view(fresh)}
    return 409, {"error": "already-decided", **approval_view(fresh)}


@post("/v1/approvals/{approval_id:str}/decide", summary="Record allow or deny (once)")
async def decide_approval(
    request: Request[Any, Any, Any],
    approval_id: FromPath[str],
    data: JSONBody[DecideApproval],
    k: FromQuery[str | None] = None,
) -> Response[Any]:
    status, body = await decide(request, approval_id, data.decision, data.reason, k)
    return Response(content=body, status_code=status)


@post("/v1/approvals/{approval_id:str}/abandon", summary="The waiter gave up: record timeout")
async def abandon_approval(
    request: Request[Any, Any, Any], approval_id: FromPath[str]
) -> Response[Any]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    approval = await ctx.store.get(approval_id, tenant=user.tenant)
    if approval is None:
        return error(404, "not-found")
    await ctx.store.abandon(approval.id, tenant=user.tenant)
    fresh = await ctx.store.get(approval.id, tenant=user.tenant) or approval
    return Response(content=approval_view(fresh), status_code=200)


@get("/v1/approvals", summary="Pending and recent approvals of the caller's tenant")
async def list_approvals(
    request: Request[Any, Any, Any], pending: FromQuery[bool] = False, limit: FromQuery[int] = 100
) -> Response[Any]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    rows = await ctx.store.list(
        tenant=user.tenant, limit=max(1, min(limit, 500)), pending_only=pending
    )
    return Response(content={"approvals": [approval_view(r) for r in rows]}, status_code=200)


@get("/v1/me", summary="Who the token belongs to, and the enrollment state")
async def me(request: Request[Any, Any, Any]) -> Response[Any]:
    ctx = context(request)
    user = await caller(request)
    if user is None:
        return error(401, "unauthorized", "a bearer token is required")
    enrolled = await ctx.store.enrollment(user.id)
    return Response(content={**user_view(user), "enrolled": enrolled is not None}, status_code=200)


@get("/v1/events", summary="Server-Sent Events: permissions:decision for the caller's tenant")
async def events(request: Request[Any, Any, Any]) -> Response[Any] | ServerSentEvent:
    ctx = context(request)
    user = await caller(request, cookie=True)
    if user is None:
        return error(401, "unauthorized", "a bearer token or the sign-in cookie is required")

    async def stream() -> AsyncIterator[ServerSentEventMessage]:
        async with ctx.waker.subscription(user.tenant) as queue:
            yield ServerSentEventMessage(comment="askgate events", retry=2000)
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), SSE_KEEPALIVE)
                except TimeoutError:
                    yield ServerSentEventMessage(comment="keepalive")
                    continue
                data = item.get("data", {"id": item.get("id")})
                yield ServerSentEventMessage(
                    event=str(item.get("event")), id=str(item.get("id")), data=json.dumps(data)
                )

    return ServerSentEvent(stream())


@get("/healthz", summary="Liveness and database reachability")
async def healthz(request: Request[Any, Any, Any]) -> Response[Any]:
    ctx = context(request)
    try:
        await ctx.store.ping()
    except Exception as exc:
        return error(503, "database-unavailable", type(exc).__name__)
    return Response(content={"ok": True, "waiting": ctx.waker.waiting}, status_code=200)


@get("/openapi.json", include_in_schema=False)
async def openapi_json(request: Request[Any, Any, Any]) -> Response[Any]:
    schema = request.app.openapi_schema.to_schema()
    return Response(content=schema, status_code=200)


HANDLERS = [
    create_approval,
    read_approval,
    decide_approval,
    abandon_approval,
    list_approvals,
    me,
    events,
    healthz,
    openapi_json,
]

"""A signed-in person's own agent tokens: mint, list, revoke (`/v1/tokens`, and the forms on
`/me`).

An agent token is scoped to the person who minted it: it files approvals as them and reads
only their approvals (the store's `User.may_read`), and it never decides anything, not even
its own person's asks. Only a person's user credential (their session cookie, or a user
token) mints or revokes; an agent token asking gets 403, so an agent cannot multiply or
renew itself. Revocation takes effect at once on this server (the token cache is dropped)
and within `TOKEN_CACHE_SECONDS` on other replicas.
"""

from __future__ import annotations

import time
from typing import Any

from litestar import Request, Response, get, post
from litestar.openapi import ResponseSpec
from litestar.params import FromPath, JSONBody

from askgate.approvals.wire import ErrorBody, MintedToken, MintToken, TokenList, TokenView
from askgate.server import keys
from askgate.server.api import caller, context, error
from askgate.server.store import User, token_id

AGENT_TOKENS_MAX = 50  # live agent tokens per person: a leak is bounded, a loop cannot flood


def _spec(codes: tuple[int, ...]) -> dict[int, ResponseSpec]:
    described = {
        400: "a malformed body or parameter; `field` names it",
        401: "no credential",
        403: "an agent token may not manage tokens, or the caller holds the most live agent "
        "tokens allowed",
        404: "no live token of the caller's with that id",
        503: "the database is unavailable",
    }
    return {
        code: ResponseSpec(ErrorBody, description=described[code], generate_examples=False)
        for code in codes
    }


async def _person(request: Request[Any, Any, Any]) -> tuple[User | None, Response[Any] | None]:
    user = await caller(request)
    if user is None:
        return None, error(401, "unauthorized", "a bearer token is required")
    if not user.may_decide:
        return None, error(403, "forbidden", "an agent token cannot manage tokens")
    return user, None


async def mint_agent_token(user: User, request: Request[Any, Any, Any]) -> MintedToken | None:
    """Shared by the API and the /me form; None when the person holds too many already."""
    store = context(request).store
    live = [t for t in await store.tokens_of(user.id) if t.scope == "agent"]
    if len(live) >= AGENT_TOKENS_MAX:
        return None
    token = await store.issue_token(user.id, scope="agent")
    return MintedToken(
        id=token_id(keys.token_hash(token)), scope="agent", created_at=time.time(), token=token
    )


@post(
    "/v1/tokens",
    status_code=201,
    summary="Mint an agent token of your own (shown once)",
    responses=_spec((400, 401, 403, 503)),
)
async def mint_token(
    request: Request[Any, Any, Any], data: JSONBody[MintToken]
) -> Response[MintedToken]:
    user, failure = await _person(request)
    if failure is not None or user is None:
        return failure or error(401, "unauthorized")
    minted = await mint_agent_token(user, request)
    if minted is None:
        why = f"at most {AGENT_TOKENS_MAX} live agent tokens; revoke one first"
        return error(403, "too-many-tokens", why)
    return Response(content=minted, status_code=201)


@get(
    "/v1/tokens", summary="Your live tokens (ids, never secrets)", responses=_spec((401, 403, 503))
)
async def list_tokens(request: Request[Any, Any, Any]) -> Response[TokenList]:
    user, failure = await _person(request)
    if failure is not None or user is None:
        return failure or error(401, "unauthorized")
    found = await context(request).store.tokens_of(user.id)
    views = [TokenView(id=t.id, scope=t.scope, created_at=t.created_at) for t in found]  # type: ignore[arg-type]
    return Response(content=TokenList(tokens=views))


@post(
    "/v1/tokens/{token_ref:str}/revoke",
    status_code=200,
    summary="Revoke one of your agent tokens (at once)",
    responses=_spec((400, 401, 403, 404, 503)),
)
async def revoke_token(
    request: Request[Any, Any, Any], token_ref: FromPath[str]
) -> Response[TokenList]:
    user, failure = await _person(request)
    if failure is not None or user is None:
        return failure or error(401, "unauthorized")
    store = context(request).store
    if not await store.revoke_token_id(user.id, token_ref, scope="agent"):
        return error(404, "not-found", "no live agent token of yours has that id")
    found = await store.tokens_of(user.id)
    views = [TokenView(id=t.id, scope=t.scope, created_at=t.created_at) for t in found]  # type: ignore[arg-type]
    return Response(content=TokenList(tokens=views), status_code=200)


TOKEN_HANDLERS = [mint_token, list_tokens, revoke_token]

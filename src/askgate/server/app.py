"""Assembling the Litestar application: context at startup, handlers, error mapping."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import os
import re
from collections.abc import AsyncIterator
from typing import Any

from litestar import Litestar, Request, Response
from litestar.config.cors import CORSConfig
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi import OpenAPIConfig
from sqlalchemy.exc import SQLAlchemyError

from askgate.approvals.wire import ErrorBody
from askgate.server import keys
from askgate.server.api import HANDLERS
from askgate.server.context import ServerConfig, ServerContext
from askgate.server.notify import Notifier
from askgate.server.store import Store
from askgate.server.wake import PostgresListener

log = logging.getLogger("askgate.server")


async def open_context(config: ServerConfig, notifier: Notifier | None = None) -> ServerContext:
    """Secret, database (migrated), notifier and, on PostgreSQL, the LISTEN connection."""
    os.makedirs(config.data_dir, mode=0o700, exist_ok=True)
    secret = keys.load_or_create_secret(config.secret_path)
    store = await Store.open(config.database_url)
    if notifier is None:
        webhook_secret = (
            config.webhook_secret.encode()
            if config.webhook_secret
            else hmac.new(secret, b"webhook|v1", hashlib.sha256).hexdigest().encode()
        )
        notifier = Notifier(
            ntfy_url=config.ntfy_url,
            ntfy_token=config.ntfy_token,
            webhook_url=config.webhook_url,
            webhook_secret=webhook_secret,
        )
    ctx = ServerContext(config=config, store=store, secret=secret, notifier=notifier)
    if store.postgres:
        from sqlalchemy.engine import make_url

        dsn = make_url(config.database_url).set(drivername="postgresql")
        ctx.listener = PostgresListener(
            dsn.render_as_string(hide_password=False), ctx.waker, ctx.on_remote_decision
        )
        ctx.listener.start()
    return ctx


async def close_context(ctx: ServerContext) -> None:
    if ctx.listener is not None:
        await ctx.listener.stop()
    await ctx.notifier.close()
    await ctx.store.close()


def _database_unavailable(_request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    # The driver's message and the statement, never its parameters (tool inputs).
    orig = getattr(exc, "orig", None) or exc
    statement = " ".join(str(getattr(exc, "statement", "") or "").split())[:200]
    log.error("askgate: database unavailable: %s: %s [%s]", type(orig).__name__, orig, statement)
    body = ErrorBody(error="database-unavailable", detail=type(exc).__name__)
    return Response(content=body, status_code=503)


_UNKNOWN_FIELD = re.compile(r"unknown field `([^`]{1,100})`")


def _problem_text(message: str) -> str:
    if "matching regex" in message:
        return "must not contain NUL characters"
    return message[:300]


def _bad_request(_request: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    """400 naming the field at fault. Litestar's own detail names the URL, which may carry a
    ?k= key: it stays out of the body."""
    problems = exc.extra if isinstance(exc.extra, list) else []
    for problem in problems:
        if not isinstance(problem, dict):
            continue
        message = str(problem.get("message", ""))
        key = str(problem.get("key") or "")
        unknown = _UNKNOWN_FIELD.search(message)
        if unknown:
            key = unknown.group(1)
        if key and key != "data":
            body = ErrorBody(
                error="bad-request", detail=f"{key}: {_problem_text(message)}", field=key
            )
            return Response(content=body, status_code=400)
        if message:
            body = ErrorBody(error="bad-request", detail=_problem_text(message))
            return Response(content=body, status_code=400)
    detail = "malformed request body or parameters"
    return Response(content=ErrorBody(error="bad-request", detail=detail), status_code=400)


def _http_error(_request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    code = {
        400: "bad-request",
        401: "unauthorized",
        403: "forbidden",
        404: "not-found",
        405: "method-not-allowed",
        413: "too-large",
    }.get(exc.status_code, "error")
    return Response(
        content=ErrorBody(error=code, detail=str(exc.detail)[:500]),
        status_code=exc.status_code,
        headers=exc.headers,
    )


def _internal_error(_request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    log.exception("askgate: internal error", exc_info=exc)
    return Response(content=ErrorBody(error="internal-error"), status_code=500)


def create_app(
    config: ServerConfig,
    *,
    notifier: Notifier | None = None,
    ctx: ServerContext | None = None,
) -> Litestar:
    """The application. With `ctx` the caller owns the context (opened before, closed after);
    without, the app opens it at startup and closes it at shutdown."""
    from askgate.server.devices import DEVICE_HANDLERS
    from askgate.server.pages import PAGE_HANDLERS
    from askgate.server.signin import SIGNIN_HANDLERS
    from askgate.server.tokens import TOKEN_HANDLERS

    @contextlib.asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        if ctx is not None:
            app.state["ctx"] = ctx
            yield
            return
        own = await open_context(config, notifier)
        app.state["ctx"] = own
        try:
            yield
        finally:
            await close_context(own)

    return Litestar(
        route_handlers=[
            *HANDLERS,
            *PAGE_HANDLERS,
            *SIGNIN_HANDLERS,
            *TOKEN_HANDLERS,
            *DEVICE_HANDLERS,
        ],
        lifespan=[lifespan],
        request_max_body_size=config.max_body,
        # The ntfy web app performs Approve/Deny with a cross-origin fetch. Credentials are
        # never allowed cross-origin (the cookie is SameSite=Strict anyway): such a caller
        # decides with the ?k= key it was given, or not at all.
        cors_config=CORSConfig(
            allow_origins=["*"],
            allow_methods=["GET", "POST"],
            allow_headers=["content-type", "authorization"],
            allow_credentials=False,
        ),
        openapi_config=OpenAPIConfig(
            title="askgate approval server",
            version="1",
            path="/schema",
            create_examples=False,
            description="Ask a human to approve one tool call, bound to its exact input.",
        ),
        exception_handlers={
            SQLAlchemyError: _database_unavailable,
            OSError: _database_unavailable,
            ValidationException: _bad_request,
            HTTPException: _http_error,
            500: _internal_error,
        },
        debug=False,
    )

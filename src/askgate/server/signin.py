"""Self-service sign-in and enrollment: OpenID Connect (any provider) and GitHub OAuth.

* OpenID Connect, authorization-code flow with PKCE (S256), `state` and `nonce`, the client
  authenticated with its secret (client_secret_basic). The ID token comes straight from the
  token endpoint over the back channel, which OpenID Connect Core §3.1.3.7 lets a client trust
  by the transport instead of a signature check; its `iss`, `aud`, `exp` and `nonce` are checked.
  An issuer must be https, except on a loopback address (tests, a local provider).
* GitHub OAuth, the documented web flow (``/login/oauth/authorize`` →
  ``/login/oauth/access_token`` → ``GET /user``).
* The durable key is the provider's subject: (issuer, `sub`) or ("github", numeric `id`),
  never a login, an e-mail or a display name (seed 003 #898: a renamed login would move a
  person, a re-claimed one would inherit another's approvals). A first sign-in creates the
  person, their own tenant.
* Signing in sets the session cookie (a fresh user token, HttpOnly, SameSite=Lax so that a link
  from the phone's ntfy app opens the card signed in; every form is CSRF-checked anyway).
* `/me` is the person's own enrollment page: enroll, the topic, its https URL, the `ntfy://`
  deep link (Android), a QR code (segno), rotate the topic.

The flow's state (state, nonce, PKCE verifier, where to go next) rides in a short-lived cookie
MACed with the server secret, so any replica can finish a sign-in another one started.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import os
import time
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx
from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.params import FromQuery
from litestar.response import Redirect

from askgate.server.api import TOKEN_COOKIE, context
from askgate.server.context import ServerContext
from askgate.server.notify import is_public_ntfy
from askgate.server.store import User

FLOW_COOKIE = "askgate_signin"
FLOW_TTL = 600
SESSION_MAX_AGE = 30 * 24 * 3600
GITHUB = "github"
HTTP_TIMEOUT = 10.0


class SignInError(Exception):
    """The sign-in cannot be completed; the message is shown to the person."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_issuer(issuer: str) -> str:
    parts = urlsplit(issuer)
    if parts.scheme != "https" and not (parts.scheme == "http" and _loopback(issuer)):
        raise SignInError("an OpenID Connect issuer must be an https URL")
    return issuer.rstrip("/")


# --- the flow cookie (sans-IO) ----------------------------------------------------------


def seal(secret: bytes, values: dict[str, Any]) -> str:
    body = _b64(json.dumps(values, separators=(",", ":")).encode())
    mac = hmac.new(secret, f"signin|{body}".encode(), hashlib.sha256).digest()
    return f"{body}.{_b64(mac)}"


def unseal(secret: bytes, sealed: str, *, now: float | None = None) -> dict[str, Any] | None:
    body, _, mac = sealed.partition(".")
    if not body or not mac or len(sealed) > 4000:
        return None
    expected = _b64(hmac.new(secret, f"signin|{body}".encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(expected, mac):
        return None
    try:
        values = json.loads(_unb64(body))
    except ValueError:
        return None
    now = time.time() if now is None else now
    if not isinstance(values, dict) or float(values.get("exp", 0)) < now:
        return None
    return values


def pkce_pair() -> tuple[str, str]:
    verifier = _b64(os.urandom(32))
    return verifier, _b64(hashlib.sha256(verifier.encode()).digest())


def id_token_claims(
    id_token: str, *, issuer: str, client_id: str, nonce: str, now: float | None = None
) -> dict[str, Any]:
    """The claims of an ID token received from the token endpoint, checked (Core §3.1.3.7)."""
    parts = id_token.split(".")
    if len(parts) != 3:
        raise SignInError("the provider sent no ID token")
    try:
        claims = json.loads(_unb64(parts[1]))
    except ValueError:
        raise SignInError("the provider's ID token is not readable") from None
    now = time.time() if now is None else now
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if claims.get("iss") != issuer:
        raise SignInError("the ID token is from another issuer")
    if client_id not in audiences:
        raise SignInError("the ID token is for another client")
    if not isinstance(claims.get("exp"), int | float) or claims["exp"] < now:
        raise SignInError("the ID token has expired")
    if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
        raise SignInError("the ID token does not answer this sign-in (nonce)")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub or len(sub) > 255:
        raise SignInError("the ID token names no subject")
    return dict(claims)


# --- routes -----------------------------------------------------------------------------


def _safe_next(target: str | None) -> str:
    return target if target and target.startswith("/") and not target.startswith("//") else "/me"


def _redirect_uri(ctx: ServerContext, provider: str) -> str:
    return f"{ctx.config.public_url.rstrip('/')}/auth/{provider}/callback"


def _flow_cookie(ctx: ServerContext, value: str, max_age: int = FLOW_TTL) -> Cookie:
    return Cookie(
        key=FLOW_COOKIE,
        value=value,
        httponly=True,
        samesite="lax",  # comes back on the provider's top-level redirect
        secure=ctx.config.public_url.startswith("https:"),
        path="/auth",
        max_age=max_age,
    )


def session_cookie(ctx: ServerContext, token: str) -> Cookie:
    return Cookie(
        key=TOKEN_COOKIE,
        value=token,
        httponly=True,
        samesite="lax",
        secure=ctx.config.secure_cookies or ctx.config.public_url.startswith("https:"),
        path="/",
        max_age=SESSION_MAX_AGE,
    )


async def _discovery(ctx: ServerContext, issuer: str) -> dict[str, Any]:
    cached = ctx.caches.get(("oidc", issuer))
    if cached is not None:
        return dict(cached)
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
        response = await client.get(f"{issuer}/.well-known/openid-configuration")
    if response.status_code != 200:
        raise SignInError(f"the provider's discovery document answered {response.status_code}")
    document = response.json()
    if document.get("issuer", "").rstrip("/") != issuer:
        raise SignInError("the provider's discovery document names another issuer")
    ctx.caches[("oidc", issuer)] = document
    return dict(document)


def _problem(text: str, status: int = 400) -> Response[Any]:
    from askgate.server.pages import message

    return message("Sign-in failed", text, status)


@get("/auth/oidc/start", include_in_schema=False)
async def oidc_start(request: Request[Any, Any, Any], next: FromQuery[str | None] = None) -> Any:
    ctx = context(request)
    config = ctx.config
    if not (config.oidc_issuer and config.oidc_client_id):
        return _problem("OpenID Connect sign-in is not configured on this server.", 404)
    try:
        issuer = check_issuer(config.oidc_issuer)
        document = await _discovery(ctx, issuer)
    except (SignInError, httpx.HTTPError, ValueError) as exc:
        return _problem(f"The identity provider cannot be reached: {exc}", 502)
    verifier, challenge = pkce_pair()
    state, nonce = _b64(os.urandom(16)), _b64(os.urandom(16))
    flow = {
        "p": "oidc",
        "state": state,
        "nonce": nonce,
        "verifier": verifier,
        "next": _safe_next(next),
        "exp": time.time() + FLOW_TTL,
    }
    query = urlencode(
        {
            "response_type": "code",
            "client_id": config.oidc_client_id,
            "redirect_uri": _redirect_uri(ctx, "oidc"),
            "scope": "openid email profile",
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )
    target = f"{document['authorization_endpoint']}?{query}"
    return Redirect(target, status_code=303, cookies=[_flow_cookie(ctx, seal(ctx.secret, flow))])


def _flow(request: Request[Any, Any, Any], provider: str, state: str | None) -> dict[str, Any]:
    ctx = context(request)
    flow = unseal(ctx.secret, request.cookies.get(FLOW_COOKIE, ""))
    if flow is None or flow.get("p") != provider:
        raise SignInError("this sign-in was not started here, or took too long; start again")
    if not state or not hmac.compare_digest(str(flow["state"]), state):
        raise SignInError("the provider's answer does not belong to this sign-in (state)")
    return flow


async def _signed_in(ctx: ServerContext, user: User, target: str) -> Response[Any]:
    token = await ctx.store.issue_token(user.id)
    gone = _flow_cookie(ctx, "", max_age=0)
    return Redirect(target, status_code=303, cookies=[session_cookie(ctx, token), gone])


@get("/auth/oidc/callback", include_in_schema=False)
async def oidc_callback(
    request: Request[Any, Any, Any],
    code: FromQuery[str | None] = None,
    error: FromQuery[str | None] = None,
) -> Any:
    ctx = context(request)
    state = request.query_params.get("state")  # `state` is a reserved handler argument
    config = ctx.config
    if error:
        return _problem(f"The identity provider refused: {error[:200]}")
    try:
        if not (config.oidc_issuer and config.oidc_client_id and code):
            raise SignInError("incomplete answer from the identity provider")
        flow = _flow(request, "oidc", state)
        issuer = check_issuer(config.oidc_issuer)
        document = await _discovery(ctx, issuer)
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
            answer = await client.post(
                document["token_endpoint"],
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "redirect_uri": _redirect_uri(ctx, "oidc"),
                    "code_verifier": flow["verifier"],
                },
                auth=(config.oidc_client_id, config.oidc_client_secret or ""),
            )
        if answer.status_code != 200:
            raise SignInError(f"the token endpoint answered {answer.status_code}")
        claims = id_token_claims(
            str(answer.json().get("id_token", "")),
            issuer=issuer,
            client_id=config.oidc_client_id,
            nonce=str(flow["nonce"]),
        )
    except (SignInError, httpx.HTTPError, ValueError, KeyError) as exc:
        return _problem(str(exc) or type(exc).__name__)
    display = str(claims.get("email") or claims.get("preferred_username") or "")[:150]
    user = await ctx.store.user_for_identity(issuer, claims["sub"], display=display, create=True)
    assert user is not None
    return await _signed_in(ctx, user, str(flow["next"]))


@get("/auth/github/start", include_in_schema=False)
async def github_start(request: Request[Any, Any, Any], next: FromQuery[str | None] = None) -> Any:
    ctx = context(request)
    config = ctx.config
    if not config.github_client_id:
        return _problem("GitHub sign-in is not configured on this server.", 404)
    state = _b64(os.urandom(16))
    flow = {"p": GITHUB, "state": state, "next": _safe_next(next), "exp": time.time() + FLOW_TTL}
    query = urlencode(
        {
            "client_id": config.github_client_id,
            "redirect_uri": _redirect_uri(ctx, GITHUB),
            "scope": "",
            "state": state,
            "allow_signup": "false",
        }
    )
    target = f"{config.github_url.rstrip('/')}/login/oauth/authorize?{query}"
    return Redirect(target, status_code=303, cookies=[_flow_cookie(ctx, seal(ctx.secret, flow))])


@get("/auth/github/callback", include_in_schema=False)
async def github_callback(
    request: Request[Any, Any, Any],
    code: FromQuery[str | None] = None,
) -> Any:
    ctx = context(request)
    state = request.query_params.get("state")
    config = ctx.config
    try:
        if not (config.github_client_id and code):
            raise SignInError("incomplete answer from GitHub")
        flow = _flow(request, GITHUB, state)
        async with httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False) as client:
            answer = await client.post(
                f"{config.github_url.rstrip('/')}/login/oauth/access_token",
                data={
                    "client_id": config.github_client_id,
                    "client_secret": config.github_client_secret or "",
                    "code": code,
                    "redirect_uri": _redirect_uri(ctx, GITHUB),
                },
                headers={"Accept": "application/json"},
            )
            access = answer.json().get("access_token") if answer.status_code == 200 else None
            if not access:
                raise SignInError("GitHub gave no access token")
            me = await client.get(
                f"{config.github_api_url.rstrip('/')}/user",
                headers={
                    "Authorization": f"Bearer {access}",
                    "Accept": "application/vnd.github+json",
                },
            )
        profile = me.json() if me.status_code == 200 else {}
        numeric = profile.get("id")
        if not isinstance(numeric, int) or isinstance(numeric, bool) or numeric <= 0:
            raise SignInError("GitHub named no numeric user id")
    except (SignInError, httpx.HTTPError, ValueError, KeyError) as exc:
        return _problem(str(exc) or type(exc).__name__)
    login = str(profile.get("login") or "")[:100]
    user = await ctx.store.user_for_identity(GITHUB, str(numeric), display=login, create=True)
    assert user is not None
    return await _signed_in(ctx, user, str(flow["next"]))


# --- the person's own enrollment page -----------------------------------------------------


def enrollment_links(ntfy: str, topic: str) -> dict[str, str]:
    parts = urlsplit(ntfy)
    deep = f"ntfy://{parts.netloc}{parts.path.rstrip('/')}/{topic}"
    if parts.scheme == "http":
        deep += "?secure=false"
    return {"topic_url": f"{ntfy.rstrip('/')}/{topic}", "deep_link": deep}


def qr_data_uri(text: str) -> str:
    import segno

    return str(segno.make(text, error="m").svg_data_uri(scale=6, border=2))


async def _me_values(request: Request[Any, Any, Any]) -> Any:
    from askgate.server.pages import _cookie_user, csrf_token

    ctx = context(request)
    user, token = await _cookie_user(request)
    if user is None:
        return Redirect(f"/login?next={quote('/me')}")
    enrollment = await ctx.store.enrollment(user.id)
    values: dict[str, Any] = {
        "user": user,
        "csrf": csrf_token(ctx.secret, token),
        "enrolled": enrollment is not None,
        "default_ntfy": ctx.config.ntfy_url or "https://ntfy.sh",
        "agent_tokens": [t for t in await ctx.store.tokens_of(user.id) if t.scope == "agent"],
        "devices": await ctx.store.devices_of(user.id),
        "minted": None,
    }
    if enrollment is not None:
        topic = ctx.ntfy_topic(user.id, enrollment.topic_epoch)
        links = enrollment_links(enrollment.ntfy_server, topic)
        values.update(
            topic=topic,
            server=enrollment.ntfy_server,
            public=is_public_ntfy(enrollment.ntfy_server),
            qr=qr_data_uri(links["topic_url"]),
            **links,
        )
    return values


@get("/me", include_in_schema=False)
async def me_page(request: Request[Any, Any, Any]) -> Any:
    from askgate.server.pages import render

    values = await _me_values(request)
    if not isinstance(values, dict):
        return values
    return render("me.html", **values)


async def _form_user(request: Request[Any, Any, Any]) -> tuple[User | None, Response[Any] | None]:
    from askgate.server.pages import _cookie_user, _same_origin, csrf_token, message

    ctx = context(request)
    if not _same_origin(request):
        return None, message("Refused", "This form was sent from another site.", 403)
    user, token = await _cookie_user(request)
    if user is None or not user.may_decide:
        return None, Redirect(f"/login?next={quote('/me')}")
    form = await request.form()
    sent = str(form.get("csrf", "")).encode()
    if not hmac.compare_digest(sent, csrf_token(ctx.secret, token).encode()):
        return None, message("Refused", "The form expired; reload the page and try again.", 403)
    return user, None


@post("/me/enroll", include_in_schema=False)
async def me_enroll(request: Request[Any, Any, Any]) -> Any:
    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    ctx = context(request)
    existing = await ctx.store.enrollment(user.id)
    server = ctx.config.ntfy_url or "https://ntfy.sh"
    await ctx.store.enroll(
        user.id, server, ntfy_token=existing.ntfy_token if existing is not None else None
    )
    return Redirect("/me", status_code=303)


@post("/me/rotate-topic", include_in_schema=False)
async def me_rotate(request: Request[Any, Any, Any]) -> Any:
    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    await context(request).store.rotate_topic(user.id)
    return Redirect("/me", status_code=303)


@post("/me/agent-tokens", include_in_schema=False)
async def me_mint_agent_token(request: Request[Any, Any, Any]) -> Any:
    """Mint an agent token of the signed-in person's own; the page shows it once."""
    from askgate.server.pages import message, render
    from askgate.server.tokens import AGENT_TOKENS_MAX, mint_agent_token

    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    minted = await mint_agent_token(user, request)
    if minted is None:
        why = f"You hold {AGENT_TOKENS_MAX} agent tokens already; revoke one first."
        return message("Not minted", why, 403)
    values = await _me_values(request)
    if not isinstance(values, dict):
        return values
    values["minted"] = minted
    return render("me.html", **values)


@post("/me/agent-tokens/revoke", include_in_schema=False)
async def me_revoke_agent_token(request: Request[Any, Any, Any]) -> Any:
    from askgate.server.pages import message

    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    form = await request.form()
    the_id = str(form.get("id", ""))
    if not await context(request).store.revoke_token_id(user.id, the_id, scope="agent"):
        return message("Not revoked", "No live agent token of yours has that id.", 404)
    return Redirect("/me", status_code=303)


@post("/me/devices", include_in_schema=False)
async def me_enroll_device(request: Request[Any, Any, Any]) -> Any:
    """Enroll the browser this form is sent from (the person's phone) for one-tap decisions:
    its secret goes only into this browser's HttpOnly, SameSite=Strict cookie."""
    from askgate.server.devices import device_cookie
    from askgate.server.pages import message
    from askgate.server.store import DEVICES_MAX

    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    form = await request.form()
    ctx = context(request)
    added = await ctx.store.add_device(user.id, str(form.get("label", ""))[:100])
    if added is None:
        why = f"You have {DEVICES_MAX} enrolled devices already; revoke one first."
        return message("Not enrolled", why, 403)
    return Redirect("/me", status_code=303, cookies=[device_cookie(ctx, added[1])])


@post("/me/devices/revoke", include_in_schema=False)
async def me_revoke_device(request: Request[Any, Any, Any]) -> Any:
    from askgate.server.pages import message

    user, failure = await _form_user(request)
    if failure is not None or user is None:
        return failure
    form = await request.form()
    if not await context(request).store.revoke_device(user.id, str(form.get("id", ""))[:64]):
        return message("Not revoked", "No enrolled device of yours has that id.", 404)
    return Redirect("/me", status_code=303)


SIGNIN_HANDLERS = [
    me_enroll_device,
    me_revoke_device,
    me_mint_agent_token,
    me_revoke_agent_token,
    oidc_start,
    oidc_callback,
    github_start,
    github_callback,
    me_page,
    me_enroll,
    me_rotate,
]

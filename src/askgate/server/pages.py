"""The web pages: the approval card ("what am I approving?"), the list of pending and recent
decisions, sign-in. Jinja2 templates in the package, no build step, usable on a phone.

Sign-in is the user's token in a cookie (HttpOnly, SameSite=Lax: a link from the phone's ntfy
app must open signed in) or the `?k=` key of one approval; an enrolled phone decides through
its action link and device credential (`askgate.server.devices`).
Forms are CSRF-safe: a cookie-authenticated form carries an HMAC of the session token
(double submit, checked in constant time) and a key-authenticated form carries the key itself;
a foreign Origin header is refused either way.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import quote, urlsplit

import jinja2
from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.params import FromPath, FromQuery
from litestar.response import Redirect

from askgate.server import keys
from askgate.server.api import TOKEN_COOKIE, context, decide
from askgate.server.display import neutralise
from askgate.server.notify import card as card_of_approval
from askgate.server.notify import shown_input
from askgate.server.store import Approval, User

CSP = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # same-origin: the ?k= key never leaves in a Referer, and our own forms keep their Origin
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("askgate.server", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def render(template: str, http_status: int = 200, **values: Any) -> Response[str]:
    html = _templates().get_template(template).render(**values)
    return Response(content=html, status_code=http_status, media_type="text/html", headers=HEADERS)


def message(title: str, text: str, status: int) -> Response[str]:
    return render("message.html", status, title=title, text=text)


def csrf_token(secret: bytes, session_token: str) -> str:
    material = f"csrf|{keys.token_hash(session_token)}".encode()
    return hmac.new(secret, material, hashlib.sha256).hexdigest()


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(timestamp))


def _same_origin(request: Request[Any, Any, Any]) -> bool:
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    public = urlsplit(context(request).config.public_url).netloc
    return urlsplit(origin).netloc in {host, public}


async def _cookie_user(request: Request[Any, Any, Any]) -> tuple[User | None, str]:
    token = request.cookies.get(TOKEN_COOKIE, "")
    if not token or len(token) > 200:
        return None, ""
    return await context(request).store.user_for_token(token), token


@get("/approvals/{approval_id:str}", include_in_schema=False)
async def card_page(
    request: Request[Any, Any, Any], approval_id: FromPath[str], k: FromQuery[str | None] = None
) -> Response[Any]:
    ctx = context(request)
    approval = await ctx.store.get(approval_id)
    user, token = await _cookie_user(request)
    key_ok = (
        approval is not None
        and k is not None
        and keys.verify_key(
            ctx.secret,
            k,
            tenant=approval.tenant,
            approval_id=approval.id,
            digest=approval.input_sha256,
            expires_at=approval.expires_at,
        )
    )
    if approval is None or (not key_ok and (user is None or not user.may_read(approval))):
        if user is None and not k:
            return Redirect(f"/login?next={quote('/approvals/' + approval_id)}")
        http_status = 403 if k and approval is not None else 404
        return message(
            "Not available", "This approval does not exist or is not yours.", http_status
        )
    may_decide = key_ok or (user is not None and user.may_decide_on(approval))
    values = card_values(approval, decidable=may_decide and approval.decided_at is None)
    values.update(
        key=k if key_ok else None,
        csrf=csrf_token(ctx.secret, token) if user is not None and not key_ok else None,
    )
    return render("card.html", **values)


def card_values(approval: Approval, *, decidable: bool) -> dict[str, Any]:
    """What card.html shows of an approval; the caller adds how its form authenticates
    (`key`, `csrf`) and, for another endpoint, `form_action`."""
    status = approval.status()
    return {
        "a": approval,
        "status": status,
        "card": card_of_approval(approval),
        "requested": _when(approval.requested_at),
        "expires": _when(approval.expires_at),
        "decidable": decidable and status != "expired",
        "form_action": f"/approvals/{approval.id}/decide",
        "device": False,
    }


@post("/approvals/{approval_id:str}/decide", include_in_schema=False)
async def card_decide(request: Request[Any, Any, Any], approval_id: FromPath[str]) -> Response[Any]:
    ctx = context(request)
    if not _same_origin(request):
        return message("Refused", "This form was sent from another site.", 403)
    form = await request.form()
    decision = str(form.get("decision", ""))
    reason = str(form.get("reason", "")).strip() or None
    key = str(form.get("k", "")) or None
    if decision not in ("allow", "deny"):
        return message("Bad request", "Choose Approve or Deny.", 400)
    if key is None:
        user, token = await _cookie_user(request)
        if user is None:
            return Redirect(f"/login?next={quote('/approvals/' + approval_id)}")
        sent = str(form.get("csrf", ""))
        if not hmac.compare_digest(sent.encode(), csrf_token(ctx.secret, token).encode()):
            return message("Refused", "The form expired; reload the page and try again.", 403)
        status, body = await decide(request, approval_id, decision, reason, None, user=user)
    else:
        status, body = await decide(request, approval_id, decision, reason, key)
    if status >= 400 and status not in (409, 410):
        return message("Not recorded", str(body.detail or body.error), status)
    target = f"/approvals/{approval_id}" + (f"?k={quote(key)}" if key else "")
    return Redirect(target, status_code=303)


@get("/", include_in_schema=False)
async def list_page(
    request: Request[Any, Any, Any], part: FromQuery[str | None] = None
) -> Response[Any]:
    """The list page; `?part=lists` is its two lists alone, which the page's script loads
    once its event stream is open and again after each event (askgate.js)."""
    ctx = context(request)
    user, token = await _cookie_user(request)
    lists_only = part == "lists"
    if user is None:
        if lists_only:  # the script reloads the page, which then asks to sign in
            return message("Signed out", "Sign in again.", 401)
        return Redirect("/login")
    rows = await ctx.store.list(user=user, limit=100)
    now = time.time()

    def item(row: Approval) -> dict[str, Any]:
        return {
            "id": row.id,
            "tool": neutralise(row.tool).text,
            "status": row.status(now),
            "shown": shown_input(row)[:600],
            "agent": neutralise(row.agent).text if row.agent else None,
            "decided_by": row.decided_by,
            "expires": _when(row.expires_at),
            "open": row.decided_at is None and row.status(now) != "expired",
        }

    items = [item(r) for r in rows]
    pending = [i for i in items if i["open"]]
    recent = [i for i in items if not i["open"]][:30]
    if lists_only:
        return render("list_sections.html", pending=pending, recent=recent)
    return render(
        "list.html",
        user=user,
        pending=pending,
        recent=recent,
        csrf=csrf_token(ctx.secret, token),
    )


def _safe_next(target: str | None) -> str:
    return target if target and target.startswith("/") and not target.startswith("//") else "/"


@get("/login", include_in_schema=False)
async def login_page(
    request: Request[Any, Any, Any], next: FromQuery[str | None] = None
) -> Response[Any]:
    config = context(request).config
    return render(
        "login.html",
        problem=None,
        next=_safe_next(next),
        oidc=bool(config.oidc_issuer and config.oidc_client_id),
        github=bool(config.github_client_id),
    )


@post("/login", include_in_schema=False)
async def login(
    request: Request[Any, Any, Any], next: FromQuery[str | None] = None
) -> Response[Any]:
    ctx = context(request)
    if not _same_origin(request):
        return message("Refused", "This form was sent from another site.", 403)
    form = await request.form()
    token = str(form.get("token", "")).strip()
    user = await ctx.store.user_for_token(token) if 0 < len(token) <= 200 else None
    if user is None:
        return render(
            "login.html",
            401,
            problem="That token is not valid.",
            next=_safe_next(next),
            oidc=bool(ctx.config.oidc_issuer and ctx.config.oidc_client_id),
            github=bool(ctx.config.github_client_id),
        )
    target = _safe_next(next)
    cookie = Cookie(
        key=TOKEN_COOKIE,
        value=token,
        httponly=True,
        # Lax: a link from the phone's ntfy app is a cross-site top-level navigation, and must
        # open the card signed in; every state-changing form is CSRF- and Origin-checked.
        samesite="lax",
        secure=ctx.config.secure_cookies or ctx.config.public_url.startswith("https:"),
        path="/",
        max_age=30 * 24 * 3600,
    )
    return Redirect(target, status_code=303, cookies=[cookie])


@post("/logout", include_in_schema=False)
async def logout(request: Request[Any, Any, Any]) -> Response[Any]:
    user, token = await _cookie_user(request)
    form = await request.form()
    if user is not None:
        sent = str(form.get("csrf", "")).encode()
        if not hmac.compare_digest(sent, csrf_token(context(request).secret, token).encode()):
            return message("Refused", "Reload the page and try again.", 403)
    gone = Cookie(key=TOKEN_COOKIE, value="", max_age=0, path="/", httponly=True, samesite="lax")
    return Redirect("/login", status_code=303, cookies=[gone])


@get("/static/askgate.js", include_in_schema=False)
async def script() -> Response[Any]:
    text = resources.files("askgate.server").joinpath("templates/askgate.js").read_text("utf-8")
    return Response(content=text, media_type="text/javascript", headers=HEADERS)


PAGE_HANDLERS = [card_page, card_decide, list_page, login_page, login, logout, script]

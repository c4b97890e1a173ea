"""The phone's one-tap decision: a per-device credential from enrollment plus a short-lived,
per-user action link in the notification (issue 23 item 6, seed 003 #899).

Two parts, neither enough alone:

* **The action link** (in the ntfy notification): ``/a/<approval id>/<expiry>.<mac>``, an HMAC
  over ``["askgate-action-v1", person, approval id, input digest, expiry]``. Per user (the person
  whose topic got it), short-lived (it dies at the waiting call's deadline, at most
  `ACTION_TTL` after the ask), single-use (it decides a pending approval once; afterwards it
  only shows the verdict). Whoever reads the topic holds it.
* **The device credential**: a random secret made when the signed-in person taps "Enroll this
  phone" on `/me`, stored server-side only as its SHA-256 (table `devices`, bound to the user,
  listed and revocable on `/me`), and in the phone's browser only as an HttpOnly,
  SameSite=Strict, path ``/a/`` cookie. It never rides in a notification, a URL or a page, so
  a reader of the topic does not have it.

Opening the link on an enrolled phone of the same person shows the card (what runs) with
Approve / Deny: one tap decides. Without that device (another person's phone, a revoked one, a
reader of the topic) the link falls back to the card, where deciding needs the person signed in.
GET never decides (link previewers, prefetchers); the POST carries a CSRF token derived from the
device secret, and Strict means no other site's form can send the cookie at all.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any
from urllib.parse import quote

from litestar import Request, Response, get, post
from litestar.datastructures import Cookie
from litestar.params import FromPath
from litestar.response import Redirect

from askgate.server import keys
from askgate.server.action_links import ACTION_TTL, action_expiry, action_path
from askgate.server.api import context, decide
from askgate.server.context import ServerContext
from askgate.server.store import Approval, User

__all__ = ["ACTION_TTL", "action_expiry", "action_path"]

DEVICE_COOKIE = "askgate_device"
DEVICE_COOKIE_PATH = "/a/"
DEVICE_MAX_AGE = 365 * 24 * 3600


def link_valid(secret: bytes, approval: Approval, link: str) -> bool:
    """The link was minted for this approval, its input and its person (expiry not checked)."""
    head, _, mac = link.partition(".")
    if not head.isdigit() or len(head) > 12 or int(head) != action_expiry(approval):
        return False
    return keys.verify_action_mac(
        secret,
        mac,
        user_id=approval.created_by,
        approval_id=approval.id,
        digest=approval.input_sha256,
        expires=int(head),
    )


def device_csrf(secret: bytes, device_secret: str, approval_id: str) -> str:
    material = f"device-csrf|{keys.token_hash(device_secret)}|{approval_id}".encode()
    return hmac.new(secret, material, hashlib.sha256).hexdigest()


def device_cookie(ctx: ServerContext, value: str, max_age: int = DEVICE_MAX_AGE) -> Cookie:
    return Cookie(
        key=DEVICE_COOKIE,
        value=value,
        httponly=True,
        samesite="strict",  # never sent by another site's request, form or frame
        secure=ctx.config.secure_cookies or ctx.config.public_url.startswith("https:"),
        path=DEVICE_COOKIE_PATH,
        max_age=max_age,
    )


async def _device_user(request: Request[Any, Any, Any], approval: Approval) -> User | None:
    """The person of this request's device credential, when it is a live device of exactly
    the person the link was made for and they may decide this approval; else None."""
    secret = request.cookies.get(DEVICE_COOKIE, "")
    if not secret or len(secret) > 200:
        return None
    ctx = context(request)
    owner = await ctx.store.device_owner(secret)
    if owner is None or owner[0] != approval.created_by:
        return None
    user = await ctx.store.user_by_id(owner[0])
    if user is None or not user.may_decide or not user.may_decide_on(approval):
        return None
    return user


def _fallback(request: Request[Any, Any, Any], approval_id: str) -> Response[Any]:
    """No device credential of this person: sign in (or, with a session, the card, where
    deciding needs the person signed in). Never a decision."""
    from askgate.server.api import TOKEN_COOKIE

    card = f"/approvals/{quote(approval_id)}"
    if request.cookies.get(TOKEN_COOKIE):
        return Redirect(card, status_code=303)
    return Redirect(f"/login?next={quote(card)}", status_code=303)


async def _checked(
    request: Request[Any, Any, Any], approval_id: str, link: str
) -> tuple[Approval | None, Response[Any] | None]:
    from askgate.server.pages import message

    ctx = context(request)
    approval = await ctx.store.get(approval_id)
    if approval is None or not link_valid(ctx.secret, approval, link):
        return None, message("Not valid", "This link is not valid.", 403)
    if time.time() >= action_expiry(approval):
        text = "This link has expired. Open the approval signed in to see what happened."
        return None, message("Link expired", text, 410)
    return approval, None


async def _on_enrolled_device(
    request: Request[Any, Any, Any], approval_id: str, link: str
) -> tuple[Approval, User] | Response[Any]:
    """The link's approval and the person whose enrolled phone opened it, or the page to
    show instead (link not valid or expired: an error; no such device: sign-in)."""
    approval, failure = await _checked(request, approval_id, link)
    if failure is not None or approval is None:
        return failure  # type: ignore[return-value]
    user = await _device_user(request, approval)
    if user is None:
        return _fallback(request, approval_id)
    return approval, user


@get("/a/{approval_id:str}/{link:str}", include_in_schema=False)
async def action_page(
    request: Request[Any, Any, Any], approval_id: FromPath[str], link: FromPath[str]
) -> Response[Any]:
    from askgate.server.pages import card_values, render

    found = await _on_enrolled_device(request, approval_id, link)
    if isinstance(found, Response):
        return found
    approval, _user = found
    ctx = context(request)
    values = card_values(approval, decidable=approval.decided_at is None)
    values.update(
        form_action=f"/a/{approval.id}/{link}",
        key=None,
        csrf=device_csrf(ctx.secret, request.cookies[DEVICE_COOKIE], approval.id),
        device=True,
    )
    return render("card.html", **values)


@post("/a/{approval_id:str}/{link:str}", include_in_schema=False)
async def action_decide(
    request: Request[Any, Any, Any], approval_id: FromPath[str], link: FromPath[str]
) -> Response[Any]:
    from askgate.server.pages import _same_origin, message

    if not _same_origin(request):
        return message("Refused", "This form was sent from another site.", 403)
    found = await _on_enrolled_device(request, approval_id, link)
    if isinstance(found, Response):
        return found
    approval, user = found
    ctx = context(request)
    form = await request.form()
    expected = device_csrf(ctx.secret, request.cookies[DEVICE_COOKIE], approval.id)
    if not hmac.compare_digest(str(form.get("csrf", "")).encode(), expected.encode()):
        return message("Refused", "The form expired; open the link again.", 403)
    decision = str(form.get("decision", ""))
    if decision not in ("allow", "deny"):
        return message("Bad request", "Choose Approve or Deny.", 400)
    if approval.decided_at is not None:
        return message("Already used", "This link was used: the approval is decided.", 409)
    reason = str(form.get("reason", "")).strip() or None
    status, body = await decide(request, approval.id, decision, reason, None, user=user)
    owner = await ctx.store.device_owner(request.cookies[DEVICE_COOKIE])
    if owner is not None:
        await ctx.store.device_used(owner[1])
    if status >= 400 and status not in (409, 410):
        return message("Not recorded", str(body.detail or body.error), status)
    return Redirect(f"/a/{approval.id}/{link}", status_code=303)


DEVICE_HANDLERS = [action_page, action_decide]

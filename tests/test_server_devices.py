"""The phone's one-tap decision (issue 23 item 6): a per-device credential from enrollment plus
a short-lived, single-use, per-user action link in the ntfy notification. In real Chromium at a
phone's width, against a real server and an ntfy stand-in; each case ends with what the agent
finally did (ran = the waiting call was approved, or did not run)."""

# ruff: noqa: F811  (`browser` is the Chromium fixture imported from test_server_pages)
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from askgate.prompters.base import PromptState
from askgate.server.devices import DEVICE_COOKIE, action_expiry, link_valid
from askgate.server.notify import Notifier
from ntfy_standin import NtfyStandIn
from server_support import LiveServer, Waiting, db_url, pg_admin_url  # noqa: F401
from test_server_notify import ntfy  # noqa: F401  (the fixture)
from test_server_pages import PHONE, browser  # noqa: F401  (the fixture)
from waits import wait_until

FAST = (0.01, 0.02, 0.05)


@pytest.fixture
def live(tmp_path: Path, ntfy: NtfyStandIn) -> Iterator[LiveServer]:
    notifier = Notifier(ntfy_url=ntfy.url, backoff=FAST)
    with LiveServer(
        tmp_path / "d", f"sqlite+aiosqlite:///{tmp_path / 'dev.db'}", notifier=notifier
    ) as server:
        yield server


def person(live: LiveServer, name: str) -> str:
    """A person enrolled on the ntfy stand-in; returns their user token."""
    token = live.add_user(name)
    user = live.call(lambda: live.ctx.store.user(name))
    assert user is not None
    live.call(lambda: live.ctx.store.enroll(user.id, live.ctx.notifier.ntfy_url or ""))
    return token


def message_for(ntfy: NtfyStandIn, approval_id: str) -> dict[str, Any]:
    """The notification published for `approval_id` (waits for it; no fixed sleep)."""
    return wait_until(
        lambda: next((m for m in list(ntfy.messages) if approval_id in m["message"]), None),
        f"the notification for {approval_id}",
    )


def action_link(ntfy: NtfyStandIn, waiting: Waiting) -> str:
    message = message_for(ntfy, waiting.views[0]["id"])
    [approve] = [a for a in message["actions"] if a["label"] == "Approve…"]
    return str(approve["url"]).split("#")[0]


def enrolled_phone(browser: Any, live: LiveServer, token: str) -> Any:
    """A phone-sized browser that signed in, enrolled itself on /me, and then lost its session
    (only the device credential is left: the one-tap path must not lean on the session)."""
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    page.goto(live.url + "/login?next=/me")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#enroll-device")
    page.fill("#device-label", "my phone")
    page.click("#enroll-device")
    page.wait_for_selector("text=my phone")
    [device] = [c for c in context.cookies() if c["name"] == DEVICE_COOKIE]
    assert device["httpOnly"] is True and device["sameSite"] == "Strict"
    assert device["path"] == "/a/"
    kept = [c for c in context.cookies() if c["name"] == DEVICE_COOKIE]
    context.clear_cookies()
    context.add_cookies(kept)
    page.close()
    return context


def test_one_tap_on_the_enrolled_phone_approves_and_the_agent_runs(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    token = person(live, "alice")
    phone = enrolled_phone(browser, live, token)
    waiting = Waiting(live, token, "git push origin main")
    link = action_link(ntfy, waiting)
    assert DEVICE_COOKIE not in link and "agd_" not in str(ntfy.messages)  # never in the topic
    page = phone.new_page()
    page.goto(link)
    assert page.locator('[data-field="command"] pre').inner_text() == "git push origin main"
    assert page.locator("#device-note").count() == 1
    box = page.get_by_role("button", name="Approve").bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("#status.allow")
    assert waiting.result().state is PromptState.APPROVED  # ran
    phone.close()


def test_the_link_used_twice_decides_once_and_the_next_identical_call_asks_afresh(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    token = person(live, "alice")
    phone = enrolled_phone(browser, live, token)
    waiting = Waiting(live, token, "make deploy")
    link = action_link(ntfy, waiting)
    first, second = phone.new_page(), phone.new_page()
    first.goto(link)
    second.goto(link)  # opened twice before either tap
    first.get_by_role("button", name="Deny").click()
    first.wait_for_selector("#status.deny")
    second.get_by_role("button", name="Approve").click()
    second.wait_for_selector("text=This link was used")
    assert waiting.result().state is PromptState.DENIED  # did not run
    # opening the used link again shows the verdict, with nothing left to tap
    first.goto(link)
    assert first.locator("#status").inner_text() == "deny"
    assert first.get_by_role("button", name="Approve").count() == 0
    # and no approval is left over for the same call: it asks afresh and is refused
    again = Waiting(live, token, "make deploy", budget=3)
    assert again.views[0]["status"] == "pending"
    assert again.result().state is not PromptState.APPROVED  # did not run
    phone.close()


def test_the_link_after_its_deadline_decides_nothing(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    token = person(live, "alice")
    phone = enrolled_phone(browser, live, token)
    waiting = Waiting(live, token, "terraform apply", budget=3)
    link = action_link(ntfy, waiting)
    assert waiting.result().state is not PromptState.APPROVED  # the agent gave up: not run
    page = phone.new_page()
    response = page.goto(link)
    assert response is not None and response.status == 410
    assert page.get_by_role("button", name="Approve").count() == 0
    # a forged tap (the form's fields replayed) is refused just the same
    posted = phone.request.post(
        link, form={"decision": "allow", "csrf": "x"}, headers={"Origin": live.url}
    )
    assert posted.status == 410
    row = live.client(token).get(f"/v1/approvals/{waiting.views[0]['id']}").json()
    assert row["status"] == "timeout" and row["late"] is None
    again = Waiting(live, token, "terraform apply", budget=3)  # no late approval to take
    assert again.result().state is not PromptState.APPROVED
    phone.close()


def test_another_persons_enrolled_phone_cannot_use_the_link(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    alice = person(live, "alice")
    bob = person(live, "bob")
    bobs_phone = enrolled_phone(browser, live, bob)
    waiting = Waiting(live, alice, "cat ~/.ssh/id_ed25519", budget=4)
    link = action_link(ntfy, waiting)
    page = bobs_phone.new_page()
    page.goto(link)
    assert "/login" in page.url  # sent to sign in: his device is not alice's
    assert page.get_by_role("button", name="Approve").count() == 0
    posted = bobs_phone.request.post(
        link, form={"decision": "allow"}, headers={"Origin": live.url}, max_redirects=0
    )
    assert posted.status == 303
    assert waiting.result().state is not PromptState.APPROVED  # did not run
    bobs_phone.close()


def test_a_reader_of_the_topic_without_the_device_is_sent_to_sign_in(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    token = person(live, "alice")
    waiting = Waiting(live, token, "npm publish", budget=4)
    link = action_link(ntfy, waiting)
    stranger = browser.new_context(viewport=PHONE, is_mobile=True)
    page = stranger.new_page()
    page.goto(link)
    assert "/login" in page.url
    assert page.get_by_role("button", name="Approve").count() == 0
    # the link plus no cookie, a guessed one, or alice's user token (no device credential)
    # (the cookies are the client's own: httpx deprecates cookies per request)
    for cookies in ({}, {DEVICE_COOKIE: "agd_guess"}, {DEVICE_COOKIE: token}):
        with httpx.Client(base_url=live.url, follow_redirects=False, cookies=cookies) as anyone:
            posted = anyone.post(link, data={"decision": "allow"}, headers={"Origin": live.url})
            assert posted.status_code == 303, posted.text
    assert waiting.result().state is not PromptState.APPROVED  # did not run
    stranger.close()


def test_a_revoked_device_falls_back_to_sign_in(
    browser: Any, live: LiveServer, ntfy: NtfyStandIn
) -> None:
    token = person(live, "alice")
    phone = enrolled_phone(browser, live, token)
    user = live.call(lambda: live.ctx.store.user("alice"))
    assert user is not None
    [device] = live.call(lambda: live.ctx.store.devices_of(user.id))
    desk = browser.new_context()
    page = desk.new_page()
    page.goto(live.url + "/login?next=/me")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("#device-list")
    assert page.locator(".device-id").inner_text() == device.id
    page.click(".revoke-device")
    page.wait_for_selector("#device-list >> text=none")
    waiting = Waiting(live, token, "git push --force", budget=4)
    link = action_link(ntfy, waiting)
    tap = phone.new_page()
    tap.goto(link)
    assert "/login" in tap.url
    assert waiting.result().state is not PromptState.APPROVED  # did not run
    phone.close()
    desk.close()


def test_a_link_is_bound_to_its_approval_input_and_person(live: LiveServer) -> None:
    token = live.add_user("alice")
    with live.client(token) as client:
        made = client.post(
            "/v1/approvals", json={"tool": "Bash", "input": {"command": "ls"}, "wait": 30}
        ).json()
    approval = live.call(lambda: live.ctx.store.get(made["id"]))
    assert approval is not None
    from askgate.server.devices import action_path

    good = action_path(live.ctx.secret, approval).rsplit("/", 1)[1]
    assert link_valid(live.ctx.secret, approval, good)
    other_input = msgspec.structs.replace(approval, input_sha256="0" * 64)
    other_person = msgspec.structs.replace(approval, created_by="bob")
    assert not link_valid(live.ctx.secret, other_input, good)
    assert not link_valid(live.ctx.secret, other_person, good)
    expires = action_expiry(approval)
    assert expires <= (approval.wait_until or 0)
    longer = f"{expires + 3600}.{good.split('.', 1)[1]}"
    assert not link_valid(live.ctx.secret, approval, longer)
    with httpx.Client(base_url=live.url) as anyone:
        assert anyone.get(f"/a/{approval.id}/{longer}").status_code == 403

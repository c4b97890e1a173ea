"""The web pages in real headless Chromium (Debian's /usr/bin/chromium through Playwright; no
browser is ever downloaded): the card opened from the notification link, approve and deny, the
waiting client released; sign-in by token cookie; the list refreshing live; CSRF refusals."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from askgate.prompters.base import PromptState
from server_support import LiveServer, Waiting, create

CHROMIUM = "/usr/bin/chromium"
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.access(CHROMIUM, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail("CI needs /usr/bin/chromium (scripts/setup-system installs it)")
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with LiveServer(tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 'p.db'}") as server:
        yield server


def test_card_from_the_notification_link_approves_and_releases_the_waiter(
    browser: Any, live: LiveServer, tmp_path: Path
) -> None:
    token = live.add_user("alice")
    waiting = Waiting(live, token, "git push origin main")
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    page.goto(waiting.card_url)
    command = page.locator('[data-field="command"] pre').inner_text()
    assert command == "git push origin main"
    body = page.locator("body").inner_text()
    for shown in ("/home/me/project", "claude-code", "sess-1", 'bash "git push *" = ask (user)'):
        assert shown in body, shown
    shot = tmp_path / "card-phone.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 5000
    if os.environ.get("ASKGATE_SCREENSHOT_DIR"):  # to look at it by hand
        shutil.copy(shot, Path(os.environ["ASKGATE_SCREENSHOT_DIR"]) / shot.name)
    # the buttons are big enough to hit with a thumb and fit the phone's width
    box = page.get_by_role("button", name="Approve").bounding_box()
    assert box is not None and box["height"] >= 40 and box["x"] + box["width"] <= PHONE["width"]
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("#status.allow")
    assert waiting.result().state is PromptState.APPROVED
    assert page.get_by_role("button", name="Approve").count() == 0  # decided: no more buttons
    context.close()


def test_deny_with_a_reason_on_the_card(browser: Any, live: LiveServer) -> None:
    token = live.add_user("alice")
    waiting = Waiting(live, token, "rm -rf build")
    page = browser.new_page(viewport=PHONE)
    page.goto(waiting.card_url)
    page.fill("#reason", "use make clean")
    page.get_by_role("button", name="Deny").click()
    page.wait_for_selector("#status.deny")
    reply = waiting.result()
    assert reply.state is PromptState.DENIED_WITH_REASON
    assert reply.denial_reason == "use make clean"
    page.close()


def test_sign_in_with_a_token_and_the_list_refreshes_live(browser: Any, live: LiveServer) -> None:
    token = live.add_user("alice")
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    page.goto(live.url + "/")
    assert page.url.endswith("/login")
    page.fill("#token", token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=Nothing waits for you.")
    [cookie] = [c for c in context.cookies() if c["name"] == "askgate_token"]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Lax"
    # a new ask appears without a reload by hand (the page follows /v1/events)
    waiting = Waiting(live, token, "npm publish")
    page.wait_for_selector("text=$ npm publish", timeout=15000)
    page.click("text=Bash")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("#status.allow")
    assert waiting.result().state is PromptState.APPROVED
    context.close()


def signed_in(browser: Any, live: LiveServer, token: str) -> Any:
    context = browser.new_context(viewport=PHONE)
    context.add_cookies([{"name": "askgate_token", "value": token, "url": live.url}])
    return context


def before_the_stream_opens(page: Any, live: LiveServer, action: Any) -> list[int]:
    """Run `action` once, when the page's script opens /v1/events: after the page (and what
    it shows) was rendered, before the server sees the stream's request. The request then
    goes on to the server unchanged. Returns the number of streams the page opened."""
    opened: list[int] = []

    def hold(route: Any) -> None:
        if not opened:
            action()
        opened.append(1)
        route.continue_()

    page.route(f"{live.url}/v1/events", hold)
    return opened


def test_the_list_shows_what_was_created_before_its_event_stream_opened(
    browser: Any, live: LiveServer
) -> None:
    token = live.add_user("alice")
    alice = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"})
    shown_with_the_page = create(alice, "make build")
    made: list[dict[str, Any]] = []
    context = signed_in(browser, live, token)
    page = context.new_page()
    opened = before_the_stream_opens(page, live, lambda: made.append(create(alice, "make ship")))
    page.goto(live.url + "/")
    # the page was rendered without it, and its event was sent before the stream subscribed
    page.wait_for_selector("#pending li >> text=$ make ship", timeout=15000)
    assert len(made) == 1
    # one row per approval, whether rendered with the page, reloaded, or announced
    assert page.locator(f'li[data-id="{shown_with_the_page["id"]}"]').count() == 1
    assert page.locator(f'li[data-id="{made[0]["id"]}"]').count() == 1
    # and the page goes on following the stream, without reloading itself
    page.evaluate("window.stillTheSamePage = true")
    later = create(alice, "make later")
    page.wait_for_selector(f'#pending li[data-id="{later["id"]}"]', timeout=15000)
    alice.post(f"/v1/approvals/{later['id']}/decide", json={"decision": "deny"})
    page.wait_for_selector(f'#recent li[data-id="{later["id"]}"] .status.deny', timeout=15000)
    assert page.locator(f'#pending li[data-id="{later["id"]}"]').count() == 0
    assert page.evaluate("window.stillTheSamePage") is True and len(opened) == 1
    context.close()
    alice.close()


def test_the_card_shows_a_decision_made_before_its_event_stream_opened(
    browser: Any, live: LiveServer
) -> None:
    token = live.add_user("alice")
    alice = httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {token}"})
    approval = create(alice, "terraform apply")
    context = signed_in(browser, live, token)
    page = context.new_page()

    def deny() -> None:
        decided = alice.post(f"/v1/approvals/{approval['id']}/decide", json={"decision": "deny"})
        assert decided.status_code == 200

    before_the_stream_opens(page, live, deny)
    page.goto(f"{live.url}/approvals/{approval['id']}")
    page.wait_for_selector("#status.deny", timeout=15000)
    assert page.get_by_role("button", name="Approve").count() == 0
    context.close()
    alice.close()


def test_a_wrong_token_does_not_sign_in(browser: Any, live: LiveServer) -> None:
    live.add_user("alice")
    page = browser.new_page()
    page.goto(live.url + "/login")
    page.fill("#token", "agt_wrong")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("text=That token is not valid.")
    assert page.context.cookies() == []
    page.close()


def test_forged_form_posts_are_refused(live: LiveServer) -> None:
    token = live.add_user("alice")
    created = httpx.post(
        live.url + "/v1/approvals",
        json={"tool": "Bash", "input": {"command": "x"}},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    form_url = f"{live.url}/approvals/{created['id']}/decide"
    cookies = {"askgate_token": token}
    no_csrf = httpx.post(form_url, data={"decision": "allow"}, cookies=cookies)
    assert no_csrf.status_code == 403
    other_site = httpx.post(
        form_url,
        data={"decision": "allow", "csrf": "x"},
        cookies=cookies,
        headers={"Origin": "https://evil.example"},
    )
    assert other_site.status_code == 403
    wrong_key = httpx.post(form_url, data={"decision": "allow", "k": "1.bad"})
    assert wrong_key.status_code == 403
    state = httpx.get(
        f"{live.url}/v1/approvals/{created['id']}", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert state["status"] == "pending"


def test_a_card_without_credentials_is_not_shown(live: LiveServer) -> None:
    token = live.add_user("alice")
    created = httpx.post(
        live.url + "/v1/approvals",
        json={"tool": "Bash", "input": {"command": "secret-thing"}},
        headers={"Authorization": f"Bearer {token}"},
    ).json()
    anonymous = httpx.get(f"{live.url}/approvals/{created['id']}", follow_redirects=False)
    assert anonymous.status_code in (302, 303, 307) and "/login" in anonymous.headers["location"]
    bad_key = httpx.get(f"{live.url}/approvals/{created['id']}?k=1.nope")
    assert bad_key.status_code == 403 and "secret-thing" not in bad_key.text
    other = live.add_user("mallory")
    foreign = httpx.get(f"{live.url}/approvals/{created['id']}", cookies={"askgate_token": other})
    assert foreign.status_code == 404 and "secret-thing" not in foreign.text

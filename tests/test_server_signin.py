"""Self-service sign-in (issue 23 item 5) with a REAL OpenID Connect provider (npm
oidc-provider on 127.0.0.1) and real Chromium at a phone's width: sign in, see one's own
enrollment page (topic, ntfy:// link, QR code), enroll, rotate the topic, and approve one's own
ask so the agent's call runs; the durable key is the provider's subject, never the e-mail."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from askgate.prompters.base import PromptState
from askgate.server import keys
from oidc_support import CLIENT_ID, CLIENT_SECRET, oidc_provider
from server_support import LiveServer, Waiting
from test_server_pages import PHONE, browser  # noqa: F401


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    with LiveServer(tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as server:
        emails = tmp_path / "emails.json"
        emails.write_text("{}")
        with oidc_provider(f"{server.url}/auth/oidc/callback", emails) as issuer:
            server.ctx.config.oidc_issuer = issuer
            server.ctx.config.oidc_client_id = CLIENT_ID
            server.ctx.config.oidc_client_secret = CLIENT_SECRET
            yield server


def sign_in(page: Any, live: LiveServer, login: str, target: str = "/me") -> None:
    page.goto(f"{live.url}/login?next={target}")
    page.click("#oidc")
    # the provider's own login and consent pages
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    if page.url.startswith(live.ctx.config.oidc_issuer or "-"):
        page.click("button[type=submit]")  # consent: Continue
    page.wait_for_url(re.compile(re.escape(live.url) + ".*"))


def test_sign_in_enroll_and_rotate_the_topic_on_a_phone(
    browser: Any,  # noqa: F811
    live: LiveServer,
) -> None:
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    sign_in(page, live, "carol")
    assert page.url == f"{live.url}/me"
    page.click("text=Enroll my phone")
    topic = page.locator("#topic").inner_text()
    user = live.call(
        lambda: live.ctx.store.user_for_identity(
            live.ctx.config.oidc_issuer or "", "carol", display="", create=False
        )
    )
    assert user is not None and user.tenant == f"user:{user.id}"
    assert topic == keys.user_topic(live.ctx.secret, user.id, 0)
    assert page.locator("#deep-link").inner_text().startswith("ntfy://")
    assert page.locator("#deep-link").inner_text().endswith(f"/{topic}")
    assert page.locator("#qr").get_attribute("src", timeout=5000).startswith("data:image/svg+xml")
    assert page.locator("#public-warning").count() == 1  # the default server is ntfy.sh
    box = page.locator("#qr").bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    page.click("#rotate")
    rotated = page.locator("#topic").inner_text()
    assert rotated != topic and rotated == keys.user_topic(live.ctx.secret, user.id, 1)
    context.close()


def test_the_durable_key_is_the_subject_not_the_email(
    browser: Any,  # noqa: F811
    live: LiveServer,
    tmp_path: Path,
) -> None:
    emails = tmp_path / "emails.json"
    emails.write_text('{"dave": "dave@old.example"}')
    first = browser.new_context(viewport=PHONE)
    sign_in(first.new_page(), live, "dave")
    first.close()
    # dave changes his e-mail; mallory claims the old one
    emails.write_text('{"dave": "dave@new.example", "mallory": "dave@old.example"}')
    second = browser.new_context(viewport=PHONE)
    sign_in(second.new_page(), live, "dave")  # same subject, another e-mail: the same person
    third = browser.new_context(viewport=PHONE)
    sign_in(third.new_page(), live, "mallory")  # another subject, dave's old e-mail: a stranger
    users = live.call(lambda: live.ctx.store.list_users())
    assert len(users) == 2
    dave = live.call(
        lambda: live.ctx.store.user_for_identity(
            live.ctx.config.oidc_issuer or "", "dave", display="", create=False
        )
    )
    mallory = live.call(
        lambda: live.ctx.store.user_for_identity(
            live.ctx.config.oidc_issuer or "", "mallory", display="", create=False
        )
    )
    assert dave is not None and mallory is not None and dave.id != mallory.id
    second.close()
    third.close()


def test_a_signed_in_person_approves_their_own_ask_from_the_card_and_it_runs(
    browser: Any,  # noqa: F811
    live: LiveServer,
) -> None:
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True)
    page = context.new_page()
    sign_in(page, live, "erin")
    user = live.call(
        lambda: live.ctx.store.user_for_identity(
            live.ctx.config.oidc_issuer or "", "erin", display="", create=False
        )
    )
    assert user is not None
    agent_token = live.call(lambda: live.ctx.store.issue_token(user.id, scope="agent"))
    waiting = Waiting(live, agent_token, "make deploy")
    approval_id = waiting.views[0]["id"]
    page.goto(f"{live.url}/approvals/{approval_id}#approve")  # the ntfy action's link
    page.get_by_role("button", name="Approve").click()
    page.wait_for_selector("#status.allow")
    assert waiting.result().state is PromptState.APPROVED
    # somebody else signed in cannot even see it
    stranger = browser.new_context(viewport=PHONE)
    spy = stranger.new_page()
    sign_in(spy, live, "frank")
    spy.goto(f"{live.url}/approvals/{approval_id}")
    assert spy.get_by_role("button", name="Approve").count() == 0
    assert "not yours" in spy.locator("body").inner_text()
    stranger.close()
    context.close()


def test_a_forged_callback_signs_nobody_in(live: LiveServer) -> None:
    client = live.client(follow_redirects=False)
    response = client.get("/auth/oidc/callback", params={"code": "x", "state": "y"})
    assert response.status_code == 400 and "askgate_token" not in response.headers.get(
        "set-cookie", ""
    )
    assert live.call(lambda: live.ctx.store.list_users()) == []


# --- GitHub (a stand-in following GitHub's documented OAuth contract) ---------------------


@pytest.fixture
def github(live: LiveServer) -> Iterator[Any]:
    from github_standin import GitHubStandIn

    stand_in = GitHubStandIn("gh-client", "gh-secret").start()
    config = live.ctx.config
    config.github_client_id, config.github_client_secret = "gh-client", "gh-secret"
    config.github_url = config.github_api_url = stand_in.url
    try:
        yield stand_in
    finally:
        stand_in.close()


def test_github_sign_in_keys_on_the_numeric_id_never_the_login(
    browser: Any,  # noqa: F811
    live: LiveServer,
    github: Any,
) -> None:
    github.who = (583231, "octocat")
    first = browser.new_context(viewport=PHONE)
    page = first.new_page()
    page.goto(f"{live.url}/login?next=/me")
    page.click("#github")
    page.wait_for_url(f"{live.url}/me")
    page.click("text=Enroll my phone")
    topic = page.locator("#topic").inner_text()
    first.close()
    # octocat renames to octo-renamed; somebody else (a new id) claims the released "octocat"
    for who in ((583231, "octo-renamed"), (999001, "octocat")):
        github.who = who
        context = browser.new_context(viewport=PHONE)
        page = context.new_page()
        page.goto(f"{live.url}/login?next=/me")
        page.click("#github")
        page.wait_for_url(f"{live.url}/me")
        if who[0] == 583231:
            assert page.locator("#topic").inner_text() == topic  # the same person, renamed
        else:
            assert page.locator("#topic").count() == 0  # a stranger inherits nothing
        context.close()
    store = live.ctx.store
    original = live.call(
        lambda: store.user_for_identity("github", "583231", display="", create=False)
    )
    newcomer = live.call(
        lambda: store.user_for_identity("github", "999001", display="", create=False)
    )
    assert original is not None and newcomer is not None and original.id != newcomer.id


def test_a_replayed_github_code_signs_nobody_in(live: LiveServer, github: Any) -> None:
    import httpx

    client = live.client(follow_redirects=False)
    started = client.get("/auth/github/start")
    flow = client.cookies.get("askgate_signin")
    assert flow
    to_callback = httpx.get(started.headers["location"], follow_redirects=False)
    query = to_callback.headers["location"].split("?", 1)[1]
    first = client.get(f"/auth/github/callback?{query}")
    assert first.status_code == 303 and "askgate_token" in first.headers.get("set-cookie", "")
    # the same code and the same (still valid) flow cookie, presented again
    replay = live.client(follow_redirects=False)
    replay.cookies.set("askgate_signin", flow, path="/auth")
    second = replay.get(f"/auth/github/callback?{query}")
    assert second.status_code == 400 and "askgate_token" not in second.headers.get("set-cookie", "")

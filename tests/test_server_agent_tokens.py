"""A signed-in person mints and revokes their own agent tokens (issue 23, round 2): the token
is scoped to them, on SQLite and PostgreSQL. A token of user A never reads, waits on, takes,
abandons or decides user B's approvals, and never decides anything at all; revocation is at
once; only a person (never an agent token) mints. The page part runs in real Chromium after a
real OpenID Connect sign-in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from server_support import LiveServer, create, db_url, pg_admin_url  # noqa: F401
from test_server_pages import browser  # noqa: F401


@pytest.fixture
def live(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:  # noqa: F811
    with LiveServer(tmp_path / "data", db_url) as server:
        yield server


def _mint(person: httpx.Client) -> dict[str, Any]:
    minted = person.post("/v1/tokens", json={})
    assert minted.status_code == 201, minted.text
    body: dict[str, Any] = minted.json()
    assert body["scope"] == "agent" and body["token"].startswith("agt_")
    return body


def test_an_agent_token_of_alice_cannot_reach_bobs_approvals(live: LiveServer) -> None:
    alice = live.client(live.add_user("alice"))
    bob = live.client(live.add_user("bob"))
    alice_agent = live.client(_mint(alice)["token"])
    bob_agent = live.client(_mint(bob)["token"])
    theirs = create(bob_agent, "rm -rf /srv/bob", wait=60)
    path = f"/v1/approvals/{theirs['id']}"
    for intruder in (alice_agent, alice):
        assert intruder.get(path).status_code == 404
        assert intruder.get(f"{path}?wait=0.2").status_code == 404
        assert intruder.post(f"{path}/decide", json={"decision": "allow"}).status_code == 404
        assert intruder.post(f"{path}/consume").status_code == 404
        assert intruder.post(f"{path}/abandon").status_code == 404
        listed = intruder.get("/v1/approvals").json()["approvals"]
        assert theirs["id"] not in [a["id"] for a in listed]
    # the outcome: bob's approval is untouched, still pending, nothing taken
    after = bob.get(path).json()
    assert after["status"] == "pending" and after["decided_by"] is None
    assert not after["consumed"]


def test_an_agent_token_never_decides_even_its_own_persons_ask(live: LiveServer) -> None:
    alice = live.client(live.add_user("alice"))
    agent = live.client(_mint(alice)["token"])
    mine = create(agent, "git push", wait=60)
    refused = agent.post(f"/v1/approvals/{mine['id']}/decide", json={"decision": "allow"})
    assert refused.status_code == 403 and refused.json()["error"] == "forbidden"
    assert agent.post(f"/v1/approvals/{mine['id']}/consume").status_code == 409  # not allowed
    assert alice.get(f"/v1/approvals/{mine['id']}").json()["status"] == "pending"


def test_an_agent_token_cannot_mint_list_or_revoke_tokens(live: LiveServer) -> None:
    alice = live.client(live.add_user("alice"))
    minted = _mint(alice)
    agent = live.client(minted["token"])
    assert agent.post("/v1/tokens", json={}).status_code == 403
    assert agent.get("/v1/tokens").status_code == 403
    assert agent.post(f"/v1/tokens/{minted['id']}/revoke").status_code == 403
    assert live.client().post("/v1/tokens", json={}).status_code == 401
    # only agent tokens are minted here: a user scope is a 400 naming the field
    asked = alice.post("/v1/tokens", json={"scope": "user"})
    assert asked.status_code == 400 and asked.json()["field"] == "scope"
    ids = [t["id"] for t in alice.get("/v1/tokens").json()["tokens"] if t["scope"] == "agent"]
    assert ids == [minted["id"]]  # the agent's attempts minted nothing


def test_revoking_an_agent_token_takes_effect_at_once(live: LiveServer) -> None:
    alice = live.client(live.add_user("alice"))
    minted = _mint(alice)
    agent = live.client(minted["token"])
    assert agent.get("/v1/me").status_code == 200  # cached as valid now
    revoked = alice.post(f"/v1/tokens/{minted['id']}/revoke")
    assert revoked.status_code == 200
    assert minted["id"] not in [t["id"] for t in revoked.json()["tokens"]]
    assert agent.get("/v1/me").status_code == 401
    answer = agent.post("/v1/approvals", json={"tool": "Bash", "input": {"command": "ls"}})
    assert answer.status_code == 401


def test_bob_cannot_revoke_alices_agent_token(live: LiveServer) -> None:
    alice = live.client(live.add_user("alice"))
    bob = live.client(live.add_user("bob"))
    minted = _mint(alice)
    for the_id in (minted["id"], minted["id"][:8], "%", "_" * 16, "../" + minted["id"]):
        answer = bob.post(f"/v1/tokens/{the_id}/revoke")
        assert answer.status_code == 404, the_id
    assert live.client(minted["token"]).get("/v1/me").status_code == 200  # still alive


def test_a_signed_in_person_mints_and_revokes_on_their_page(
    tmp_path: Path,
    browser: Any,  # noqa: F811
) -> None:
    """Real Chromium, real OpenID Connect provider: /me mints a token shown once, the token
    files approvals as that person, and Revoke kills it at once."""
    from oidc_support import CLIENT_ID, CLIENT_SECRET, oidc_provider
    from test_server_pages import PHONE
    from test_server_signin import sign_in

    with LiveServer(tmp_path / "data", f"sqlite+aiosqlite:///{tmp_path / 's.db'}") as live:
        emails = tmp_path / "emails.json"
        emails.write_text("{}")
        with oidc_provider(f"{live.url}/auth/oidc/callback", emails) as issuer:
            live.ctx.config.oidc_issuer = issuer
            live.ctx.config.oidc_client_id = CLIENT_ID
            live.ctx.config.oidc_client_secret = CLIENT_SECRET
            context = browser.new_context(viewport=PHONE, is_mobile=True)
            page = context.new_page()
            sign_in(page, live, "erin")
            page.click("#mint")
            token = page.locator("#minted-token").inner_text()
            agent = live.client(token)
            me = agent.get("/v1/me").json()
            assert me["scope"] == "agent" and me["tenant"] == f"user:{me['id']}"
            create(agent, "make deploy")
            page.goto(f"{live.url}/me")
            assert page.locator("#minted-token").count() == 0  # shown once
            assert page.locator(".token-id").count() == 1
            page.click(".revoke")
            page.wait_for_url(f"{live.url}/me")
            assert page.locator(".token-id").count() == 0
            assert agent.get("/v1/me").status_code == 401
            context.close()

"""Telling a human that an approval waits: ntfy (phone) and a signed generic webhook.

The message builders are pure (approval in, JSON out) and follow ntfy's documented limits: a
message of at most 4,096 bytes, at most three actions, topics matching ``^[-_A-Za-z0-9]{1,64}$``.
An approval notification has its own shape and carries no capability (the topic is not a decide
capability, seed 003 #899): Approve… and Deny… are ``view`` actions opening the person's
short-lived action link, which decides with one tap only on a device they enrolled (its
credential is a cookie on that phone, never in the notification), and otherwise opens the card,
where a decision needs the person signed in; Details opens the card. Nobody who merely reads the
topic can decide.

Delivery runs in background tasks with retries and backoff; a notifier that fails or hangs never
touches the approval, which stays decidable on the web page.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import httpx

from askgate.server import display
from askgate.server.store import Approval

log = logging.getLogger("askgate.server.notify")

MESSAGE_LIMIT = 4096  # bytes (ntfy DefaultMessageSizeLimit)
MAX_ACTIONS = 3
TOPIC_RE = re.compile(r"^[-_A-Za-z0-9]{1,64}$")
PRIORITY = 4
ATTEMPT_TIMEOUT = 5.0
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0)


def truncate_utf8(text: str, limit: int, marker: str) -> str:
    """`text` cut to at most `limit` UTF-8 bytes with `marker` appended when cut; never
    splits a multi-byte sequence."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    room = max(0, limit - len(marker.encode("utf-8")))
    return data[:room].decode("utf-8", "ignore") + marker


def card(approval: Approval) -> display.Card:
    return display.card_of(
        approval.tool,
        approval.input_json,
        agent=approval.agent,
        cwd=approval.cwd,
        session=approval.session,
        rule=approval.rule,
    )


def shown_input(approval: Approval) -> str:
    """What the human is asked about: every field of the input, neutralised, flags first."""
    return display.plain_text(card(approval))


def ntfy_message(
    approval: Approval,
    *,
    topic: str,
    card_url: str,
    action_url: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The JSON body published to the ntfy root URL for one approval. `card_url` must carry
    no key: the notification is readable by whoever reads the topic. `action_url` is the
    person's short-lived action link (`askgate.server.devices`): it decides only on their
    enrolled device, so it is no capability for a reader of the topic either."""
    for url in (card_url, action_url or ""):
        if "k=" in url.partition("?")[2]:
            raise ValueError("a notification must not carry an approval key")
    if not TOPIC_RE.fullmatch(topic):
        raise ValueError(f"not an ntfy topic: {topic!r}")
    now = time.time() if now is None else now
    minutes = max(0, int((approval.expires_at - now) // 60))
    shown = card(approval)
    who = display.neutralise(approval.agent or "agent").text[:60]
    tail_lines = [f"👤 {r.label} (reported): {r.value.text[:200]}" for r in shown.reported]
    tail_lines += [f"⏳ expires in {minutes}m", f"📎 {approval.id}"]
    head = f"{shown.tool.text[:200]} — needs your approval\n"
    tail = "\n" + "\n".join(tail_lines)
    marker = f" … [truncated; sha256 {approval.input_sha256[:12]}]"
    room = MESSAGE_LIMIT - len(head.encode()) - len(tail.encode())
    message = head + truncate_utf8(shown_input(approval), room, marker) + tail
    # No capability rides in a notification: whoever reads the topic (on a public server,
    # anyone who learns its name) gets links that open the card, where deciding needs the
    # person signed in. Approve / Deny jump to the card's buttons.
    target = action_url or card_url
    actions = [
        {"action": "view", "label": "Approve…", "url": f"{target}#approve", "clear": True},
        {"action": "view", "label": "Deny…", "url": f"{target}#deny", "clear": True},
        {"action": "view", "label": "Details", "url": card_url},
    ]
    return {
        "topic": topic,
        "title": f"🔐 approval needed · {who} (reported)"[:200],
        "message": message,
        "priority": PRIORITY,
        "tags": ["lock", "askgate"],
        "click": card_url,
        "actions": actions,
    }


PUBLIC_NTFY_HOSTS = ("ntfy.sh", "www.ntfy.sh")


def is_public_ntfy(url: str) -> bool:
    """ntfy.sh, where anyone who learns a topic's name reads it."""
    from urllib.parse import urlsplit

    return (urlsplit(url).hostname or "").lower() in PUBLIC_NTFY_HOSTS


def public_server_warning(url: str, *, has_token: bool) -> list[str]:
    """The loud warning for a topic on a public server (seed 003 #899)."""
    if not is_public_ntfy(url):
        return []
    return [
        "askgate: WARNING: this topic lives on the PUBLIC ntfy server "
        f"{url}: anyone who learns its name reads every approval request sent to it "
        "(the command, the working directory).",
        "askgate: WARNING: the topic is not a decide capability (Approve needs the person "
        "signed in), but for private commands run your own ntfy server with access control "
        "and enroll with --ntfy-url https://ntfy.internal --ntfy-token tk_… (docs/server.md).",
    ] + ([] if not has_token else ["askgate: (a token on ntfy.sh does not make a topic private)"])


def webhook_signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>``."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_webhook_signature(secret: bytes, header: str, body: bytes) -> bool:
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    if not parts.get("t", "").isdigit() or "v1" not in parts:
        return False
    expected = webhook_signature(secret, int(parts["t"]), body)
    return hmac.compare_digest(expected, header)


@dataclass
class Notifier:
    """Publishes in the background; `pending` lets tests and shutdown wait for delivery."""

    ntfy_url: str | None = None
    ntfy_token: str | None = None
    webhook_url: str | None = None
    webhook_secret: bytes = b""
    backoff: tuple[float, ...] = BACKOFF
    attempt_timeout: float = ATTEMPT_TIMEOUT
    transport: httpx.AsyncBaseTransport | None = None
    on_result: Callable[[str, bool], None] | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _client: httpx.AsyncClient | None = None

    @property
    def configured(self) -> bool:
        return bool(self.ntfy_url or self.webhook_url)

    def publish_ntfy(
        self, body: dict[str, Any], *, server: str | None = None, user_token: str | None = None
    ) -> None:
        """Publish to `server` (the one the user enrolled with; default the configured one).
        Credentials: the user's own ntfy token, else the server's ASKGATE_NTFY_TOKEN — and
        that one only to the server it was configured for, never to another."""
        target = (server or self.ntfy_url or "").rstrip("/")
        if not target:
            return
        token = user_token
        if token is None and self.ntfy_token and target == (self.ntfy_url or "").rstrip("/"):
            token = self.ntfy_token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = json.dumps(body, ensure_ascii=False).encode()
        self._spawn("ntfy", target + "/", data, headers)

    def publish_webhook(self, payload: dict[str, Any]) -> None:
        if not self.webhook_url:
            return
        data = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
        headers = {
            "Content-Type": "application/json",
            "X-Askgate-Signature": webhook_signature(self.webhook_secret, int(time.time()), data),
        }
        self._spawn("webhook", self.webhook_url, data, headers)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background, tracked for drain() and close()."""
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _spawn(self, kind: str, url: str, data: bytes, headers: dict[str, str]) -> None:
        self.spawn(self._deliver(kind, url, data, headers))

    def _pool(self) -> httpx.AsyncClient:
        """One pooled client for every delivery (connections reused, made on first use)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=self.attempt_timeout,
                transport=self.transport,
                limits=httpx.Limits(max_connections=32, max_keepalive_connections=16),
            )
        return self._client

    async def _deliver(self, kind: str, url: str, data: bytes, headers: dict[str, str]) -> None:
        delays = (0.0, *self.backoff)
        client = self._pool()
        for attempt, delay in enumerate(delays, 1):
            if delay:
                await asyncio.sleep(delay)
            try:
                response = await client.post(url, content=data, headers=headers)
                if response.is_success:
                    self._report(kind, True)
                    return
                why = f"HTTP {response.status_code}"
                if 400 <= response.status_code < 500 and response.status_code != 429:
                    break  # the message itself is refused: retrying cannot help
            except httpx.HTTPError as exc:
                why = type(exc).__name__
            log.warning("askgate: %s delivery attempt %d failed: %s", kind, attempt, why)
        log.error("askgate: %s delivery gave up; the approval stays decidable on its page", kind)
        self._report(kind, False)

    def _report(self, kind: str, ok: bool) -> None:
        if self.on_result is not None:
            with contextlib.suppress(Exception):
                self.on_result(kind, ok)

    async def drain(self, timeout: float) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=1.0)
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(Exception):
                await client.aclose()

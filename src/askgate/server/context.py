"""The running server's configuration and shared state (store, secret, waker, notifier)."""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import msgspec
import sqlalchemy as sa

from askgate.approvals.wire import ApprovalView, Me
from askgate.server import keys
from askgate.server.action_links import action_path
from askgate.server.notify import Notifier, ntfy_message
from askgate.server.store import Approval, Store, User, personal_tenant
from askgate.server.wake import CHANNEL, PostgresListener, Waker, notify_payload

log = logging.getLogger("askgate.server")

DEFAULT_EXPIRES_IN = 3600
MAX_EXPIRES_IN = 7 * 24 * 3600
MAX_WAIT = 120
MAX_BODY = 1024 * 1024
MAX_INPUT = 256 * 1024  # canonical bytes of one tool input


@dataclass
class ServerConfig:
    data_dir: str
    database_url: str
    secret_path: str
    public_url: str = "http://127.0.0.1:8765"
    approvals_enabled: bool = True
    default_expires_in: int = DEFAULT_EXPIRES_IN
    max_wait: int = MAX_WAIT
    max_body: int = MAX_BODY
    max_input: int = MAX_INPUT
    ntfy_url: str | None = None
    ntfy_token: str | None = None
    webhook_url: str | None = None
    webhook_secret: str | None = None
    secure_cookies: bool = False
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = None
    github_client_id: str | None = None
    github_client_secret: str | None = None
    github_url: str = "https://github.com"
    github_api_url: str = "https://api.github.com"

    @classmethod
    def from_env(
        cls, data_dir: str, env: dict[str, str] | None = None, **overrides: Any
    ) -> ServerConfig:
        from askgate.server.store import database_url

        env = dict(os.environ) if env is None else env
        values: dict[str, Any] = {
            "data_dir": data_dir,
            "database_url": database_url(data_dir, env),
            "secret_path": os.path.join(data_dir, "secret"),
            "approvals_enabled": env.get("ASKGATE_APPROVALS_ENABLED", "true").lower()
            not in ("0", "false", "no", "off"),
            "ntfy_url": env.get("ASKGATE_NTFY_URL") or None,
            "ntfy_token": env.get("ASKGATE_NTFY_TOKEN") or None,
            "webhook_url": env.get("ASKGATE_WEBHOOK_URL") or None,
            "webhook_secret": env.get("ASKGATE_WEBHOOK_SECRET") or None,
            "oidc_issuer": env.get("ASKGATE_OIDC_ISSUER") or None,
            "oidc_client_id": env.get("ASKGATE_OIDC_CLIENT_ID") or None,
            "oidc_client_secret": env.get("ASKGATE_OIDC_CLIENT_SECRET") or None,
            "github_client_id": env.get("ASKGATE_GITHUB_CLIENT_ID") or None,
            "github_client_secret": env.get("ASKGATE_GITHUB_CLIENT_SECRET") or None,
        }
        if env.get("ASKGATE_PUBLIC_URL"):
            values["public_url"] = env["ASKGATE_PUBLIC_URL"]
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


@dataclass
class ServerContext:
    config: ServerConfig
    store: Store
    secret: bytes
    waker: Waker = field(default_factory=Waker)
    notifier: Notifier = field(default_factory=Notifier)
    listener: PostgresListener | None = None
    caches: dict[Any, Any] = field(default_factory=dict)  # e.g. OIDC discovery documents

    # --- links -------------------------------------------------------------------------

    def key_for(self, approval: Approval) -> str:
        return keys.approval_key(
            self.secret,
            approval.tenant,
            approval.id,
            approval.input_sha256,
            approval.expires_at,
        )

    def card_url(self, approval: Approval, *, with_key: bool = True) -> str:
        base = f"{self.config.public_url.rstrip('/')}/approvals/{approval.id}"
        return f"{base}?k={quote(self.key_for(approval))}" if with_key else base

    def decide_url(self, approval: Approval) -> str:
        base = self.config.public_url.rstrip("/")
        return f"{base}/v1/approvals/{approval.id}/decide?k={quote(self.key_for(approval))}"

    def _action_url(self, approval: Approval) -> str:
        return self.config.public_url.rstrip("/") + action_path(self.secret, approval)

    def ntfy_topic(self, user_id: str, epoch: int = 0) -> str:
        return keys.user_topic(self.secret, user_id, epoch)

    # --- after a write -----------------------------------------------------------------

    def notify_created(self, approval: Approval) -> None:
        """Register before notifying (the row exists), notify before waiting: the event
        stream now, the phone and webhook in the background (off the request path)."""
        self.broadcast(approval, {"event": "approval:requested", "id": approval.id})
        self.notifier.spawn(self._notify(approval))

    async def _notify(self, approval: Approval) -> None:
        try:
            enrolled = await self.store.enrollment_cached(approval.created_by)
            if enrolled is not None:  # to the server recorded at enrollment, on its topic
                topic = self.ntfy_topic(approval.created_by, enrolled.topic_epoch)
                self.notifier.publish_ntfy(
                    ntfy_message(
                        approval,
                        topic=topic,
                        card_url=self.card_url(approval, with_key=False),
                        action_url=self._action_url(approval),
                    ),
                    server=enrolled.ntfy_server,
                    user_token=enrolled.ntfy_token,
                )
            if self.notifier.webhook_url:
                self.notifier.publish_webhook(
                    {
                        "type": "approval.requested",
                        "approval": msgspec.to_builtins(approval_view(approval)),
                        "card_url": self.card_url(approval),
                        "decide_url": self.decide_url(approval),
                    }
                )
        except Exception:  # a notifier must never undo or block an approval
            log.exception("askgate: cannot queue the notification for %s", approval.id)

    def broadcast(self, approval: Approval, payload: dict[str, Any]) -> None:
        """To the approval's tenant and to its creator (who hears their own approvals even
        when they are filed in a group they do not approve)."""
        self.waker.broadcast({approval.tenant, personal_tenant(approval.created_by)}, payload)

    async def announce_decision(self, approval: Approval) -> None:
        """Wake local waiters now; on SQLite also tell local SSE subscribers (on PostgreSQL
        every replica, this one included, does that when the NOTIFY arrives)."""
        self.waker.wake(approval.id, approval)
        if self.listener is None:
            self.broadcast(approval, decision_payload(approval))

    async def on_remote_decision(self, tenant: str, approval_id: str) -> None:
        if not self.waker.has_waiters(approval_id) and not self.waker.has_subscribers:
            return  # nobody here to wake or tell (e.g. the replica that decided, whose
            # waiters announce_decision already released): no read for nobody
        try:
            approval = await self.store.get(approval_id, tenant=tenant)
        except Exception:
            log.exception("askgate: cannot read %s after its NOTIFY", approval_id)
            self.waker.wake(approval_id)  # the waiters read the row themselves
            return
        self.waker.wake(approval_id, approval)
        if approval is not None:
            self.broadcast(approval, decision_payload(approval))

    async def record_decision(
        self, approval: Approval, decision: str, *, decided_by: str, reason: str | None
    ) -> Approval | None:
        """The once-only write, plus the cross-replica NOTIFY in the same transaction: the
        row as recorded when this call decided it, else None."""
        async with self.store.write() as conn:
            row = await self.store.decide_row(
                approval.id, decision, decided_by=decided_by, reason=reason, conn=conn
            )
            if row is not None and self.store.postgres:
                payload = notify_payload(approval.tenant, approval.id)
                await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, payload)))
        return row


def approval_view(
    approval: Approval,
    *,
    now: float | None = None,
    card_url: str | None = None,
    released: bool = False,
) -> ApprovalView:
    """What an API caller sees for one approval."""
    status = approval.status(now)
    late = approval.late if approval.late in ("allow", "deny") else None
    return ApprovalView(
        id=approval.id,
        status=status,  # type: ignore[arg-type]
        tool=approval.tool,
        input=json.loads(approval.input_json),
        input_sha256=approval.input_sha256,
        cwd=approval.cwd,
        session=approval.session,
        agent=approval.agent,
        surface=approval.surface,
        rule=approval.rule,
        requested_at=approval.requested_at,
        expires_at=approval.expires_at,
        wait_until=approval.wait_until,
        decided_at=approval.decided_at,
        decided_by=approval.decided_by,
        reason=approval.reason or None,
        late=late,  # type: ignore[arg-type]
        consumed=approval.consumed_at is not None,
        released=released,
        card_url=card_url,
    )


def decision_payload(approval: Approval) -> dict[str, Any]:
    """The `permissions:decision` payload (events.py's contract) for a decided approval."""
    from askgate.events import PermissionDecisionEvent

    status = approval.status()
    resolution = {"allow": "user_approved", "deny": "user_denied"}.get(status, "timed_out")
    event = PermissionDecisionEvent(
        surface=approval.surface or "tool",
        value=_value_of(approval),
        result="allow" if status == "allow" else "deny",
        resolution=resolution,  # type: ignore[arg-type]
        origin=None,
        agent_name=approval.agent,
        matched_pattern=approval.rule,
        request_id=approval.id,
    )
    return {"event": "permissions:decision", "id": approval.id, "data": msgspec.to_builtins(event)}


def _value_of(approval: Approval) -> str:
    try:
        value = json.loads(approval.input_json)
    except ValueError:
        return approval.tool
    if isinstance(value, dict):
        for name in ("command", "file_path", "path", "url"):
            if isinstance(value.get(name), str):
                return str(value[name])[:1000]
    return approval.tool


def user_view(user: User, *, enrolled: bool) -> Me:
    return Me(
        id=user.id,
        name=user.name,
        tenant=user.tenant,
        scope=user.scope,  # type: ignore[arg-type]
        approves=list(user.approves),
        enrolled=enrolled,
    )

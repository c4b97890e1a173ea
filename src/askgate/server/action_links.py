"""The notification's action link, minted where notifications are built (the server context)
and checked where the phone opens it (devices.py); its own module so neither imports the other.
"""

from __future__ import annotations

from askgate.server import keys
from askgate.server.store import Approval

ACTION_TTL = 900  # seconds: a link never outlives this, nor the waiting call's deadline


def action_expiry(approval: Approval) -> int:
    """When the approval's action link dies: the waiting call's deadline (an answer after it
    could only become a late approval), at most ACTION_TTL after the ask, never after expiry."""
    deadline = approval.wait_until if approval.wait_until is not None else approval.expires_at
    return int(min(deadline, approval.requested_at + ACTION_TTL, approval.expires_at))


def action_path(secret: bytes, approval: Approval) -> str:
    expires = action_expiry(approval)
    mac = keys.action_mac(secret, approval.created_by, approval.id, approval.input_sha256, expires)
    return f"/a/{approval.id}/{expires}.{mac}"

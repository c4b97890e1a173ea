"""Approval keys, the server secret, derived ntfy topics and token hashes.

Functional core, no I/O except `load_or_create_secret`. Canonical JSON and the input digest,
which the gate's client recomputes too, live below the server in askgate.approvals.canonical
(re-exported here for the server's modules).

* An approval key is ``<expiry>.<base64url HMAC-SHA256>`` over the canonical JSON array
  ``["askgate-approval-v1", tenant, approval id, input digest, expiry]``: an injective encoding,
  so no field can smuggle a delimiter into another (human-approval.md §4.2).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import stat

from askgate.approvals.canonical import (
    CanonicalError,
    canonical_json,
    digest_of_canonical,
    input_digest,
)

__all__ = [
    "CanonicalError",
    "SecretError",
    "approval_key",
    "canonical_json",
    "digest_of_canonical",
    "input_digest",
    "key_expiry",
    "load_or_create_secret",
    "new_approval_id",
    "new_token",
    "ntfy_topic",
    "token_hash",
    "user_topic",
    "verify_key",
]

KEY_VERSION = "askgate-approval-v1"
TOPIC_PREFIX = "ag"
SECRET_BYTES = 32
SECRET_ENV = "ASKGATE_SECRET"
SECRET_FILE_ENV = "ASKGATE_SECRET_FILE"


class SecretError(Exception):
    """The secret cannot be read, is too short, or its file is open to others."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _mac(secret: bytes, tenant: str, approval_id: str, digest: str, expires_at: int) -> bytes:
    message = canonical_json([KEY_VERSION, tenant, approval_id, digest, expires_at])
    return hmac.new(secret, message, hashlib.sha256).digest()


def approval_key(secret: bytes, tenant: str, approval_id: str, digest: str, expires_at: int) -> str:
    """The `?k=` capability for deciding one approval of one input until `expires_at`."""
    return f"{int(expires_at)}.{_b64(_mac(secret, tenant, approval_id, digest, int(expires_at)))}"


def key_expiry(key: str) -> int | None:
    """The expiry a key claims (not verified), or None when the key is not of our shape."""
    head, sep, _ = key.partition(".")
    if not sep or not head.isdigit() or len(head) > 12:
        return None
    return int(head)


def verify_key(
    secret: bytes, key: str, *, tenant: str, approval_id: str, digest: str, expires_at: int
) -> bool:
    """Constant-time check that `key` was minted for exactly this approval and input."""
    if not isinstance(key, str) or len(key) > 128:
        return False
    claimed = key_expiry(key)
    if claimed is None or claimed != int(expires_at):
        return False
    expected = approval_key(secret, tenant, approval_id, digest, int(expires_at))
    return hmac.compare_digest(expected.encode("ascii"), key.encode("utf-8", "replace"))


def ntfy_topic(secret: bytes, user_key: str) -> str:
    """The user's ntfy topic: keyed (HMAC), derived on demand, never stored.

    base32 of HMAC-SHA256(secret, "ntfy|" + user key), 26 characters = 130 bits, lower case;
    matches ntfy's topic rule ``^[-_A-Za-z0-9]{1,64}$``.
    """
    mac = hmac.new(secret, f"ntfy|{user_key}".encode(), hashlib.sha256).digest()
    return f"{TOPIC_PREFIX}-{base64.b32encode(mac).decode('ascii')[:26].lower()}"


def user_topic(secret: bytes, user_id: str, epoch: int = 0) -> str:
    """A user's topic at a rotation epoch (0: the first, as `askgate enroll` always made)."""
    return ntfy_topic(secret, user_id if epoch == 0 else json_pair(user_id, epoch))


def json_pair(user_id: str, epoch: int) -> str:
    return canonical_json([user_id, epoch]).decode()


def token_hash(token: str) -> str:
    """How a bearer token is stored: its SHA-256 (tokens carry 256 random bits)."""
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def new_token() -> str:
    return f"agt_{_b64(os.urandom(32))}"


def new_device_secret() -> str:
    return f"agd_{_b64(os.urandom(32))}"


ACTION_VERSION = "askgate-action-v1"


def action_mac(secret: bytes, user_id: str, approval_id: str, digest: str, expires: int) -> str:
    """The phone's action link for one person and one approval of one input until `expires`
    (a short time: the waiting call's deadline). Alone it decides nothing: the decision also
    needs that person's enrolled device (or their signed-in session)."""
    message = canonical_json([ACTION_VERSION, user_id, approval_id, digest, int(expires)])
    return _b64(hmac.new(secret, message, hashlib.sha256).digest())


def verify_action_mac(
    secret: bytes, mac: str, *, user_id: str, approval_id: str, digest: str, expires: int
) -> bool:
    if not isinstance(mac, str) or len(mac) > 64:
        return False
    expected = action_mac(secret, user_id, approval_id, digest, expires)
    return hmac.compare_digest(expected.encode("ascii"), mac.encode("utf-8", "replace"))


def new_approval_id() -> str:
    return f"appr-{os.urandom(12).hex()}"


def load_or_create_secret(path: str, env: dict[str, str] | None = None) -> bytes:
    """The server secret: `ASKGATE_SECRET` (hex or text, ≥ 32 bytes), else the file at
    `ASKGATE_SECRET_FILE` or `path`, created with mode 0600 when absent.

    A file readable by group or others is refused: whoever reads it can mint approval keys.
    """
    env = dict(os.environ) if env is None else env
    inline = env.get(SECRET_ENV)
    if inline:
        secret = inline.encode()
        if len(secret) < SECRET_BYTES:
            raise SecretError(f"{SECRET_ENV} is shorter than {SECRET_BYTES} bytes")
        return secret
    path = env.get(SECRET_FILE_ENV) or path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SecretError(f"cannot create the secret file {path}: {exc.strerror}") from None
    else:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(SECRET_BYTES).hex().encode() + b"\n")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SecretError(f"cannot read the secret file {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise SecretError(
                f"the secret file {path} is open to group or others (mode {mode & 0o777:o}); "
                "run: chmod 600 " + path
            )
        secret = handle.read(4096).strip()
    if len(secret) < SECRET_BYTES:
        raise SecretError(f"the secret file {path} holds fewer than {SECRET_BYTES} bytes")
    return secret

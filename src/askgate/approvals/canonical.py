"""Canonical JSON and input digests: the binding between an approval and one tool input.

RFC 8785 (JCS) via `rfc8785`: sorted keys, no whitespace, ECMAScript number forms. NaN,
Infinity, integers beyond 2**53 and non-string keys are refused (`CanonicalError`). The
server stores the digest of each approval's input (askgate.server.store) and the gate's
client recomputes it from the call it is deciding (askgate.prompters.server): an approval
of any other input is not believed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785


class CanonicalError(ValueError):
    """The value has no canonical JSON form (NaN, Infinity, a non-string key, …)."""


def canonical_json(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of a JSON value; CanonicalError when there are none."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalError(str(exc) or type(exc).__name__) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise CanonicalError(f"not a JSON value: {exc}") from None


def input_digest(value: Any) -> str:
    """Lower-case hex SHA-256 of the canonical JSON of a tool input."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def digest_of_canonical(canonical: bytes) -> str:
    """`input_digest` of a value whose canonical bytes are already at hand."""
    return hashlib.sha256(canonical).hexdigest()

"""The approval API's wire types (contract): request bodies, responses and errors as msgspec
Structs, shared by the server (which validates and documents them in /openapi.json) and the
gate's client, `askgate.prompters.server` (which decodes them). Imports only msgspec, so the
client needs nothing of the server's.

Every text field is bounded here, at the API, below its database column: a request that does not
fit is a 400 naming the field, never a database error (PostgreSQL refuses over-long values and NUL
characters; the hook would then wait out its budget on a 503).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

# Longest wait a call may announce: below Claude Code's 600 s default hook timeout with the
# margin `askgate doctor` requires (askgate.prompters.server.MAX_BUDGET says why).
MAX_WAIT_ANNOUNCED = 590.0
MAX_EXPIRES_IN = 7 * 24 * 3600

_NO_NUL = r"^[^\x00]*$"


Tool = Annotated[
    str, Meta(min_length=1, max_length=512, pattern=_NO_NUL, description="the tool's name")
]
Cwd = Annotated[
    str,
    Meta(
        max_length=4096, pattern=_NO_NUL, description="working directory, as the agent reported it"
    ),
]
Session = Annotated[
    str, Meta(max_length=512, pattern=_NO_NUL, description="session id, as the agent reported it")
]
Agent = Annotated[
    str, Meta(max_length=200, pattern=_NO_NUL, description="agent name, as the agent reported it")
]
SurfaceName = Annotated[
    str,
    Meta(
        max_length=64,
        pattern=_NO_NUL,
        description="policy surface that asked (bash, write, tool, …)",
    ),
]
Rule = Annotated[
    str,
    Meta(
        max_length=4096,
        pattern=_NO_NUL,
        description="the rule that asked, as the asking process reported it",
    ),
]
Reason = Annotated[
    str, Meta(max_length=2000, pattern=_NO_NUL, description="a human's reason, shown to the agent")
]

Status = Literal["pending", "allow", "deny", "timeout", "expired"]


class CreateApproval(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of POST /v1/approvals. `wait` is how long the creating call waits (seconds): an
    answer at or after it is recorded as `timeout`, never allow."""

    tool: Tool
    input: dict[str, Any]
    cwd: Cwd | None = None
    session: Session | None = None
    agent: Agent | None = None
    surface: SurfaceName | None = None
    rule: Rule | None = None
    expires_in: Annotated[int, Meta(ge=1, le=MAX_EXPIRES_IN)] | None = None
    wait: Annotated[float, Meta(gt=0, le=MAX_WAIT_ANNOUNCED)] | None = None


class DecideApproval(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of POST /v1/approvals/{id}/decide."""

    decision: Literal["allow", "deny"]
    reason: Reason | None = None


class ApprovalView(msgspec.Struct, kw_only=True):
    """One approval as an API caller sees it. `late`: a human's answer that landed after the
    waiting call's deadline (the status is then `timeout`). `consumed`: the allow was taken by
    the call that executed. `released`: this create was answered by a late approval, consumed
    for this call (same person, tool, input, working directory, session and agent)."""

    id: str
    status: Status
    tool: str
    input: dict[str, Any]
    input_sha256: str
    cwd: str | None
    session: str | None
    agent: str | None
    surface: str | None
    rule: str | None
    requested_at: float
    expires_at: int
    wait_until: float | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    reason: str | None = None
    late: Literal["allow", "deny"] | None = None
    consumed: bool = False
    released: bool = False
    card_url: str | None = None


class ApprovalList(msgspec.Struct, kw_only=True):
    approvals: list[ApprovalView]


class Me(msgspec.Struct, kw_only=True):
    id: str
    name: str
    tenant: str
    scope: Literal["user", "agent"]
    approves: list[str]
    enrolled: bool


class Health(msgspec.Struct, kw_only=True):
    ok: bool
    waiting: int


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Every error: a stable code, a human sentence, and for a 400 the field at fault."""

    error: str
    detail: str | None = None
    field: str | None = None


class DecisionConflict(msgspec.Struct, kw_only=True):
    """409 (another answer was recorded first) and 410 (past expiry): the recorded verdict."""

    error: str
    detail: str | None = None
    approval: ApprovalView


class MintToken(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Body of POST /v1/tokens: only agent tokens are minted here (a person's own sign-in
    is their user credential)."""

    scope: Literal["agent"] = "agent"


class TokenView(msgspec.Struct, kw_only=True):
    """One of the caller's tokens: its public id (never the secret), scope and age."""

    id: str
    scope: Literal["user", "agent"]
    created_at: float


class MintedToken(msgspec.Struct, kw_only=True):
    """A new token: the secret is shown once, here, and never again."""

    id: str
    scope: Literal["agent"]
    created_at: float
    token: str


class TokenList(msgspec.Struct, kw_only=True):
    tokens: list[TokenView]

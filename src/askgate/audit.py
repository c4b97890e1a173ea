"""The review log: one JSON object per line for every outcome.

File mode 0600 in a 0700 directory; values under secret-looking keys are masked;
every string is bounded in length so a hostile 1 MB command cannot bloat the log.
A failure to write is reported to the caller's logger and never changes a decision
(the decision has already been made, and it is never loosened by a logging fault).
"""

from __future__ import annotations

import _thread  # threading's Lock without importing threading (every tool call)
import datetime as _dt
import errno
import os
import re
import stat
from collections.abc import Mapping
from typing import Any

import msgspec

from askgate.lazylog import LazyLogger
from askgate.outcome import Outcome, Pending

# Imports logging only when it logs (askgate.lazylog): not on every tool call.
log = LazyLogger("askgate.audit")

MAX_FIELD = 1_000
MAX_DEPTH = 6
MAX_ITEMS = 50
_SECRET_KEY = re.compile(
    r"token|secret|passw(or)?d|passphrase|authorization|auth_header|credential|cookie|"
    r"api[_-]?key|private[_-]?key|session[_-]?key|access[_-]?key",
    re.IGNORECASE,
)
# Inline secrets in free text: "Authorization: Bearer x", "--password=x", "API_KEY=x".
_SECRET_INLINE = re.compile(
    r"(?i)(bearer\s+|(?:token|secret|passw(?:or)?d|api[_-]?key|authorization)\s*[=:]\s*"
    r"(?:bearer\s+)?)"  # "Authorization: Bearer X": X is the secret, not the scheme word
    r"(['\"]?)[^\s'\"]{4,}"
)
REDACTED = "[redacted]"


def bound(text: str, limit: int = MAX_FIELD) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"…[+{len(text) - limit} chars]"


def mask_text(text: str) -> str:
    return _SECRET_INLINE.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


MAX_EXACT = 8_000  # (fewer-asks) `askgate suggest` re-checks the original request


def exact_value(text: str) -> str | None:
    """The request's value byte for byte when it is short enough and holds nothing
    secret-looking (else None): `askgate suggest` re-decides exactly what was approved,
    where `value` may be cut short and a unit's command is unquoted."""
    if len(text) > MAX_EXACT or mask_text(text) != text:
        return None
    return text


def sanitize(value: Any, depth: int = 0) -> Any:
    """JSON-safe, secret-masked, bounded copy of a tool input."""
    if depth > MAX_DEPTH:
        return "[too deep]"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_ITEMS:
                out["…"] = f"[+{len(value) - MAX_ITEMS} keys]"
                break
            key = bound(str(k), 100)
            out[key] = REDACTED if _SECRET_KEY.search(key) else sanitize(v, depth + 1)
        return out
    if isinstance(value, list | tuple):
        items = [sanitize(v, depth + 1) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"[+{len(value) - MAX_ITEMS} items]")
        return items
    if isinstance(value, str):
        return bound(mask_text(value))
    if value is None or isinstance(value, bool | int | float):
        return value
    return bound(repr(value), 200)


# --- the record types (contract: `askgate schema review-log`) ------------------------------

RECORD_VERSION = 1  # bumped on any change a reader of the log must know about


class RuleRecord(msgspec.Struct, kw_only=True):
    surface: str
    pattern: str
    action: str
    origin: str
    source: str
    line: int | None


class UnitRecord(msgspec.Struct, kw_only=True):
    command: str
    action: str


class DecisionRecord(msgspec.Struct, kw_only=True, tag_field="event", tag="decision"):
    """An outcome: allowed or denied, and how (`resolution`)."""

    version: int = RECORD_VERSION
    timestamp: str
    request_id: str
    tool: str | None
    surface: str
    value: str
    policy_action: str
    action: str
    resolution: str
    # askgate failed (internal_error, malformed_input, prompter_error): not a rule.
    error: str | None
    reason: str
    denial_reason: str | None
    session_pattern: str | None
    rule: RuleRecord | None
    units: list[UnitRecord]
    agent: str | None
    session: str | None
    input: dict[str, Any]
    client: str | None = None
    # The request's whole original text (bounded) when masking changed nothing: what
    # `askgate suggest` re-decides (the `value` above is cut and masked).
    value_exact: str | None = None


class DelegatedRecord(msgspec.Struct, kw_only=True, tag_field="event", tag="ask_delegated"):
    """An ask handed to the agent's own prompt, whose answer askgate never sees."""

    version: int = RECORD_VERSION
    timestamp: str
    delegated_to: str
    request_id: str
    tool: str
    surface: str
    value: str
    policy_action: str
    reason: str
    agent: str | None
    session: str | None
    input: dict[str, Any]
    client: str | None = None


class RpcPromptRecord(msgspec.Struct, kw_only=True, tag_field="event", tag="rpc_prompt"):
    """A prompt asked over `permissions:rpc:prompt` and what the human answered."""

    version: int = RECORD_VERSION
    timestamp: str
    source: str
    request_id: str
    surface: str
    value: str
    answer: str
    approved: bool
    denial_reason: str | None
    message: str | None
    agent: str | None
    session: str | None
    client: str | None = None


ReviewRecord = DecisionRecord | DelegatedRecord | RpcPromptRecord


def review_log_json_schema() -> dict[str, Any]:
    """The JSON Schema of one review-log line, from the record types themselves."""
    schema: dict[str, Any] = msgspec.json.schema(ReviewRecord)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = f"askgate review-log record (version {RECORD_VERSION})"
    return schema


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def record_for(
    outcome: Outcome,
    *,
    tool: str | None = None,
    tool_input: Mapping[str, Any] | None = None,
    agent: str | None = None,
    session: str | None = None,
) -> DecisionRecord:
    rule = outcome.decision.rule
    return DecisionRecord(
        timestamp=_now(),
        request_id=bound(outcome.request_id, 200),
        tool=bound(tool, 200) if tool else None,
        surface=str(outcome.decision.surface),
        value=bound(mask_text(outcome.decision.value)),
        value_exact=exact_value(outcome.decision.value),
        policy_action=str(outcome.decision.action),
        action=str(outcome.action),
        resolution=str(outcome.resolution),
        error=outcome.error,
        reason=bound(mask_text(outcome.reason)),
        denial_reason=bound(outcome.denial_reason) if outcome.denial_reason else None,
        session_pattern=bound(outcome.session_pattern, 300) if outcome.session_pattern else None,
        rule=None
        if rule is None
        else RuleRecord(
            surface=str(rule.surface),
            pattern=bound(rule.pattern, 300),
            action=str(rule.action),
            origin=str(rule.origin),
            source=bound(rule.source, 300),
            line=rule.line,
        ),
        units=[
            UnitRecord(command=bound(mask_text(u.command), 300), action=str(u.action))
            for u in outcome.decision.units[:MAX_ITEMS]
        ],
        agent=bound(agent, 200) if agent else None,
        session=bound(session, 200) if session else None,
        input=sanitize(tool_input or {}),
    )


def delegated_record(pending: Pending, *, to: str) -> DelegatedRecord:
    """An ask handed to the agent's own UI, whose answer askgate never sees."""
    decision = pending.decision
    request = pending.request
    return DelegatedRecord(
        timestamp=_now(),
        delegated_to=to,
        request_id=bound(pending.request_id, 200),
        tool=bound(request.tool, 200),
        surface=str(decision.surface),
        value=bound(mask_text(decision.value)),
        policy_action=str(decision.action),
        reason=bound(mask_text(decision.reason)),
        agent=bound(request.agent, 200) if request.agent else None,
        session=bound(request.session, 200) if request.session else None,
        input=sanitize(request.input if isinstance(request.input, Mapping) else {}),
    )


def rpc_prompt_record(
    *,
    request_id: str,
    surface: str,
    value: str,
    answer: str,
    approved: bool,
    denial_reason: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    message: str | None = None,
) -> RpcPromptRecord:
    """A prompt another component asked over `permissions:rpc:prompt` (seed 000's open
    question 2): the caller's request id and what the human answered (or why nobody
    did: `no_ui`, `timed_out`, `internal_error`, `shutdown`)."""
    return RpcPromptRecord(
        timestamp=_now(),
        source="rpc_prompt",
        request_id=bound(request_id, 200),
        surface=bound(surface, 100),
        value=bound(mask_text(value)),
        answer=answer,
        approved=approved,
        denial_reason=bound(denial_reason) if denial_reason else None,
        message=bound(mask_text(message)) if message else None,
        agent=bound(agent, 200) if agent else None,
        session=bound(session, 200) if session else None,
    )


def _scrub(value: Any) -> Any:
    """`value` with every string made encodable (lone surrogates as `\\udcff` escapes)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, Mapping):
        return {_scrub(str(k)): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def default_log_path(env: Mapping[str, str] | None = None) -> str:
    """`$ASKGATE_AUDIT_LOG` (absolute), else `$XDG_STATE_HOME/askgate/review.jsonl`
    (askgate.locations: a relative XDG value is ignored, never resolved in the project)."""
    from askgate import locations

    return locations.review_log_path(env)


class AuditLog:
    """Appends records to a JSONL file (created 0600, parent 0700).

    `client` names the agent integration that asked (``"claude-code"``, ``"codex"``,
    ``"gemini"``, ``"acp:<agent>"``); when given, every record carries it as ``client``.
    """

    def __init__(self, path: str, *, client: str | None = None) -> None:
        self.path = path
        self.client = bound(client, 200) if client else None
        self._lock = _thread.allocate_lock()
        self._encoder = msgspec.json.Encoder()

    def write(self, record: ReviewRecord | Mapping[str, Any]) -> bool:
        """Append one record (a typed record, or a dict from an adapter's own shapes);
        False (and one logged line) when it cannot be written."""
        try:
            if isinstance(record, msgspec.Struct):
                if self.client is not None and record.client is None:
                    record = msgspec.structs.replace(record, client=self.client)
            elif self.client is not None and "client" not in record:
                record = {**record, "client": self.client}
            line = self._encode(record)
            with self._lock:
                os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
                # O_NOFOLLOW: a log path replaced by a symlink (to ~/.bashrc, say) must not
                # get agent-controlled text appended to its target. O_NONBLOCK: a FIFO
                # planted there must not block the hook; anything but a regular file is
                # refused.
                fd = os.open(self.path, _OPEN_FLAGS, 0o600)
                try:
                    if not stat.S_ISREG(os.fstat(fd).st_mode):
                        raise OSError(errno.EINVAL, "not a regular file")
                    os.write(fd, line)
                finally:
                    os.close(fd)
            return True
        except (OSError, ValueError, TypeError) as exc:
            log.error("askgate: cannot write the review log %s: %s", self.path, exc)
            return False

    def _encode(self, record: ReviewRecord | Mapping[str, Any]) -> bytes:
        try:
            return self._encoder.encode(record) + b"\n"
        except UnicodeEncodeError:
            # Lone surrogates (undecodable bytes in a command or path): keep them visible.
            return self._encoder.encode(_scrub(msgspec.to_builtins(record))) + b"\n"

    def outcome(self, outcome: Outcome, **context: Any) -> bool:
        return self.write(record_for(outcome, **context))

"""From an ACP permission request to a verdict: the translation and the gate.

An ACP ``toolCall`` says what kind of thing is about to happen (``kind``), where
(``locations``), and often with which input (``rawInput``). It becomes gate requests:

* ``execute`` with ``rawInput.command`` -> ``Bash`` (a list command is shell-joined); for
  agents known to put the whole command in the title (Gemini CLI: its shell tool's
  ``getDisplayTitle()`` returns ``params.command`` unchanged, 0.61.0) the title is the command;
* ``edit``/``delete``/``move`` -> one ``Write`` per location or diff path;
* ``read``/``search`` -> one ``Read`` per location;
* anything else (``fetch``, ``think``, ``other``, …) -> the tool ``acp_<kind>``.

A call askgate cannot see into (an ``execute`` without a command, an edit without a path)
is left to the client's human (`Verdict.FORWARD`), and recorded as such.
"""

from __future__ import annotations

import datetime as _dt
import os
import shlex
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from askgate.adapters.acp.core import Verdict
from askgate.gate import Gate
from askgate.hookrt.decide import audit_log, delegate, preflight_all, resolve_all
from askgate.outcome import ToolRequest
from askgate.prompters.base import Prompter

WRITE_KINDS = frozenset({"edit", "delete", "move"})
READ_KINDS = frozenset({"read", "search"})
PROMPT_BUDGET_SECONDS = 540.0


# Agents whose execute permission requests carry the exact command as the title.
TITLE_IS_COMMAND = frozenset({"acp:gemini", "acp:gemini-cli"})


def requests_for(
    tool_call: Mapping[str, Any],
    cwd: str,
    session: str | None,
    *,
    title_is_command: bool = False,
) -> list[ToolRequest]:
    """The gate requests one ACP tool call stands for; [] when askgate cannot tell."""
    kind = tool_call.get("kind") if isinstance(tool_call.get("kind"), str) else "other"
    raw = tool_call.get("rawInput")
    raw_input: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    call_id = tool_call.get("toolCallId") if isinstance(tool_call.get("toolCallId"), str) else None
    common: dict[str, Any] = {"cwd": cwd, "session": session}
    if kind == "execute":
        command = raw_input.get("command")
        if isinstance(command, list) and all(isinstance(c, str) for c in command):
            command = shlex.join(command)
        if command is None and title_is_command:
            command = tool_call.get("title")
        if not isinstance(command, str) or not command:
            return []
        return [ToolRequest(tool="Bash", input={"command": command}, request_id=call_id, **common)]
    if kind in WRITE_KINDS or kind in READ_KINDS:
        paths = _paths(tool_call, raw_input)
        tool = "Write" if kind in WRITE_KINDS else "Read"
        return [
            ToolRequest(
                tool=tool,
                input={"file_path": path},
                request_id=f"{call_id}#{n + 1}" if call_id and len(paths) > 1 else call_id,
                **common,
            )
            for n, path in enumerate(paths)
        ]
    return [ToolRequest(tool=f"acp_{kind}", input=raw_input, request_id=call_id, **common)]


def _paths(tool_call: Mapping[str, Any], raw_input: Mapping[str, Any]) -> list[str]:
    paths: list[str] = []
    locations = tool_call.get("locations")
    for location in locations if isinstance(locations, list) else []:
        if isinstance(location, Mapping) and isinstance(location.get("path"), str):
            paths.append(location["path"])
    content = tool_call.get("content")
    for item in content if isinstance(content, list) else []:
        is_diff = isinstance(item, Mapping) and item.get("type") == "diff"
        if is_diff and isinstance(item.get("path"), str):
            paths.append(item["path"])
    for key in ("file_path", "path", "abs_path"):
        if isinstance(raw_input.get(key), str):
            paths.append(raw_input[key])
    return list(dict.fromkeys(p for p in paths if p))


class PermissionDecider:
    """Decides permission requests for one proxied agent (one gate per working directory,
    so "approved for this session" answers from the approval server carry over)."""

    def __init__(
        self,
        client: str,
        *,
        config_files: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        prompter: Prompter | None = None,
        default_cwd: str | None = None,
    ) -> None:
        self.client = client
        self.config_files = list(config_files)
        self.env = dict(os.environ if env is None else env)
        self.prompter = prompter
        self.default_cwd = default_cwd or os.getcwd()
        self._gates: dict[str, Gate] = {}
        self._lock = threading.Lock()  # decisions run on worker threads

    def gate(self, cwd: str) -> Gate:
        with self._lock:
            return self._gate(cwd)

    def _gate(self, cwd: str) -> Gate:
        if cwd not in self._gates:
            from askgate.policy.engine import Policy

            policy = Policy.load(cwd, config_files=self.config_files, env=self.env)
            self._gates[cwd] = Gate(
                policy,
                audit=audit_log(self.env, self.client),
                prompter=self.prompter,
                prompt_timeout=PROMPT_BUDGET_SECONDS,
            )
        return self._gates[cwd]

    def decide(self, params: Mapping[str, Any], cwd: str | None) -> tuple[Verdict, str]:
        """Never raises: an internal failure is a deny."""
        try:
            return self._decide(params, cwd or self.default_cwd)
        except Exception as exc:
            return Verdict.DENY, f"askgate internal error: {exc!r}"[:500]

    def _decide(self, params: Mapping[str, Any], cwd: str) -> tuple[Verdict, str]:
        session = params.get("sessionId") if isinstance(params.get("sessionId"), str) else None
        tool_call = params.get("toolCall")
        if not os.path.isabs(cwd):
            cwd = os.path.abspath(cwd)
        gate = self.gate(cwd)
        requests = (
            requests_for(tool_call, cwd, session, title_is_command=self.client in TITLE_IS_COMMAND)
            if isinstance(tool_call, Mapping)
            else []
        )
        if not requests:
            self._record_blind(gate, params)
            return Verdict.FORWARD, "askgate cannot see what this tool call does"
        result = preflight_all(gate, requests)
        if isinstance(result, list):
            if self.prompter is None:
                for pending in result:
                    delegate(gate, pending, to="acp-client")
                return Verdict.FORWARD, result[0].decision.reason
            result = resolve_all(gate, result)
        return (Verdict.ALLOW if result.allowed else Verdict.DENY), result.reason

    def _record_blind(self, gate: Gate, params: Mapping[str, Any]) -> None:
        from askgate.audit import sanitize

        if gate.audit is None:
            return
        tool_call = params.get("toolCall")
        gate.audit.write(
            {
                "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds"),
                "event": "ask_delegated",
                "delegated_to": "acp-client",
                "reason": "askgate cannot see what this tool call does",
                "session": params.get("sessionId"),
                "tool_call": sanitize(tool_call if isinstance(tool_call, Mapping) else {}),
            }
        )

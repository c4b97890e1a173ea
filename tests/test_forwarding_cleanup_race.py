"""A sibling child's cleanup must not fail another child's forwarded ask.

After every exchange a child removes the session's `requests/`, `responses/` and session
directory when they are empty (pi's children do the same). With several children asking
at once, one child's cleanup can remove a directory that another party has just opened
and is about to write into: the write then fails with ENOENT on its temporary file (CI
saw `permission forwarding to session p failed: [Errno 2] … .json.….tmp`, one of four
concurrent children answered "unavailable"). The writers re-create the directory and
write again.

The interleaving is forced, not waited for: the sibling's real `cleanup_empty` runs at
the exact moment between a writer opening its directory and creating its file there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from askgate.forwarding import ForwardingPrompter, ForwardingServer, io
from askgate.forwarding.protocol import Layout
from askgate.prompters.base import PromptReply, PromptRequest, PromptState

SESSION = "p"


class Approver:
    def available(self) -> bool:
        return True

    def prompt(self, request: PromptRequest, timeout: float | None = None) -> PromptReply:
        return PromptReply(state=PromptState.APPROVED)


def _directory_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.fixture
def sibling_cleans_up_before_write(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[Path, str], list[str]]]:
    """`arm(root, directory_name)`: the next write into a directory of that name is
    preceded by a sibling child's cleanup of the session. Returns the log of removals."""
    real = io.atomic_write_at
    armed: dict[str, Path] = {}
    fired: list[str] = []

    def racing_write(dir_fd: int, name: str, data: bytes) -> None:
        where = _directory_of(dir_fd)
        for directory, root in list(armed.items()):
            if where.endswith(f"/{directory}") and name.endswith(".json"):
                del armed[directory]
                io.cleanup_empty(Layout(root), SESSION)  # the sibling, right now
                fired.append(f"{directory} removed: {_directory_of(dir_fd).endswith('(deleted)')}")
        real(dir_fd, name, data)

    monkeypatch.setattr(io, "atomic_write_at", racing_write)

    def arm(root: Path, directory: str) -> list[str]:
        armed[directory] = root
        return fired

    yield arm


def _ask(root: Path) -> PromptReply:
    prompter = ForwardingPrompter(SESSION, root=root, mode="poll", poll_interval=0.01)
    request = PromptRequest(request_id="r", surface="bash", value="ls", message="ls?")
    return prompter.prompt(request, timeout=60)


def test_a_sibling_removing_requests_before_the_child_writes_does_not_lose_the_ask(
    tmp_path, sibling_cleans_up_before_write
) -> None:
    root = tmp_path / "fwd"
    fired = sibling_cleans_up_before_write(root, "requests")
    with ForwardingServer(SESSION, Approver(), root=root, mode="poll", poll_interval=0.01):
        reply = _ask(root)
    assert fired == ["requests removed: True"]  # the race really happened
    assert reply.state is PromptState.APPROVED, reply.detail


def test_a_sibling_removing_responses_before_the_parent_answers_does_not_lose_the_answer(
    tmp_path, sibling_cleans_up_before_write
) -> None:
    root = tmp_path / "fwd"
    fired = sibling_cleans_up_before_write(root, "responses")
    with ForwardingServer(SESSION, Approver(), root=root, mode="poll", poll_interval=0.01):
        reply = _ask(root)
    assert fired == ["responses removed: True"]
    # Without the retry the parent logged "withdrawn" and the child sat out its budget.
    assert reply.state is PromptState.APPROVED, reply.detail


def test_leftovers_are_cleaned_after_the_race(tmp_path, sibling_cleans_up_before_write) -> None:
    root = tmp_path / "fwd"
    sibling_cleans_up_before_write(root, "requests")
    with ForwardingServer(SESSION, Approver(), root=root, mode="poll", poll_interval=0.01):
        assert _ask(root).state is PromptState.APPROVED
    assert not (root / "sessions" / SESSION).exists()

"""./scripts/demo, the README's first command, run as a newcomer would (no stdin, no terminal)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 120


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKGATE_")}
    # Reuse this test run's virtualenv instead of creating one.
    env["ASKGATE_VENV"] = sys.prefix  # the virtualenv (the executable may be a symlink out of it)
    env.update(extra)
    return env


def _read_until_card(proc: subprocess.Popen[str]) -> tuple[list[str], str]:
    assert proc.stdout is not None
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if "/approvals/appr-" in line and "?k=" in line:
            return lines, line.strip()
    raise AssertionError("the demo printed no approval URL:\n" + "\n".join(lines))


def test_demo_shows_allow_deny_and_a_pending_approval_page_then_releases_it() -> None:
    proc = subprocess.Popen(
        [str(REPO / "scripts" / "demo")],
        cwd=REPO,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        lines, card = _read_until_card(proc)
        text = "\n".join(lines)
        assert "-> allow (policy_allow)" in text
        assert "-> deny (policy_deny)" in text
        assert "-> ask: waiting for a human" in text
        page = httpx.get(card, timeout=10)
        assert page.status_code == 200
        assert "git push origin main" in page.text and "Approve" in page.text
        parts = urlsplit(card)
        decide = httpx.post(
            f"{parts.scheme}://{parts.netloc}{parts.path.replace('/approvals/', '/v1/approvals/')}"
            f"/decide?{parts.query}",
            json={"decision": "allow"},
            timeout=10,
        )
        assert decide.status_code == 200
        assert proc.stdout is not None
        released = ""
        for line in proc.stdout:
            if "user_approved" in line:
                released = line
                break
        assert "-> allow (user_approved)" in released
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_demo_can_exit_once_ready() -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "demo")],
        cwd=REPO,
        env=_env(ASKGATE_DEMO_EXIT_AFTER_READY="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "/approvals/appr-" in done.stdout and "?k=" in done.stdout
    assert "Traceback" not in done.stderr

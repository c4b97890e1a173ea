"""`askgate install codex|gemini`: the hook files they write, idempotence, uninstall,
dry run, and that other settings survive. Run as the real command in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from askgate.install.hook_files import hook_command


def install(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    env.pop("CODEX_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "askgate", "install", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or tmp_path,
        timeout=60,
    )


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def handlers(document: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [h for group in document["hooks"][event] for h in group["hooks"]]


def test_codex_user_install_writes_both_events(tmp_path: Path) -> None:
    proc = install(tmp_path, "codex", "--user")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "home" / ".codex" / "hooks.json"
    document = load(path)
    for event in ("PreToolUse", "PermissionRequest"):
        [handler] = handlers(document, event)
        assert handler["type"] == "command"
        assert handler["timeout"] == 600  # seconds
        assert handler["command"].endswith("hook codex || exit 2")
    assert "/hooks" in proc.stdout  # the user is told to trust the hook
    assert path.stat().st_mode & 0o777 == 0o600


def test_gemini_user_install_timeout_is_in_milliseconds(tmp_path: Path) -> None:
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"theme": "dark", "hooks": {"AfterTool": [{"hooks": []}]}}))
    proc = install(tmp_path, "gemini")
    assert proc.returncode == 0, proc.stderr
    document = load(settings)
    assert document["theme"] == "dark"
    assert document["hooks"]["AfterTool"] == [{"hooks": []}]
    [group] = document["hooks"]["BeforeTool"]
    assert group["matcher"] == "*"
    [handler] = group["hooks"]
    assert handler["timeout"] == 600_000
    assert handler["name"] == "askgate"
    assert handler["command"].endswith("hook gemini || exit 2")


@pytest.mark.parametrize(
    ("agent", "relative"), [("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json")]
)
def test_project_install_idempotent_and_uninstall(
    tmp_path: Path, agent: str, relative: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    path = project / relative
    assert install(tmp_path, agent, "--project", str(project)).returncode == 0
    first = path.read_text()
    again = install(tmp_path, agent, "--project", str(project))
    assert again.returncode == 0 and "already installed" in again.stdout
    assert path.read_text() == first
    # a foreign hook in the same event survives both install and uninstall
    document = load(path)
    event = next(iter(document["hooks"]))
    foreign = {"hooks": [{"type": "command", "command": "other-tool check"}]}
    document["hooks"][event].insert(0, foreign)
    path.write_text(json.dumps(document))
    assert install(tmp_path, agent, "--project", str(project)).returncode == 0
    assert load(path)["hooks"][event][0] == foreign
    assert len(load(path)["hooks"][event]) == 2
    removed = install(tmp_path, agent, "--project", str(project), "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert load(path)["hooks"] == {event: [foreign]}


@pytest.mark.parametrize("agent", ["codex", "gemini"])
def test_dry_run_changes_nothing(tmp_path: Path, agent: str) -> None:
    proc = install(tmp_path, agent, "--dry-run")
    assert proc.returncode == 0
    assert f"hook {agent}" in proc.stdout
    assert not (tmp_path / "home").exists()


def test_config_files_are_made_absolute(tmp_path: Path) -> None:
    command = hook_command("codex", config_files=["p.toml"], program="askgate")
    assert (
        command
        == f"askgate hook codex --config {tmp_path / 'x'}".replace(
            str(tmp_path / "x"), os.path.abspath("p.toml")
        )
        + " || exit 2"
    )


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"hooks": 3}'])
def test_unreadable_file_is_a_one_line_error(tmp_path: Path, content: str) -> None:
    settings = tmp_path / "home" / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(content)
    proc = install(tmp_path, "gemini")
    assert proc.returncode == 2
    assert proc.stderr.startswith("askgate: error:") and proc.stderr.count("\n") == 1
    assert settings.read_text() == content


def test_bad_arguments(tmp_path: Path) -> None:
    proc = install(tmp_path, "codex", "--user", "--project")
    assert proc.returncode == 2
    assert "not allowed with" in proc.stderr


def test_guarded_command_blocks_when_askgate_cannot_start(tmp_path: Path) -> None:
    """The `|| exit 2` guard: a hook command that cannot run exits 2 with stderr text."""
    command = hook_command("gemini", program=str(tmp_path / "no-such-askgate"))
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip()

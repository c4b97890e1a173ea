"""`askgate init`: a starter policy from what the project is; idempotent; trusted."""

from __future__ import annotations

from pathlib import Path

from askgate.policy.config import load_policy
from askgate.profiles.detect import detect_profiles
from cli_harness import Cli


def _python_project(cli: Cli) -> Path:
    root = cli.project("py")
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return root


def test_detection_follows_the_marker_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    for marker in ("pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Dockerfile"):
        (tmp_path / marker).write_text("")
    names = [name for name, _ in detect_profiles(str(tmp_path))]
    assert names == [
        "read-only",
        "project-write",
        "python-dev",
        "node-dev",
        "rust-dev",
        "go-dev",
        "docker-read",
        "git-local",
    ]
    assert [name for name, _ in detect_profiles(str(tmp_path / "nothing"))] == [
        "read-only",
        "project-write",
    ]


def test_init_yes_writes_a_trusted_project_policy_that_loads(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    root = _python_project(cli)
    result = cli.run("init", "--yes", "--cwd", str(root))
    assert result.returncode == 0, result
    assert "profile python-dev" in result.stdout and "found pyproject.toml" in result.stdout
    assert "trusted" in result.stdout
    policy_file = root / ".askgate" / "policy.toml"
    text = policy_file.read_text()
    assert 'profiles = ["read-only", "project-write", "python-dev", "git-local"]' in text
    assert '"~/.ssh/**" = { action = "deny"' in text
    loaded = load_policy(str(root), env=cli.env)
    assert not loaded.errors and not loaded.warnings, "trusted: nothing ignored"
    checked = cli.run("check", "--cwd", str(root), "bash", "uv run pytest -q && ls")
    assert checked.stdout.startswith("allow"), checked
    denied = cli.run("check", "--cwd", str(root), "read", str(cli.home / ".ssh" / "id_rsa"))
    assert denied.stdout.startswith("deny"), denied
    env_file = cli.run("check", "--cwd", str(root), "read", str(root / ".env"))
    assert env_file.stdout.startswith("deny"), env_file
    example = cli.run("check", "--cwd", str(root), "read", str(root / ".env.example"))
    assert example.stdout.startswith("allow"), example


def test_init_is_idempotent_and_never_overwrites_without_force(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    root = _python_project(cli)
    assert cli.run("init", "--yes", "--cwd", str(root)).returncode == 0
    again = cli.run("init", "--yes", "--cwd", str(root))
    assert again.returncode == 0 and "already up to date" in again.stdout
    policy_file = root / ".askgate" / "policy.toml"
    policy_file.write_text('default = "deny"\n')
    refused = cli.run("init", "--yes", "--cwd", str(root))
    assert refused.returncode == 1 and "use --force" in refused.stderr
    assert policy_file.read_text() == 'default = "deny"\n'
    forced = cli.run("init", "--yes", "--force", "--cwd", str(root))
    assert forced.returncode == 0 and "profiles =" in policy_file.read_text()


def test_init_without_yes_and_without_a_terminal_writes_nothing(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    root = _python_project(cli)
    result = cli.run("init", "--cwd", str(root))
    assert result.returncode == 1 and "--yes" in result.stderr
    assert not (root / ".askgate" / "policy.toml").exists()


def test_init_user_and_explicit_profiles(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    root = _python_project(cli)
    result = cli.run("init", "--user", "--yes", "--profile", "go-dev", "--cwd", str(root))
    assert result.returncode == 0, result
    assert 'profiles = ["go-dev"]' in cli.user_file.read_text()
    assert "no trust step" in result.stdout


def test_init_bad_input_is_a_one_line_error(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    root = _python_project(cli)
    unknown = cli.run("init", "--yes", "--profile", "nope", "--cwd", str(root))
    assert unknown.returncode == 2 and "unknown profile 'nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    missing = cli.run("init", "--yes", "--cwd", str(tmp_path / "missing"))
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    both = cli.run("init", "--user", "--project")
    assert both.returncode == 2 and "not allowed with" in both.stderr

"""The package's public surface: every name resolves, and importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

import askgate


def test_every_public_name_resolves() -> None:
    assert set(askgate.__all__) == {*askgate._LAZY, "__version__"}
    for name in askgate.__all__:
        assert getattr(askgate, name) is not None, name


def test_readme_example(tmp_path) -> None:
    (tmp_path / ".git").mkdir()
    gate = askgate.Gate(askgate.Policy.load(str(tmp_path), env={"HOME": str(tmp_path)}))
    outcome = gate.decide(
        askgate.ToolRequest(tool="Bash", input={"command": "make test"}, cwd=str(tmp_path))
    )
    assert outcome.action is askgate.Action.DENY
    assert outcome.resolution is askgate.Resolution.CONFIRMATION_UNAVAILABLE


def test_import_is_lazy() -> None:
    code = "import sys, askgate; print(sorted(m for m in sys.modules if m.startswith('askgate')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "['askgate']"

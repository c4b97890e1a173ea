"""No new function of radon grade E or F (scripts/complexity, with its known-debt list)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_no_new_function_of_grade_e_or_f() -> None:
    pytest.importorskip("radon")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "complexity")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr

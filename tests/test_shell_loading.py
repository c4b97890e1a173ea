"""Loading the bash grammar: the direct binding load, and its fallback."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import tree_sitter_bash
from tree_sitter import Language

from askgate.policy.shell import _bash_language


def _same_grammar(a: object, b: object) -> bool:
    la, lb = Language(a), Language(b)
    return (la.name, la.abi_version, la.node_kind_count) == (
        lb.name,
        lb.abi_version,
        lb.node_kind_count,
    ) and la.node_kind_count > 100


def test_direct_load_gives_the_package_grammar() -> None:
    assert _same_grammar(_bash_language(), tree_sitter_bash.language())


def test_fallback_when_the_binding_cannot_be_found(monkeypatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert _same_grammar(_bash_language(), tree_sitter_bash.language())


def test_analysis_does_not_import_importlib_resources() -> None:
    code = (
        "import sys\n"
        "from askgate.policy.shell import analyze\n"
        "assert analyze('git status && ls').units[1].command == 'ls'\n"
        "print('importlib.resources' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"

"""The Python data files under tests/data/, each loaded once per test process."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DATA = Path(__file__).parent / "data"


@functools.cache
def load_data_module(name: str) -> ModuleType:
    """tests/data/NAME.py as a module (registered in sys.modules: NamedTuples need it)."""
    spec = importlib.util.spec_from_file_location(f"askgate_{name}", DATA / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def bash_corpus_commands() -> list[str]:
    """Every command of the bash corpus (tests/data/bash_corpus.py)."""
    return [case.command for case in load_data_module("bash_corpus").CASES]

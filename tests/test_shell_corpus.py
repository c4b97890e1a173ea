"""The adversarial corpus (tests/data/bash_corpus.py) against the analyser."""

from __future__ import annotations

import pytest

from askgate.policy.model import Action, Unit
from askgate.policy.shell import analyze
from data_modules import load_data_module

corpus = load_data_module("bash_corpus")
CASES = corpus.CASES


def _id(case: object) -> str:
    command = repr(case.command)  # type: ignore[attr-defined]
    return command if len(command) <= 60 else command[:57] + "..."


def _visible(units: tuple[Unit, ...], text: str) -> bool:
    return any(
        form == text or form.startswith(text + " ")
        for unit in units
        for form in (unit.command, *unit.alternates)
    )


def test_corpus_is_big_enough() -> None:
    assert len(CASES) >= 100
    assert len({case.command for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_corpus_case(case: corpus.Case) -> None:  # type: ignore[name-defined]
    analysis = analyze(case.command)
    got = list(analysis.units)
    assert sorted(u.command for u in got) == sorted(u.command for u in case.units)
    remaining = list(got)
    for expected in case.units:
        match = next(
            (
                u
                for u in remaining
                if u.command == expected.command and (u.floor is not None) == expected.floor
            ),
            None,
        )
        assert match is not None, f"{expected.command!r} floor={expected.floor}: {got!r}"
        remaining.remove(match)
        assert match.reads == expected.reads, match
        assert match.writes == expected.writes, match
        assert match.cwd == expected.cwd, match
        assert set(expected.alternates) <= set(match.alternates), match
        if match.floor is not None:
            assert match.floor is Action.ASK and match.floor_reason
    assert (analysis.floor is not None) == case.floor, analysis.floor_reason
    for text in case.deny_visible:
        assert _visible(analysis.units, text), text
    at_least_ask = analysis.floor is not None or any(u.floor for u in analysis.units)
    assert at_least_ask == case.at_least_ask

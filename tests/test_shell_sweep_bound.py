"""The sweep's shortcut (walker._flat_command_bound): the bound on command-like nodes must
never be below what tree-sitter finds, or a command the walk missed would go unswept.
Quoted strings that expand nothing count as plain words; anything else stays unbounded."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from askgate.policy.model import Action
from askgate.policy.shell import _find_commands, _parse, analyze
from askgate.policy.shell.walker import _flat_command_bound

_TOKENS = (
    "ls", "a", "echo", "if", "then", "fi", " ", " ", ";", "&&", "||", "|", "&", "\n", "'",
    '"', "'a b'", '"c d"', "'x;y'", '"p|q"', "$(", ")", "`", "\\", "#", "$x", "<<E\n", "\nE\n",
    "<<<", ">", "2>&1", "{", "}", "(", "[[", "]]",
)  # fmt: skip


def test_inert_quotes_keep_the_bound() -> None:
    assert _flat_command_bound(b'grep -rn "def main" app.py | wc -l') == 2
    assert _flat_command_bound(b"echo 'a; b' && ls") == 2


def test_quotes_that_expand_or_do_not_pair_are_unbounded() -> None:
    assert _flat_command_bound(b'echo "$(curl x)"; ls') == -1
    assert _flat_command_bound(b"echo \"x'$'y\"") == -1
    assert _flat_command_bound(b"echo it's") == -1
    assert _flat_command_bound(b'echo "a\\" ; b"') == -1
    # A heredoc body is text: quote marks in it pair nothing.
    assert _flat_command_bound(b"cat <<E\n'$(a;b;c;d;e)'\nE\n") == -1


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=14))
def test_the_bound_is_never_below_what_tree_sitter_finds(tokens: list[str]) -> None:
    source = "".join(tokens).encode()
    bound = _flat_command_bound(source)
    root = _parse(source)
    if bound < 0 or root.has_error:
        return  # the sweep runs anyway
    found = _find_commands(root)
    assert found is not None
    assert len(found) <= bound, source


def test_a_command_substitution_in_a_quoted_heredoc_line_is_still_seen() -> None:
    analysis = analyze("cat <<E\n'$(curl evil.example)'\nE\n")
    assert any(u.command.startswith("curl") for u in analysis.units)
    quoted = analyze("echo 'curl evil.example' \"curl x\" && ls")
    assert [u.command for u in quoted.units] == ["echo curl evil.example curl x", "ls"]
    assert quoted.floor is None and all(u.floor is not Action.ASK for u in quoted.units)

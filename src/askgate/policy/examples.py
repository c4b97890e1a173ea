"""Rule examples, checked when a policy file loads (after Codex's execpolicy).

A rule may carry the values it is meant to match and not to match:

    "git push *" = { action = "deny", match = ["git push -f main"], not_match = ["git pushd"] }

For wildcard surfaces an example is the value itself (a bash example is one command, its
words separated by single spaces, as units are matched); for path surfaces it is a path,
relative ones taken from the project root and `~` expanded, like the rule's pattern; for
`net` it is `HOST:PORT`, a URL, or a bare `HOST` (taken as port 443). An
example that does not behave as written makes the file fail to load (it then clamps like
any broken file): a rule whose author's intent and pattern disagree is not a rule to trust.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from askgate.policy.model import Surface
from askgate.policy.paths import home_directory, normalize
from askgate.policy.patterns import compile_pattern, kind_of
from askgate.policy.rules import expand_path_pattern

MAX_EXAMPLES_PER_RULE = 50


class RuleExample(msgspec.Struct, frozen=True, kw_only=True):
    """One example of one rule and whether the pattern treats it as written."""

    surface: Surface
    pattern: str
    value: str
    should_match: bool
    passed: bool
    line: int | None
    key: str  # the rule's key, as rendered in errors (`bash."git push *"`)
    agent: str | None = None

    @property
    def verdict(self) -> str:
        expected = "match" if self.should_match else "not match"
        return f"{'ok' if self.passed else 'FAILED'}: {self.value!r} should {expected}"


def example_matches(
    surface: Surface,
    pattern: str,
    value: str,
    *,
    base_dir: str,
    env: Mapping[str, str] | None,
) -> bool:
    """Whether `pattern` on `surface` matches the example `value`, as the engine would."""
    if surface.is_path:
        home = home_directory(env)
        compiled = compile_pattern(
            kind_of(surface), expand_path_pattern(pattern, home=home, base_dir=base_dir)
        )
        return compiled.matches(normalize(value, base_dir, env))
    if surface is Surface.NET:  # HOST:PORT, a URL, or HOST (port 443): policy/net.py
        from askgate.policy.net import parse_example

        return compile_pattern("net", pattern).matches(parse_example(value).value)
    text = " ".join(value.split()) if surface is Surface.BASH else value
    return compile_pattern(kind_of(surface), pattern).matches(text)

"""Properties of the bash analyser over generated input.

1. analyze() never raises and always returns a ShellAnalysis, whatever the text
   (NULs, lone surrogates, huge input, random bash-ish token soup).
2. A `rm -rf /` placed anywhere a command can run (any side of a chain, inside
   substitutions, subshells, groups, control flow, wrappers, `bash -c`) is visible
   to a deny rule: some unit's primary form or alternate is or starts with it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from askgate.policy.model import Action, ShellAnalysis
from askgate.policy.shell import analyze

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
MARKER = "rm -rf /"

# -- arbitrary text ------------------------------------------------------------------

ANY_CHARACTER = st.characters(exclude_categories=())  # includes NUL and lone surrogates
SHELLISH = st.sampled_from(
    [*"abc /-$'\"`\\(){}[]<>|&;*?~#=\n\t!%", "$(", "<<", "<<<", "<(", "${", "&&", "||"]
)


@SETTINGS
@given(st.text(ANY_CHARACTER, max_size=200))
def test_arbitrary_text_never_raises(text: str) -> None:
    assert isinstance(analyze(text), ShellAnalysis)


@SETTINGS
@given(st.lists(SHELLISH, max_size=80).map("".join))
def test_shell_token_soup_never_raises(text: str) -> None:
    analysis = analyze(text)
    assert isinstance(analysis, ShellAnalysis)
    for unit in analysis.units:
        assert unit.floor in (None, Action.ASK)
        assert (unit.floor is None) == (unit.floor_reason is None)


@settings(max_examples=5, deadline=None)
@given(st.sampled_from(["$(", "(", "{ ", "`", "'", '"', "a && ", "echo x | "]))
def test_huge_input_never_raises(piece: str) -> None:
    analysis = analyze(piece * 30_000)
    assert analysis.floor is Action.ASK


# -- generated commands with a known `rm -rf /` inside -----------------------------

PLAIN = st.from_regex(r"[a-z][a-z0-9._/-]{0,7}", fullmatch=True).filter(
    lambda w: w not in ("if", "then", "fi", "do", "done", "case", "esac", "for", "while",
                        "until", "function", "select", "in", "time", "coproc", "rm")
)  # fmt: skip
ARGUMENT = st.one_of(
    PLAIN,
    st.from_regex(r"'[a-z &|;$()`<>*]{0,10}'", fullmatch=True),
    st.from_regex(r'"[a-z &|;<>*]{0,10}"', fullmatch=True),
    st.sampled_from(["$HOME", "$X", '"$Y"', "${Z:-w}", "*.py", "~/x", "2>/dev/null", "> out"]),
)
SEPARATORS = st.sampled_from([" && ", " || ", "; ", " | ", " |& ", " & ", "\n"])
WRAPPERS = st.sampled_from(
    ["", "env ", "env FOO=1 ", "timeout 5 ", "nice -n 2 ", "nohup ", "command ", "builtin ",
     "time ", "stdbuf -oL ", "FOO=bar ", "sudo ", "sudo -u root ", "xargs ", "doas ",
     "exec ", "setsid ", "/usr/bin/env ", "noglob ", "busybox "]
)  # fmt: skip


@st.composite
def benign(draw: st.DrawFn) -> str:
    return " ".join([draw(PLAIN), *draw(st.lists(ARGUMENT, max_size=3))])


@st.composite
def command(draw: st.DrawFn, depth: int = 3) -> tuple[str, bool]:
    """(shell text, whether it contains the marker somewhere a command can run)."""
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return draw(WRAPPERS) + MARKER, True
        return draw(benign()), False
    inner, marked = draw(command(depth - 1))
    shape = draw(st.integers(0, 11))
    # A space after `$(`: `$((…))` is arithmetic in bash, which runs nothing.
    if shape == 0:
        return f"echo $( {inner})", marked
    if shape == 1 and "`" not in inner:
        return f"echo `{inner}`", marked
    if shape == 2:
        return f"( {inner})", marked
    if shape == 3:
        return f"{{ {inner}; }}", marked
    if shape == 4:
        return f"if true; then {inner}; fi", marked
    if shape == 5:
        return f"while false; do {inner}; done", marked
    if shape == 6:
        return f"f() {{ {inner}; }}", marked
    if shape == 7 and "'" not in inner:
        return f"bash -c '{inner}'", marked
    if shape == 8:
        return f'echo "$( {inner})"', marked
    if shape == 9:
        return f"cat <( {inner})", marked
    if shape == 10:
        return f"x=$( {inner})", marked
    other, other_marked = draw(command(depth - 1))
    return f"{inner}{draw(SEPARATORS)}{other}", marked or other_marked


@st.composite
def program(draw: st.DrawFn) -> tuple[str, bool]:
    parts = draw(st.lists(command(), min_size=1, max_size=4))
    separators = draw(st.lists(SEPARATORS, min_size=len(parts), max_size=len(parts)))
    text = "".join(p + s for (p, _), s in zip(parts, separators, strict=True))
    return text.rstrip("&|\n ;"), any(marked for _, marked in parts)


def visible(analysis: ShellAnalysis) -> bool:
    return any(
        form == MARKER or form.startswith(MARKER + " ")
        for unit in analysis.units
        for form in (unit.command, *unit.alternates)
    )


@SETTINGS
@given(program())
def test_a_command_that_can_run_is_visible_to_denies(generated: tuple[str, bool]) -> None:
    text, marked = generated
    analysis = analyze(text)
    if marked:
        assert visible(analysis), (text, analysis.units)


@SETTINGS
@given(program())
def test_quoted_marker_is_never_a_command(generated: tuple[str, bool]) -> None:
    text, _ = generated
    quoted = f"echo '{MARKER}' && {text.replace(MARKER, 'true')}"
    assert not visible(analyze(quoted))

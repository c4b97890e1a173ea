"""What a human is shown about one approval: every field of the input, as it will run.

Pure functions (approval in, display rows out), used by the card, the list and the ntfy message:

* every field of the canonical input is shown, in canonical (RFC 8785) order, never only
  `command`; a field that changes how the tool runs (`dangerouslyDisableSandbox`,
  `run_in_background`, …, data below) or that askgate does not know is flagged;
* bidi controls (which reorder what the eye reads), other control and invisible characters are
  replaced by a visible ``⟦U+202E⟧`` mark, and the text is marked as having held them;
* a hidden tail (a long run of blank lines or spaces that would scroll what follows out of
  sight) is collapsed into a visible ``⟦57 blank lines⟧`` mark, and marked;
* what the asking process reported about itself (agent, cwd, session, the rule that asked) is
  labelled *reported*: the server cannot check it.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

# Fields that change what a tool does beyond its main argument (flagged on the card). Per tool
# name; "*" applies to every tool. Checked at import: every name is a non-empty identifier.
BEHAVIOUR_FIELDS: dict[str, tuple[str, ...]] = {
    "*": ("dangerouslyDisableSandbox", "sandbox", "run_in_background", "timeout"),
    "Edit": ("replace_all",),
}
# Fields shown but known not to change behaviour: the agent's own prose.
DESCRIPTIVE_FIELDS: dict[str, tuple[str, ...]] = {
    "*": ("description",),
}
# The main argument of a tool, shown first and never flagged.
MAIN_FIELDS: dict[str, tuple[str, ...]] = {
    "*": ("command", "file_path", "path", "url", "pattern", "query"),
    "Write": ("content",),
    "Edit": ("old_string", "new_string"),
    "MultiEdit": ("edits",),
}

for _table in (BEHAVIOUR_FIELDS, DESCRIPTIVE_FIELDS, MAIN_FIELDS):
    for _listed in _table.values():
        assert all(n and n.isidentifier() for n in _listed), _listed

BLANK_RUN = 3  # more consecutive blank lines than this are collapsed into a mark
SPACE_RUN = 16  # more consecutive spaces or tabs than this are collapsed into a mark

_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BLANK_LINES = re.compile(rf"(?:[ \t]*\n){{{BLANK_RUN + 2},}}")
_SPACES = re.compile(rf"[ \t]{{{SPACE_RUN + 1},}}")


@dataclass(frozen=True)
class Shown:
    """A text made safe to read: `text` holds only visible marks for what was hidden."""

    text: str
    bidi: bool = False
    controls: bool = False
    hidden_tail: bool = False

    @property
    def marked(self) -> bool:
        return self.bidi or self.controls or self.hidden_tail

    @property
    def warnings(self) -> list[str]:
        found = []
        if self.bidi:
            found.append("holds right-to-left / bidi controls (shown as ⟦U+…⟧)")
        if self.controls:
            found.append("holds control or invisible characters (shown as ⟦U+…⟧)")
        if self.hidden_tail:
            found.append("holds a long blank run that would hide what follows (collapsed)")
        return found


def _hidden(char: str) -> bool:
    if char in "\n\t":
        return False
    category = unicodedata.category(char)
    # Cc control, Cf format (zero-width, bidi), Co private use, Cs surrogate, Zl/Zp separators
    return category in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp", "Cn")


def neutralise(text: str) -> Shown:
    """Visible marks for bidi, control and invisible characters and for long blank runs."""
    bidi = controls = tail = False
    out: list[str] = []
    for char in text:
        if char in _BIDI:
            bidi = True
            out.append(f"⟦U+{ord(char):04X}⟧")
        elif _hidden(char):
            controls = True
            out.append(f"⟦U+{ord(char):04X}⟧")
        elif char != " " and unicodedata.category(char) == "Zs":
            controls = True  # a space that is not a space (no-break, em, ideographic, …)
            out.append(f"⟦U+{ord(char):04X}⟧")
        else:
            out.append(char)
    result = "".join(out)

    def lines(match: re.Match[str]) -> str:
        nonlocal tail
        tail = True
        return f"\n⟦{match.group(0).count(chr(10)) - 1} blank lines⟧\n"

    def spaces(match: re.Match[str]) -> str:
        nonlocal tail
        tail = True
        return f" ⟦{len(match.group(0))} spaces⟧ "

    result = _BLANK_LINES.sub(lines, result)
    result = _SPACES.sub(spaces, result)
    if result != result.rstrip() and len(result) - len(result.rstrip()) > BLANK_RUN:
        tail = True
        result = result.rstrip() + " ⟦trailing blank run⟧"
    return Shown(result, bidi=bidi, controls=controls, hidden_tail=tail)


@dataclass(frozen=True)
class Field:
    name: Shown
    value: Shown
    kind: str  # main | behaviour | descriptive | unknown
    note: str = ""

    @property
    def flagged(self) -> bool:
        return self.kind in ("behaviour", "unknown") or self.name.marked or self.value.marked


def _names(table: dict[str, tuple[str, ...]], tool: str) -> set[str]:
    return set(table.get("*", ())) | set(table.get(tool, ()))


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, indent=1)


def fields_of(tool: str, input_json: str) -> list[Field]:
    """Every field of the canonical input: main arguments first, then the rest in canonical
    order, each classified."""
    try:
        value = json.loads(input_json)
    except ValueError:
        return [Field(neutralise("(input)"), neutralise(input_json), "unknown", "not JSON")]
    if not isinstance(value, dict):
        return [Field(neutralise("(input)"), neutralise(_value_text(value)), "unknown")]
    main, behaviour, descriptive = (
        _names(MAIN_FIELDS, tool),
        _names(BEHAVIOUR_FIELDS, tool),
        _names(DESCRIPTIVE_FIELDS, tool),
    )
    found: list[Field] = []
    for name, item in value.items():  # canonical JSON: keys already sorted
        if name in behaviour:
            kind, note = "behaviour", "changes how the tool runs"
        elif name in main:
            kind, note = "main", ""
        elif name in descriptive:
            kind, note = "descriptive", "the agent's own words; does not change what runs"
        else:
            kind, note = "unknown", "a field askgate does not know: it may change what runs"
        found.append(Field(neutralise(name), neutralise(_value_text(item)), kind, note))
    found.sort(key=lambda f: f.kind != "main")  # stable: canonical order within each group
    return found


@dataclass(frozen=True)
class Reported:
    """What the asking process said about itself: shown, labelled, never trusted."""

    label: str
    value: Shown


@dataclass(frozen=True)
class Card:
    tool: Shown
    fields: list[Field]
    reported: list[Reported] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        found: list[str] = []
        for f in self.fields:
            for w in (*f.name.warnings, *f.value.warnings):
                found.append(f"{f.name.text}: {w}")
            if f.kind == "behaviour":
                found.append(f"{f.name.text} is set: {f.note}")
            elif f.kind == "unknown":
                found.append(f"{f.name.text}: {f.note}")
        return found


def card_of(
    tool: str,
    input_json: str,
    *,
    agent: str | None,
    cwd: str | None,
    session: str | None,
    rule: str | None,
) -> Card:
    reported = [
        Reported(label, neutralise(value))
        for label, value in (
            ("asked by rule", rule),
            ("agent", agent),
            ("working directory", cwd),
            ("session", session),
        )
        if value
    ]
    return Card(tool=neutralise(tool), fields=fields_of(tool, input_json), reported=reported)


def plain_text(card: Card) -> str:
    """The card as text (the ntfy message body): every field, flags first."""
    lines = [f"⚠ {w}" for w in card.warnings]
    for f in card.fields:
        mark = "⚠ " if f.flagged else ""
        if f.kind == "main" and f.name.text == "command":
            lines.append(f"{mark}$ {f.value.text}")
        elif f.kind == "main" and "\n" not in f.value.text:
            lines.append(f"{mark}{f.name.text}: {f.value.text}")
        else:
            lines.append(f"{mark}{f.name.text}:\n{f.value.text}")
    return "\n".join(lines)


def reported_text(card: Card) -> str:
    return "\n".join(f"{r.label} (reported): {r.value.text}" for r in card.reported)

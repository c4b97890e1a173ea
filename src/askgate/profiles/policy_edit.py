"""Add `pattern = "allow"` rules to a policy file without disturbing what is there.

TOML has no append: a rule belongs under its surface's table header. The new lines go
right after an existing `[surface]` header, or under a new one at the end; the result is
parsed with the strict parser before it replaces the file (atomically), so a file this
writes always loads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.cli_support import write_atomically
from askgate.policy.model import Origin, Surface


class PolicyEditError(Exception):
    pass


def _header(surface: Surface) -> re.Pattern[str]:
    name = re.escape(surface.value)
    return re.compile(rf'^\s*\[\s*(?:{name}|"{name}")\s*\]\s*(?:#.*)?$')


def _quoted(pattern: str) -> str:
    return '"' + pattern.replace("\\", "\\\\").replace('"', '\\"') + '"'


def with_rules(text: str, rules: Sequence[tuple[Surface, str]]) -> tuple[str, int]:
    """`text` with each (surface, pattern) added as an allow rule; already present ones
    (same surface, same quoted key) are skipped. Returns the new text and how many were
    added."""
    lines = text.splitlines()
    added = 0
    for surface, pattern in rules:
        entry = f'{_quoted(pattern)} = "allow"  # added by askgate suggest'
        key = _quoted(pattern) + " ="
        header = _header(surface)
        at = next((i for i, line in enumerate(lines) if header.match(line)), None)
        if at is None:
            lines += ["", f"[{surface.value}]", entry]
            added += 1
            continue
        section_end = next(
            (i for i in range(at + 1, len(lines)) if lines[i].lstrip().startswith("[")),
            len(lines),
        )
        if any(line.strip().startswith(key) for line in lines[at + 1 : section_end]):
            continue
        lines.insert(at + 1, entry)
        added += 1
    return "\n".join(lines) + "\n", added


def add_rules(path: str, rules: Sequence[tuple[Surface, str]]) -> int:
    from askgate.policy.policy_file import ConfigError, parse_policy_text

    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyEditError(f"cannot read {path}: {error}") from None
    new_text, added = with_rules(text, rules)
    if not added:
        return 0
    try:
        parse_policy_text(
            new_text, path=path, origin=Origin.USER, rank_base=0, trusted=True, base_dir="/"
        )
    except ConfigError as error:
        raise PolicyEditError(f"not written, the result would not load: {error}") from None
    write_atomically(path, new_text)
    return added

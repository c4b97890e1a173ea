"""`askgate import codex [FILE.rules…] [-o FILE]`: Codex's execpolicy rules as an askgate
policy file that decides the same way.

Codex reads `rules/*.rules` next to each config layer (`~/.codex/rules/`, a trusted
project's `.codex/rules/`): Starlark calls, of which this reads exactly the literal ones
(parsed as Python syntax, never run):

| Codex                                            | askgate                                  |
|--------------------------------------------------|------------------------------------------|
| `prefix_rule(pattern=["git", "status"])`         | `[bash] "git status *" = "allow"`        |
| `pattern=["git", ["push", "fetch"]]`             | one rule per alternative                 |
| `decision = "prompt"` / `"forbidden"`            | `"ask"` / `"deny"` (reason: justification) |
| `host_executable(name, paths)`                   | nothing (a path command: its basename)   |

Codex applies the strictest of the rules that match (forbidden > prompt > allow); askgate
lets a narrower rule override a wider one. So a rule nested inside a stricter one (`allow
["git", "status"]` under `forbidden ["git"]`) is left out and listed. The file selects the
read-only profile: Codex runs its known-safe commands (`ls`, `cat`, `git status`, …)
without asking.

Not expressible (listed, never guessed): any statement but a literal `prefix_rule` or
`host_executable` call (variables, loops, functions), a token holding a space or a glob
character (`*`, `?`), more than 64 alternatives, network rules.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
from collections.abc import Sequence
from typing import Any

from askgate.importers.common import (
    STRICTNESS,
    Conversion,
    Converted,
    ImportError_,
    Skipped,
    drop_shadowed,
    read_text,
    run_import,
)

DECISIONS = {"allow": "allow", "prompt": "ask", "forbidden": "deny"}
MAX_ALTERNATIVES = 64


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError("not a literal") from None


def _token_alternatives(pattern: Any) -> list[list[str]] | str:
    """Each token as its list of alternatives, or why the pattern cannot be converted."""
    if not isinstance(pattern, list) or not pattern:
        return "pattern must be a non-empty list of tokens"
    out: list[list[str]] = []
    for token in pattern:
        choices = token if isinstance(token, list) else [token]
        if not choices or not all(isinstance(c, str) and c for c in choices):
            return "a token must be a non-empty string or a list of them"
        for choice in choices:
            if any(ch in choice for ch in " \t*?\n"):
                return f"token {choice!r} holds a space or a glob character"
        out.append(list(choices))
    return out


def convert_call(call: ast.Call, source: str, text: str) -> list[Converted] | Skipped | None:
    name = call.func.id if isinstance(call.func, ast.Name) else None

    def skip(reason: str) -> Skipped:
        return Skipped(text, "rule", source, reason)

    if name == "host_executable":
        return None  # askgate matches `/usr/bin/git` by its basename already
    if name != "prefix_rule":
        return skip(f"{name or 'this call'} is not a rule askgate can read")
    if call.args:
        return skip("positional arguments (prefix_rule takes keywords)")
    try:
        fields = {kw.arg: _literal(kw.value) for kw in call.keywords if kw.arg}
    except ValueError:
        return skip("an argument is not a literal (askgate never runs rule files)")
    decision = fields.get("decision", "allow")
    if decision not in DECISIONS:
        return skip(f"unknown decision {decision!r}")
    tokens = _token_alternatives(fields.get("pattern"))
    if isinstance(tokens, str):
        return skip(tokens)
    combinations = 1
    for choices in tokens:
        combinations *= len(choices)
    if combinations > MAX_ALTERNATIVES:
        return skip(f"more than {MAX_ALTERNATIVES} alternatives")
    action = DECISIONS[decision]
    justification = fields.get("justification")
    shown = json.dumps(fields.get("pattern"), ensure_ascii=False)
    rule_text = f"prefix_rule {shown} {decision}"
    if isinstance(justification, str) and justification:
        rule_text += f": {justification}"
    return [
        Converted("bash", " ".join(words) + " *", action, rule_text, source)
        for words in itertools.product(*tokens)
    ]


def convert_text(conversion: Conversion, content: str, source: str) -> None:
    conversion.sources.append(source)
    try:
        tree = ast.parse(content, filename=source)
    except SyntaxError as error:
        raise ImportError_(f"{source}:{error.lineno}: not a rules file ({error.msg})") from None
    for statement in tree.body:
        text = " ".join(ast.get_source_segment(content, statement).split())  # type: ignore[union-attr]
        text = text if len(text) <= 200 else text[:200] + "…"
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not isinstance(call, ast.Call):
            conversion.skipped.append(
                Skipped(text, "statement", f"{source}:{statement.lineno}", "not a rule call")
            )
            continue
        conversion.add(convert_call(call, f"{source}:{statement.lineno}", text))


def convert_files(paths: Sequence[str]) -> Conversion:
    conversion = Conversion(
        profiles_why="Codex's known-safe commands (ls, cat, git status, …) ask nothing",
        rule_prefix="Codex ",
    )
    for path in paths:
        convert_text(conversion, read_text(path), path)
    rules = conversion.rules
    drop_shadowed(
        conversion,
        lambda j, i: STRICTNESS[rules[j].action] > STRICTNESS[rules[i].action],
        lambda winner: f"Codex's stricter {winner.rule} always applies too (strictest wins)",
    )
    return conversion


def default_files(cwd: str) -> list[str]:
    from askgate.policy.config import find_project_root

    codex_home = os.environ.get("CODEX_HOME", "")
    home = codex_home if codex_home.startswith("/") else os.path.expanduser("~/.codex")
    found: list[str] = []
    for directory in (
        os.path.join(home, "rules"),
        os.path.join(find_project_root(cwd), ".codex", "rules"),
    ):
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            continue
        found += [os.path.join(directory, n) for n in names if n.endswith(".rules")]
    return found


def main(argv: Sequence[str]) -> int:
    return run_import(
        argv,
        agent="codex",
        title="Codex execpolicy rules",
        defaults=default_files,
        convert=lambda paths: convert_files(paths),
        help_files=".rules files (default: ~/.codex/rules/*.rules, then the project's)",
    )

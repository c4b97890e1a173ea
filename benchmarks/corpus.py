"""Deterministic inputs: rule sets, their Cedar and Casbin equivalents, and queries.

Rule sets are plain `(pattern, action)` pairs so the peers can be measured even
when askgate's engine cannot be imported. Every generator is seeded.

Equivalence (also stated in docs/performance.md):
- askgate `allow` -> Cedar `permit` / Casbin `allow`; `deny` -> `forbid` / `deny`.
- askgate `ask` has no counterpart in either peer; an ask rule becomes no policy,
  and the peers' "nothing permits" answer is read as ask. A peer answer is read as
  deny only when a forbid/deny rule matched.
- The generated sets contain no allow nested inside a deny (an exception), which
  neither peer can express: Cedar's forbid always wins, so does Casbin's deny.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence

RuleSpec = tuple[str, str]  # (pattern, action) with action in allow | ask | deny

SEED = 20240611

# --- MCP (non-bash) rule sets -------------------------------------------------------------

BROAD_MCP_RULES: tuple[RuleSpec, ...] = (
    ("*", "ask"),
    ("*:delete_*", "deny"),
    ("*:admin_*", "ask"),
)


def mcp_rules(total: int, seed: int = SEED) -> list[RuleSpec]:
    """`total` rules: a few broad ones plus `server_{i}:tool_*`, about 10 % of them deny."""
    rng = random.Random(seed + total)
    specific = total - len(BROAD_MCP_RULES)
    rules = [
        (f"server_{i}:tool_*", "deny" if rng.random() < 0.1 else "allow") for i in range(specific)
    ]
    return [*BROAD_MCP_RULES, *rules]


def mcp_pools(total_rules: int, warm: int, seed: int = SEED) -> tuple[list[int], list[int]]:
    """Two disjoint, seeded sets of specific-rule indices: `warm` rules that the
    steady-state rows hit again and again, and the rest, each hit at most once by the
    first-hit rows (so any per-rule cache is cold for every one of those samples)."""
    rng = random.Random(seed * 7 + total_rules)
    indices = list(range(total_rules - len(BROAD_MCP_RULES)))
    rng.shuffle(indices)
    warm = min(warm, len(indices) // 2)
    return indices[:warm], indices[warm:]


def mcp_queries(pool: list[int], count: int, tag: str) -> list[str]:
    """`count` distinct values cycling through `pool`; each hits one specific rule
    plus the broad `*`. No value repeats, so a per-value cache cannot help."""
    return [f"server_{pool[k % len(pool)]}:tool_{tag}{k}" for k in range(count)]


def mcp_probes(total_rules: int) -> list[str]:
    """Values covering every kind of answer (most telling first), for the equivalence check."""
    specific = mcp_rules(total_rules)[len(BROAD_MCP_RULES) :]
    first_deny = next(i for i, (_, a) in enumerate(specific) if a == "deny")
    first_allow = next(i for i, (_, a) in enumerate(specific) if a == "allow")
    return [
        f"server_{first_allow}:tool_read",
        f"server_{first_deny}:tool_write",
        "server_1:delete_repo",
        "unknown:thing",
        "server_2:admin_users",
        f"server_{len(specific) - 1}:tool_x",
        *(f"server_{i}:tool_p" for i in range(0, len(specific), max(1, len(specific) // 20))),
    ]


# --- bash rule set and commands ---------------------------------------------------------------

_BASH_NAMED: tuple[RuleSpec, ...] = (
    ("git status *", "allow"),
    ("git diff *", "allow"),
    ("git log *", "allow"),
    ("git show *", "allow"),
    ("git branch *", "allow"),
    ("git rev-parse *", "allow"),
    ("git add *", "allow"),
    ("git commit *", "ask"),
    ("git push *", "ask"),
    ("git push --force *", "deny"),
    ("git reset --hard *", "deny"),
    ("ls *", "allow"),
    ("cat *", "allow"),
    ("head *", "allow"),
    ("tail *", "allow"),
    ("grep *", "allow"),
    ("wc *", "allow"),
    ("sort *", "allow"),
    ("uniq *", "allow"),
    ("cut *", "allow"),
    ("echo *", "allow"),
    ("pwd", "allow"),
    ("cd *", "allow"),
    ("mkdir *", "allow"),
    ("touch *", "allow"),
    ("diff *", "allow"),
    ("python -m pytest *", "allow"),
    ("pytest *", "allow"),
    ("ruff *", "allow"),
    ("make *", "ask"),
    ("rm *", "ask"),
    ("rm -rf *", "deny"),
    ("curl *", "ask"),
    ("wget *", "ask"),
    ("pip install *", "ask"),
    ("npm install *", "ask"),
    ("docker *", "ask"),
    ("sudo *", "deny"),
    ("chmod *", "ask"),
    ("* --no-verify *", "deny"),
)

BASH_RULE_COUNT = 100


def bash_rules(total: int = BASH_RULE_COUNT) -> list[RuleSpec]:
    """Everyday command rules, padded with distinct tool rules to `total`."""
    filler = [(f"tool{i} run *", "allow") for i in range(total - len(_BASH_NAMED))]
    return [*_BASH_NAMED, *filler]


def typical_command(i: int) -> tuple[str, tuple[str, ...]]:
    """The everyday 3-unit command; `i` varies one argument so no two samples repeat."""
    return (
        f"git status && git diff | head -n {i + 1}",
        ("git status", "git diff", f"head -n {i + 1}"),
    )


# (unit as written, unit as matched, operator after it). Units are written without
# quoting tricks except where the matched form is obvious, so the peers can be given
# the same units askgate finds. "{i}" varies per sample. No unit writes a file or
# names a path outside the project: askgate checks those against `write` and
# `external_directory` rules, which the peers have no way to model.
_LONG_PARTS: tuple[tuple[str, str, str], ...] = (
    ("cd src", "cd src", "&&"),
    ("ls -la", "ls -la", "&&"),
    ("git status --short", "git status --short", "&&"),
    ("git diff --stat HEAD", "git diff --stat HEAD", "|"),
    ("head -n 20", "head -n 20", "&&"),
    ('grep -rn "def main" app.py', "grep -rn def main app.py", "|"),
    ("wc -l", "wc -l", ";"),
    ("git log --oneline -n 5", "git log --oneline -n 5", "|"),
    ("cat", "cat", "&&"),
    ("git show --stat HEAD", "git show --stat HEAD", "|"),
    ("tail -n {i}", "tail -n {i}", "&&"),
    ("git branch --list", "git branch --list", ";"),
    ("ls ../docs", "ls ../docs", "&&"),
    ("cat ../README.md", "cat ../README.md", "|"),
    ("grep -n askgate", "grep -n askgate", "|"),
    ("sort", "sort", "|"),
    ("uniq -c", "uniq -c", "&&"),
    ("python -m pytest -q tests/test_a.py", "python -m pytest -q tests/test_a.py", "&&"),
    ("ruff check app.py", "ruff check app.py", ";"),
    ("git diff --name-only HEAD~1", "git diff --name-only HEAD~1", "|"),
    ("cut -d : -f 1", "cut -d : -f 1", "|"),
    ("sort -u", "sort -u", "&&"),
    ("ls build", "ls build", "&&"),
    ("wc -c app.py", "wc -c app.py", "&&"),
    ("echo building", "echo building", ";"),
    ("diff app.py app.py", "diff app.py app.py", "&&"),
    ("tool7 run --fast", "tool7 run --fast", "&&"),
    ("tool42 run --all", "tool42 run --all", "&&"),
    ("git rev-parse --short HEAD", "git rev-parse --short HEAD", ";"),
    ("pwd", "pwd", ""),
)


def long_command(i: int) -> tuple[str, tuple[str, ...]]:
    """A 30-unit, ~530-character command of the kind an agent chains together."""
    n = str(i + 1)
    text = " ".join(f"{w.replace('{i}', n)} {op}".rstrip() for w, _, op in _LONG_PARTS)
    return text, tuple(m.replace("{i}", n) for _, m, _ in _LONG_PARTS)


# --- translations --------------------------------------------------------------------------


def _cedar_string(text: str) -> str:
    return json.dumps(text)  # Cedar string literals accept JSON escapes for \" and \\


def _cedar_like(pattern: str) -> str:
    # Our patterns only use `*`; a literal `*` or `?` would need escaping, which
    # the generated sets never contain.
    if "?" in pattern:
        raise ValueError(f"no Cedar equivalent generated for {pattern!r}")
    return _cedar_string(pattern)


def _cedar_condition(pattern: str) -> str:
    cond = f"context.value like {_cedar_like(pattern)}"
    if pattern.endswith(" *"):
        # askgate: a trailing " *" is optional (`git status *` matches `git status`).
        cond = f"context.value like {_cedar_like(pattern[:-2])} || {cond}"
    return cond


def cedar_policies(rules: Sequence[RuleSpec]) -> str:
    """One Cedar policy per allow/deny rule; ask rules have no Cedar form."""
    out = []
    for pattern, action in rules:
        if action == "ask":
            continue
        effect = "permit" if action == "allow" else "forbid"
        out.append(f"{effect}(principal, action, resource) when {{ {_cedar_condition(pattern)} }};")
    return "\n".join(out) + "\n"


def cedar_request(value: str) -> dict[str, object]:
    return {
        "principal": {"type": "Agent", "id": "agent"},
        "action": {"type": "Action", "id": "call"},
        "resource": {"type": "Tool", "id": "tool"},
        "context": {"value": value},
    }


CASBIN_MODEL = """\
[request_definition]
r = obj

[policy_definition]
p = obj, eft

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = {matcher}(r.obj, p.obj)
"""


def wildcard_regex(pattern: str) -> str:
    """askgate wildcard -> anchored regex (for Casbin's regexMatch)."""
    optional_tail = pattern.endswith(" *")
    body = pattern[:-2] if optional_tail else pattern
    out = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in body)
    return "^" + out + ("( .*)?" if optional_tail else "") + "$"


def casbin_policies(rules: Sequence[RuleSpec], *, regex: bool) -> list[list[str]]:
    """Casbin `p` lines; ask rules have no Casbin form (no match = not allowed = ask)."""
    return [[wildcard_regex(p) if regex else p, action] for p, action in rules if action != "ask"]


def toml_policy(rules: Sequence[RuleSpec], surface: str, default: str = "ask") -> str:
    lines = [f"default = {json.dumps(default)}", "", f"[{surface}]"]
    lines += [f"{json.dumps(p)} = {json.dumps(a)}" for p, a in rules]
    return "\n".join(lines) + "\n"

"""What a jq program can reach besides the files named on its command line.

jq's language is not only a filter: `import "PATH" as $x;` reads `PATH.json`,
`include "PATH";` and `import "PATH" as x;` read `PATH.jq` — relative to the working
directory, `-L DIR` and `~/.jq`, `..` allowed (`import "../../.docker/config" as $c`
prints the Docker registry token) — and `env`, `$ENV` (gojq, jaq too) print the
environment, secrets included. mikefarah's yq adds `load("file")`, `load_str`, `strenv`,
`env()` and `envsubst`. A program read from a file (`-f FILE`, `--from-file`) cannot be
seen here. Each of these floors the unit to ask: the analysis does not model them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.words import Word

JQ_NAMES = frozenset({"jq", "gojq", "jaq", "yq"})

# `.env` (a field) and `"env"` (a string) are data; `env`, `env.X`, `$ENV` are not.
_REACHES = lazy_compile(
    r"\b(?:import|include|modulemeta|get_search_list)\b|(?<![.\w$\"])env\b|\$ENV\b|"
    r"\b(?:load|load_str|load_xml|load_props|load_base64|strenv|envsubst)\b"
)
# Options whose value is not the filter (jq 1.7, gojq, kislyuk's and mikefarah's yq).
_VALUED = frozenset({"--indent", "--output-format", "-o", "--input-format", "-p", "-I"})
_PAIRED = frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile"})
_LIBRARY = re.compile(r"^(?:-L.*|--library-path(?:=.*)?)$")
_FROM_FILE = re.compile(r"^(?:--from-file(?:=.*)?|-[a-zA-Z]*f[a-zA-Z]*)$")


def jq_floor(name: str, args: Sequence[Word]) -> str | None:
    """Why this jq-like command may read files or variables it does not name, or None."""
    words = list(args)
    if name == "yq" and words and words[0].text in ("e", "eval", "ea", "eval-all"):
        words = words[1:]
    index = 0
    while index < len(words):
        text = words[index].text
        if text in ("--args", "--jsonargs", "--"):
            break
        if _LIBRARY.match(text):
            return f"{name} {text} loads modules from a directory"
        if text in _PAIRED:
            index += 3
            continue
        if text in _VALUED:
            index += 2
            continue
        if text.startswith("-") and text != "-":
            if _FROM_FILE.match(text):
                return f"{name} {text} runs a program from a file, which may read any file"
            index += 1
            continue
        # The first operand is the filter.
        if not words[index].static or _REACHES.search(text):
            return (
                f"the {name} program may read other files or the environment "
                "(import, include, env, $ENV)"
            )
        return None
    return None

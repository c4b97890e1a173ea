"""git's global options: stripped from the primary form so `git -C /x push` is `git push`."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.shell.words import Word

_FLAG_OPTIONS = frozenset(
    {
        "--no-pager", "-P", "-p", "--paginate", "--bare", "--no-replace-objects",
        "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
        "--no-optional-locks", "--no-lazy-fetch", "--no-advice", "--html-path", "--man-path",
        "--info-path", "--version", "--help", "--exec-path",
    }
)  # fmt: skip
_PATH_OPTIONS = frozenset({"--git-dir", "--work-tree"})
_VALUE_OPTIONS = frozenset({"--namespace", "--super-prefix", "--attr-source", "--list-cmds"})
# Subcommand options that name a program to run (or hooks/config that will run later).
_PROGRAM_OPTIONS: dict[str, tuple[str, ...]] = {
    "clone": ("--upload-pack", "-u", "--config", "-c", "--template"),
    "fetch": ("--upload-pack",),
    "pull": ("--upload-pack",),
    "ls-remote": ("--upload-pack", "-u"),
    "push": ("--receive-pack", "--exec"),
    "archive": ("--exec",),
    "init": ("--template",),
}


def _runs_program(option: str, word: str) -> bool:
    if option.startswith("--"):
        return word == option or word.startswith(option + "=")
    return word == option or (word.startswith(option) and len(word) > 2)  # -u, -uPROG


class GitForm:
    """git with its global options removed, and what those options did."""

    __slots__ = ("argv", "cwd", "floors", "reads", "stripped")

    def __init__(self) -> None:
        self.argv: list[Word] = []
        self.cwd: list[Word] = []
        self.reads: list[str] = []
        self.floors: list[str] = []
        self.stripped = False


def normalise(argv: Sequence[Word]) -> GitForm:
    form = GitForm()
    i, n = 1, len(argv)
    while i < n:
        text = argv[i].text
        if not text.startswith("-"):
            break  # the subcommand: every global option starts with `-`
        name, eq, value = text.partition("=")
        if text == "-C" and i + 1 < n:
            form.cwd.append(argv[i + 1])
            form.reads.append(argv[i + 1].text)
            i += 2
        elif text == "-c" or name == "--config-env":
            shown = argv[i + 1].text if text == "-c" and i + 1 < n else value
            form.floors.append(
                f"git {text.split('=')[0]} {shown} changes configuration that can run commands"
            )
            i += 2 if (text == "-c" or not eq) else 1
        elif name == "--exec-path" and eq:
            form.floors.append("git --exec-path= runs git commands from another directory")
            i += 1
        elif name in _PATH_OPTIONS:
            path = value if eq else (argv[i + 1].text if i + 1 < n else "")
            form.reads.append(path)
            i += 1 if eq else 2
        elif name in _VALUE_OPTIONS:
            i += 1 if eq else 2
        elif text in _FLAG_OPTIONS:
            i += 1
        else:
            break
    form.stripped = i > 1
    form.argv = [argv[0], *argv[i:]]
    rest = argv[i:]
    options = _PROGRAM_OPTIONS.get(rest[0].text, ()) if rest else ()
    for word in rest[1:] if options else ():
        if word.text == "--":
            break
        if any(_runs_program(option, word.text) for option in options):
            form.floors.append(f"git {rest[0].text} {word.text} runs another program")
            break
    for word in rest:
        if word.text.startswith("ext::") or "::ext::" in word.text:
            form.floors.append("git ext:: transport runs a command")
            break
    return form

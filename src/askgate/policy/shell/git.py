"""git's global options: stripped from the primary form so `git -C /x push` is `git push`."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
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
    "grep": ("-O", "--open-files-in-pager"),
    "difftool": ("-x", "--extcmd"),
    "rebase": ("-x", "--exec"),
    "send-email": ("--smtp-server", "--sendmail-cmd", "--to-cmd", "--cc-cmd", "--header-cmd"),
}
# Subcommands (and their first word) whose arguments are commands to run.
_RUNS_COMMANDS = {("bisect", "run"), ("submodule", "foreach"), ("filter-branch", None)}
# Configuration keys whose value git (or a tool it starts) runs or loads.
_EXEC_KEY = lazy_compile(
    r"^(?:alias|pager|filter|include|includeif|credential|guitool|browser|man|difftool|"
    r"mergetool|instaweb|sendemail)\.|^core\.(?:pager|editor|sshcommand|fsmonitor|hookspath|"
    r"askpass|gitproxy|alternaterefscommand|worktree)$|^(?:diff\.external|sequence\.editor|"
    r"init\.templatedir|uploadpack\.packobjectshook|protocol\.allow)$|"
    r"\.(?:textconv|command|cmd|driver|program|helper|path|uploadpack|receivepack|allow)$|"
    # Any key naming a command (`gpg.ssh.defaultKeyCommand`), tunnels, diff filters,
    # submodule update commands, the sequence editor.
    r"command$|\.tunnel$|^interactive\.difffilter$|^submodule\..*\.update$|"
    r"^core\.(?:attributesfile|excludesfile)$|^gpg\.|^credential\b|"
    # Keys that redirect where fetches and pushes go, or what they trust and send
    # (`url.X.insteadOf`, `remote.origin.pushurl`, `http.proxy`, `http.extraHeader`,
    # `submodule.x.url`, `lfs.url`), hooks and traces named in configuration, and
    # `safe.directory` (it lets git read the configuration of a repository it distrusts).
    r"^(?:url|remote|https?|submodule|lfs|hook|trace2|safe|ssh)\.|"
    r"^branch\..*\.(?:remote|pushremote)$|^web\.browser$|\.template$"
)
# `git config` reading, not setting (`--get`, `-l`, git 2.46's `get`, `list`).
_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
     "-l", "--list", "get", "list"}
)  # fmt: skip
_CONFIG_WRITES = frozenset(
    {"--add", "--replace-all", "--unset", "--unset-all", "--rename-section", "--remove-section",
     "set", "unset", "rename-section", "remove-section"}
)  # fmt: skip
# `git remote` subcommands that change where an existing remote points.
_REMOTE_REDIRECTS = frozenset({"set-url", "rename", "remove", "rm"})


def _runs_program(option: str, word: str) -> bool:
    if option.startswith("--"):
        # git takes any unambiguous prefix of a long option (`--upload-p=x`).
        name = word.split("=", 1)[0]
        return len(name) > 2 and option.startswith(name)
    if word.startswith("--") or not word.startswith("-"):
        return False
    return option[1] in word[1:]  # -u, -uPROG, or inside a cluster (`-ix CMD`)


class GitForm:
    """git with its global options removed, and what those options did."""

    __slots__ = (
        "argv", "cwd", "floors", "reads", "recursive", "recursive_writes", "stripped", "writes",
    )  # fmt: skip

    def __init__(self) -> None:
        self.writes: list[str] = []  # `git init [DIR]`: the repository it creates
        self.recursive: list[str] = []  # trees read whole (git archive, git grep)
        self.recursive_writes: list[str] = []  # git apply, git format-patch -o D
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
    _subcommand_floors(rest, form)
    _object_paths(rest, form)
    return form


def _subcommand_floors(rest: Sequence[Word], form: GitForm) -> None:
    """Subcommands and options that make git run a program or send elsewhere."""
    options = _PROGRAM_OPTIONS.get(rest[0].text, ()) if rest else ()
    for word in rest[1:] if options else ():
        if word.text == "--":
            break
        if any(_runs_program(option, word.text) for option in options):
            form.floors.append(f"git {rest[0].text} {word.text} runs another program")
            break
    if rest and (
        (rest[0].text, None) in _RUNS_COMMANDS
        or (len(rest) > 1 and (rest[0].text, rest[1].text) in _RUNS_COMMANDS)
    ):
        form.floors.append(f"git {rest[0].text} runs commands given as arguments")
    if rest and rest[0].text == "config":
        _config(rest, form)
    elif len(rest) > 1 and rest[1].text in _REMOTE_REDIRECTS and rest[0].text == "remote":
        form.floors.append(f"git remote {rest[1].text} changes where fetches and pushes go")
    elif len(rest) > 1 and rest[0].text == "submodule" and rest[1].text == "set-url":
        form.floors.append("git submodule set-url changes where a submodule is fetched from")
    for word in rest:
        if word.text.startswith("ext::") or "::ext::" in word.text:
            form.floors.append("git ext:: transport runs a command")
            break


def _config(rest: Sequence[Word], form: GitForm) -> None:
    """`git config` setting a key whose value git runs, loads or sends to (`alias.*`,
    `core.pager`, `url.X.insteadOf`, `remote.*.url`, `http.proxy` …), and `git config
    --edit` (an editor on git's configuration: anything may be written there)."""
    texts = [w.text for w in rest[1:]]
    operands = [t for t in texts if not t.startswith("-")]
    options = {t.partition("=")[0] for t in texts if t.startswith("-")}
    sub = operands[0] if operands else ""
    if (
        "--edit" in options
        or sub == "edit"
        or any(o[1:2] != "-" and "e" in o[1:] for o in options if o.startswith("-"))
    ):
        form.floors.append("git config --edit opens git's configuration in an editor")
        return
    if options & _CONFIG_READS or sub in _CONFIG_READS:
        return
    setting = len(operands) > 1 or bool(options & _CONFIG_WRITES) or sub in _CONFIG_WRITES
    if setting and any(_EXEC_KEY.search(o.lower()) for o in operands):
        form.floors.append("git config sets a key whose value git runs, loads or sends to")


def reordered(argv: Sequence[Word]) -> list[str]:
    """Other spellings of `git SUB …` for deny rules: options first, and a `+ref` push as
    `--force`, so a deny on `git push --force *` sees `git push origin main --force` and
    `git push origin +main`. (Alternates only ever make a unit stricter.)"""
    if len(argv) < 3:
        return []
    head, rest = [w.text for w in argv[:2]], argv[2:]
    if "--" in [w.text for w in rest]:
        return []
    options = [w.text for w in rest if w.text.startswith("-")]
    operands = [w.text for w in rest if not w.text.startswith("-")]
    forms = []
    if options and operands and rest[0].text != options[0]:
        forms.append(" ".join([*head, *options, *operands]))
    if (head[1], rest[0].text) in _RUNS_COMMANDS:  # bisect run CMD, submodule foreach CMD
        forms.append(" ".join(w.text for w in rest[1:] if w.text != "--recursive"))
    if head[1] == "push" and any(o.startswith("+") for o in operands):
        bare = [o.removeprefix("+") for o in operands]
        forms.append(" ".join([*head, "--force", *options, *bare]))
    return forms


# `:0:.env` (a path in the index, stage 0-3), `HEAD:.env`, `v1.2:dir/.env` (in a commit).
_OBJECT_PATH = lazy_compile(r"^(?::[0-3]?:|:(?=[^/:])|[^:\s/][^:\s]*:)(?!/)(.+)$")
# Subcommands that read every file of a tree or of the index.
_WHOLE_TREE = frozenset({"archive", "grep", "bundle", "fast-export"})


def _object_paths(rest: Sequence[Word], form: GitForm) -> None:
    """Paths inside git objects are reads of those paths: `git show :0:.env`, `git
    cat-file -p HEAD:.env` print the file as committed or staged (the sandbox cannot
    hide a blob in .git/objects). `git archive`, `git grep` read the whole tree."""
    if not rest:
        return
    if rest[0].text in _WHOLE_TREE:
        form.recursive.append(".")
    form.recursive.extend(_staged_trees(rest))
    _patch_targets(rest, form)
    _listing_that_changes(rest, form)
    if rest[0].text == "init":
        # An implicit target: without a directory, git init writes .git in the cwd.
        operands = [w.text for w in rest[1:] if not w.text.startswith("-")]
        form.writes.append(f"{operands[-1] if operands else '.'}/.git")
    for word in rest[1:]:
        text = word.text
        if text.startswith("-") or "://" in text or "::" in text or word.dynamic is not None:
            continue
        match = _OBJECT_PATH.match(text)
        if match and not text.startswith(("http:", "https:", "ssh:", "git@")):
            form.reads.append(match.group(1))


def _staged_trees(rest: Sequence[Word]) -> list[str]:
    """`git add -A`, `git add .`, `git add DIR`, `git stash -u` copy the content of every
    file below a directory into .git/objects (where `git diff --cached` or `git log -p`
    print it): recursive reads. `git add -u` and `git stash` alone take tracked files."""
    sub = rest[0].text
    if sub == "diff" and any(w.text == "--no-index" for w in rest[1:]):
        # `git diff --no-index DIR1 DIR2` compares two trees on disk, printing both.
        return [w.text for w in rest[1:] if not w.text.startswith("-")]
    if sub not in ("add", "stash"):
        return []
    options = [w.text for w in rest[1:] if w.text.startswith("-") and w.text != "--"]
    operands = [w.text for w in rest[1:] if not w.text.startswith("-")]
    if sub == "stash":
        untracked = any(
            o in ("--include-untracked", "--all")
            or (not o.startswith("--") and ("u" in o or "a" in o))
            for o in options
        )
        return ["."] if untracked else []
    if operands:
        return [o for o in operands if not o.startswith(":")] or ["."]
    every = any(
        o in ("--all", "--no-ignore-removal") or (not o.startswith("--") and "A" in o)
        for o in options
    )
    return ["."] if every else []


def _option_value(rest: Sequence[Word], names: tuple[str, ...], short: str = "") -> list[str]:
    """The values of `--name=V`, `--name V` (and `-oV`, `-o V` for `short`)."""
    found: list[str] = []
    for index, word in enumerate(rest):
        text = word.text
        following = rest[index + 1].text if index + 1 < len(rest) else None
        name, eq, value = text.partition("=")
        if name in names:
            if eq:
                found.append(value)
            elif following is not None:
                found.append(following)
        elif short and text.startswith(short) and not text.startswith("--"):
            if len(text) > len(short):
                found.append(text[len(short) :])
            elif following is not None:
                found.append(following)
    return found


def _patch_targets(rest: Sequence[Word], form: GitForm) -> None:
    """Writers into directories the input chooses names in: `git apply` writes the files
    its patch names below the working tree (`--directory=D` below D), `git am` the same,
    `git format-patch -o D` writes D/0001-….patch; each directory is written with
    everything below it. `--unsafe-paths` lets the patch name paths outside the tree."""
    sub = rest[0].text
    if sub == "mv":
        # As mv: every source disappears (a write) and lands in the target (`git mv src
        # .claude` writes .claude/src; `git mv x CLAUDE.md` writes CLAUDE.md).
        operands = [w.text for w in rest[1:] if not w.text.startswith("-") and w.static]
        for source in operands[:-1]:
            form.writes.append(source)
            form.recursive_writes.append(source)
            if len(operands) > 1:
                landed = f"{operands[-1].rstrip('/')}/{source.rstrip('/').rpartition('/')[2]}"
                form.writes.append(landed)
                form.recursive_writes.append(landed)
        if operands:
            form.writes.append(operands[-1])
            form.recursive_writes.append(operands[-1])
        return
    if sub in ("apply", "am"):
        texts = [w.text for w in rest[1:]]
        if any(t.startswith("--unsafe") for t in texts):
            form.floors.append("git apply --unsafe-paths writes wherever the patch says")
        listing = any(t in ("--stat", "--numstat", "--summary", "--check") for t in texts)
        if not listing or "--apply" in texts:
            directories = _option_value(rest[1:], ("--directory",)) or ["."]
            form.writes.extend(directories)
            form.recursive_writes.extend(directories)
    elif sub == "format-patch":
        for directory in _option_value(rest[1:], ("--output-directory",), "-o"):
            form.writes.append(directory)
            form.recursive_writes.append(directory)


# `git branch -v *`, `git tag -l *` are listing rules (the read-only profile has them);
# git also accepts a changing option beside the listing one (`git branch -v -D main`).
_LISTING = {"branch": ("-v", "-vv", "--list", "-l", "-a", "-r", "--all", "--remotes",
                       "--show-current", "--verbose", "--contains", "--merged"),
            "tag": ("-l", "--list", "-n", "--contains", "--merged")}  # fmt: skip
_CHANGING = {
    "branch": frozenset("dDmMcCfu"),
    "tag": frozenset("dfasum"),
}
_CHANGING_LONG = ("--delete", "--move", "--copy", "--force", "--set-upstream-to",
                  "--unset-upstream", "--edit-description", "--track", "--annotate",
                  "--sign", "--message", "--file", "--local-user", "--create-reflog")  # fmt: skip


def _listing_that_changes(rest: Sequence[Word], form: GitForm) -> None:
    sub = rest[0].text
    if sub not in _LISTING:
        return
    options = [w.text for w in rest[1:] if w.text.startswith("-")]
    if not any(o.split("=")[0] in _LISTING[sub] for o in options):
        return
    for option in options:
        name = option.split("=")[0]
        changing = any(name == long or (len(name) > 3 and long.startswith(name))
                       for long in _CHANGING_LONG) if name.startswith("--") else bool(
            set(name[1:]) & _CHANGING[sub])  # fmt: skip
        if changing:
            form.floors.append(f"git {sub} {option} changes refs beside a listing option")
            return

"""From one simple command (and its redirects) to units: wrappers, floors, paths, cd."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain, pairwise
from operator import attrgetter, methodcaller

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.model import Action, Unit
from askgate.policy.shell import git
from askgate.policy.shell.applypatch import PATCH_COMMANDS, patch_writes
from askgate.policy.shell.argv import names, scan
from askgate.policy.shell.base import REDIRECT_TYPES, Frame, Redirects, join_words
from askgate.policy.shell.cwd import UNKNOWN, Cwd, is_relative
from askgate.policy.shell.inline import (
    COMMAND_LANGUAGE_NAMES,
    awk_paths,
    command_language_floor,
    inline_code,
)
from askgate.policy.shell.links import LINK_MAKERS, made_links
from askgate.policy.shell.pathargs import (
    COLLECT_NAMES,
    OUTPUT_OPTION,
    RECURSIVE_NAMES,
    Paths,
    PathsView,
    collect,
    recursive_dirs,
)
from askgate.policy.shell.peeling import Peel
from askgate.policy.shell.programs import (
    FOREIGN_SHELLS,
    INLINE_INTERPRETERS,
    INTERPRETERS,
    SHELLS,
    SYSTEM_DIRS,
    dangerous_variable,
    harmless_setting,
    interpreter_context,
    is_interpreter,
    program_name,
    reads_script_from_stdin,
)
from askgate.policy.shell.redirects import RedirectMixin
from askgate.policy.shell.runners import (
    AWKS,
    REMOTE_RUNNERS,
    RUNNER_OR_EXEC_NAMES,
    awk_programs,
    container_run_forms,
    exec_option_floor,
    runner_inner,
)
from askgate.policy.shell.sedscript import sed_files
from askgate.policy.shell.unknown import tails
from askgate.policy.shell.variables import (
    DECLARATIONS,
    attached,
    builtin_floor,
    declaration_floors,
    name_floors,
)
from askgate.policy.shell.words import VALUE_OUTPUT, Node, Word
from askgate.policy.shell.wrappers import WRAPPERS, final_program, peel, xargs_peel

# Nodes tree-sitter sometimes hangs inside a command (`time ( … )`): walked as statements.
STATEMENT_TYPES = names(
    "subshell compound_statement if_statement while_statement for_statement case_statement "
    "pipeline list redirected_statement function_definition c_style_for_statement "
    "negated_command test_command"
)
_NAMED_FD = lazy_compile(r"^\{[A-Za-z_][A-Za-z0-9_]*\}$")
_INTEGER = lazy_compile(r"^[+-]?\d+$")
# Builtins that take variable names: a subscript in a name is evaluated as arithmetic,
# which can run command substitutions hidden in a variable's value.
_NAME_BUILTINS = names("read printf unset mapfile readarray wait getopts test [")
MAX_WRAPPERS = 16
_MOVES = names("cd pushd popd")
_ASSIGNMENT, _REDIRECT, _NAME, _BODY, _WORD = range(5)
_NAMES_WITH_RULES = COLLECT_NAMES | RUNNER_OR_EXEC_NAMES
# How command() treats a child node, by type (types not listed: a word when named or `$`).
_CHILD_ROLES = {
    "variable_assignment": _ASSIGNMENT,
    **dict.fromkeys(REDIRECT_TYPES, _REDIRECT),
    "command_name": _NAME,
    **dict.fromkeys(STATEMENT_TYPES, _BODY),
    "word": _WORD,
}
# First characters of a word's source that cannot start a `{fd}` or a descriptor number.
_PLAIN_FIRST = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_./~'\"$*?[]=+:@%^,!#"
)
_SPECIAL = names("git cd pushd let hash enable shopt fc set") | _NAME_BUILTINS | DECLARATIONS
# The fused path (plain()) is only for names run()/emit() give no treatment of their own:
# built from the same tables those consult, so the two cannot drift apart.
# (One exception: git with no global option, whose special() treatment plain() repeats.)
_NOT_FUSED = frozenset(
    {*WRAPPERS, *_SPECIAL, *_MOVES, *RUNNER_OR_EXEC_NAMES, *INLINE_INTERPRETERS, *INTERPRETERS,
     *SHELLS, *FOREIGN_SHELLS, *LINK_MAKERS, *COMMAND_LANGUAGE_NAMES, *PATCH_COMMANDS,
     "xargs", "source", ".", "exec"}
)  # fmt: skip
# Names whose inline code or command language inline.py reads.
_CODE_NAMES = COMMAND_LANGUAGE_NAMES | INLINE_INTERPRETERS | INTERPRETERS
# A command whose whole source is plain words: no quotes, escapes, expansions, globs.
_PLAIN_COMMAND = lazy_compile(r"[A-Za-z0-9_./:=@%+, \t-]+")


class PlainUnit:
    """What the fused path makes of a plain command's words (see _plain_unit); never
    changed once made (it is shared through _FUSED_COMMANDS). A slotted class, not a
    NamedTuple: cheaper to define at import, as cheap to make."""

    __slots__ = (
        "alternates", "floors", "globbed", "may_run", "operands", "reads", "recursive",
        "recursive_writes", "text", "writes",
    )  # fmt: skip
    unknown_names = ""  # (a plain command never has names nobody has seen)

    def __init__(
        self,
        text: str,
        alternates: tuple[str, ...],
        floors: tuple[str, ...],
        reads: tuple[str, ...],
        writes: tuple[str, ...],
        operands: tuple[str, ...],
        recursive: tuple[str, ...],
        may_run: tuple[str, ...],
        globbed: tuple[str, ...],
        recursive_writes: tuple[str, ...] = (),
    ) -> None:
        self.text = text
        self.recursive_writes = recursive_writes
        self.alternates = alternates
        self.floors = floors
        self.reads = reads
        self.writes = writes
        self.operands = operands
        self.recursive = recursive
        self.may_run = may_run
        self.globbed = globbed


# Plain commands recur (`git status`, `ls`, `pwd`): per command text as written, its
# words and PlainUnit, for the process (pure string work: nothing here looks at files),
# so command() skips the syntax nodes of one it has seen before. Only for trees that
# parsed cleanly, where a command of plain words parses the same wherever it stands;
# a last word that is a digit before `<` or `>` is a descriptor (_FD_NEXT), never fused.
_FUSED_COMMANDS: dict[str, tuple[tuple[Word, ...], PlainUnit]] = {}
_FUSED_LIMIT = 4096
_FUSED_TEXT_LIMIT = 1024
_FD_NEXT = (b"<", b">")
_DYNAMIC = attrgetter("dynamic")
INTERPRETER_HEREDOC = "an interpreter reading its program from a heredoc"  # (engine.py)


def _plain_unit(
    argv: list[Word], text: str, base: str, slash: str, in_system_dir: bool, plain_git: bool
) -> PlainUnit | None:
    """The unit of a plain command as run() and emit() would make it (before the cwd and
    the frame are applied); None when emit() must analyse what it runs."""
    head = argv[0].text
    args = argv[1:]
    alternates: list[str] = []
    floors: list[str] = []
    paths = Paths()
    if plain_git:
        # As special() does for git: the floors normalise() finds, the reordered forms.
        form = git.normalise(argv)
        floors = form.floors
        alternates = git.reordered(argv)
        _git_paths(form, paths)
    elif slash:
        base_form = join_words([Word(base, base), *args])
        if in_system_dir:
            alternates.append(text)
            text = base_form
        else:
            alternates.append(base_form)
            paths.read(head)
    if plain_git or base in COLLECT_NAMES:
        collect(base, args, paths)
        if base in RECURSIVE_NAMES:
            recursive_dirs(base, args, paths)
    elif args:
        found = tails(argv)
        if found.shell is not None or found.scripts:
            return None
        paths.may_run.extend(found.forms)
        paths.unknown(args)
    return PlainUnit(
        text=text,
        alternates=tuple(alternates),
        floors=(*floors, *paths.floors),
        reads=tuple(paths.reads),
        writes=tuple(paths.writes),
        operands=tuple(paths.operands),
        recursive=tuple(paths.recursive),
        may_run=tuple(paths.may_run),
        globbed=tuple(paths.globbed),
        recursive_writes=tuple(paths.recursive_writes),
    )


class CommandMixin(RedirectMixin):
    """Command-level analysis: wrappers, floors, paths, cd."""

    # piped_text is exactly what this command's stdin reads (`cat <<'EOF' | apply_patch`)
    piped_literal = False

    # -- a simple command -------------------------------------------------------

    def command(
        self,
        node: Node,
        state: Cwd,
        frame: Frame,
        extra_redirects: Sequence[Node] = (),
        piped: bool = False,
    ) -> None:
        self.visited.add(node.id)
        piped_text, self.piped_text = (self.piped_text if piped else None), None
        piped_literal, self.piped_literal = piped and self.piped_literal, False
        if self.fused_again(node, extra_redirects, state, frame):
            return
        assignments, word_nodes, redirect_nodes, bodies = _children_by_role(node)
        if extra_redirects:
            redirect_nodes.extend(extra_redirects)
        if redirect_nodes and word_nodes:
            trailing = self.redirect_arguments(redirect_nodes)
            if trailing:  # `cat 2>/dev/null .env`: `.env` is cat's argument
                word_nodes = sorted([*word_nodes, *trailing], key=lambda n: n.start_byte)
        groups = self.group(word_nodes)
        argv = self.arguments(groups, state, frame)
        if self.loop_values:
            argv = [self.loop_value(word) for word in argv]
        if (
            not (assignments or redirect_nodes or bodies)
            and argv
            and (argv[0].text not in _NOT_FUSED or argv[0].text == "git")
            and self.fuse(node, groups, argv, state, frame, extra_redirects)
        ):
            return
        floors: list[str] = []
        assigned = (
            [
                self.assignment(a, state, frame, floors, final_program(argv) if argv else None)
                for a in assignments
            ]
            if assignments
            else []
        )
        redirects = self.redirects(redirect_nodes, state, frame)
        if redirects.floors:
            floors.extend(redirects.floors)
        self.descriptor_words(groups, argv, floors)
        for body in bodies:
            self.statement(body, state, frame, piped)
        argv = _runnable(argv, bool(bodies))
        if not argv:
            if assigned or redirect_nodes:
                text = " ".join([*assigned, *(_compact(self.text(r)) for r in redirect_nodes)])
                if redirect_nodes or floors:
                    self.add_unit(text, (), redirects.reads, redirects.writes, floors, frame, state)
        else:
            self.piped_text = piped_text  # read by stdin() below, for this command only
            self.piped_literal = piped_literal
            self.run(argv, assigned, redirects, floors, state, frame, piped)
            self.piped_text, self.piped_literal = None, False
        self.trailing(redirects, argv, state, frame)

    def trailing(self, redirects: Redirects, argv: list[Word], state: Cwd, frame: Frame) -> None:
        """Statements tree-sitter hangs on a redirect (`cat <<EOF | sh`: the pipe)."""
        first = True
        for trailing, is_piped in redirects.trailing:
            if is_piped and len(argv) == 1 and argv[0].text == "cat":
                self.piped_text = redirects.stdin_text
                # only the first stage reads cat's output (`cat <<E | sed … | apply_patch`)
                self.piped_literal = first and redirects.stdin_literal
            first = first and not is_piped
            self.statement(trailing, state.copy() if is_piped else state, frame, piped=is_piped)
            self.piped_text, self.piped_literal = None, False

    def descriptor_words(
        self, groups: list[list[Node]], argv: list[Word], floors: list[str]
    ) -> None:
        """`{fd}<…` and `0< f`: a word right before a redirect may be a descriptor."""
        for group, word in zip(groups, argv, strict=True):
            first = word.source[:1]
            if first in _PLAIN_FIRST:
                continue  # the common case: neither `{` nor a digit
            if first == "{" or first.isdigit():
                end = group[-1].end_byte
                if self.src[end : end + 1] not in (b"<", b">"):
                    continue
                if first == "{" and _NAMED_FD.match(word.source):
                    floors.append(f"named file descriptor `{word.source}` is not analysed")
                elif word.source.isdigit():
                    word.text = ""  # `cat 0< f`: tree-sitter leaves the descriptor as a word

    def loop_value(self, word: Word) -> Word:
        """`$f` inside `for f in src/*.py; do …; done` is that glob (walker.loop_variable)."""
        source = word.source
        if not source.startswith(("$", '"$')):
            return word
        name = source.strip('"')[1:].removeprefix("{").removesuffix("}")
        value = self.loop_values.get(name)
        if value is None or source.strip('"') not in (f"${name}", f"${{{name}}}"):
            return word
        return Word(value.text, value.source, value.dynamic)

    def fused_again(
        self, node: Node, extra_redirects: Sequence[Node], state: Cwd, frame: Frame
    ) -> bool:
        """A plain command seen before (in a tree that parsed cleanly, as this one): its
        words and unit come from its text alone, without walking its nodes."""
        if not self.clean or extra_redirects:
            return False
        fused = _FUSED_COMMANDS.get(self.text(node))
        if fused is None or self.src[node.end_byte : node.end_byte + 1] in _FD_NEXT:
            return False
        words, unit = fused
        self.fused_unit(unit, list(words), state, frame)
        return True

    def fuse(
        self,
        node: Node,
        groups: list[list[Node]],
        argv: list[Word],
        state: Cwd,
        frame: Frame,
        extra_redirects: Sequence[Node],
    ) -> bool:
        """The fused path for a plain command (False: it needs run() and emit())."""
        raw = self.text(node)
        unit = self.plain(raw, groups, argv)
        if unit is None:
            return False
        self.fused_unit(unit, argv, state, frame)
        if self.clean and not extra_redirects and len(raw) <= _FUSED_TEXT_LIMIT:
            if len(_FUSED_COMMANDS) >= _FUSED_LIMIT:
                _FUSED_COMMANDS.clear()
            _FUSED_COMMANDS[raw] = (tuple(argv), unit)
        return True

    def fused_unit(self, unit: PlainUnit, argv: list[Word], state: Cwd, frame: Frame) -> None:
        """A plain command's unit where it stands (cwd, frame), and its cd effects."""
        self.add_unit(
            unit.text, unit.alternates, unit.reads, unit.writes, unit.floors, frame, state,
            paths=unit,
        )  # fmt: skip
        self.after(argv, state)

    def plain(self, raw: str, groups: list[list[Node]], argv: list[Word]) -> PlainUnit | None:
        """The fused path: a plain command (`raw`, its text as written) straight to its
        unit, as run() and emit() would make it. None for anything that needs their
        full treatment.
        """
        head = argv[0].text
        directory, slash, base = head.rpartition("/")
        # `git SUB …` with no global option: normalise() would strip nothing.
        plain_git = head == "git" and (len(argv) < 2 or argv[1].text[:1] != "-")
        if (
            (base in _NOT_FUSED and not plain_git)
            or not base
            or base.startswith(("python", "pypy"))
        ):
            return None
        if not _PLAIN_COMMAND.fullmatch(raw):
            return None
        if list(map(_DYNAMIC, argv)).count(None) != len(argv):
            return None  # a word only known at run time
        # A descriptor number before `<` or `>` is for command() to decide. The text has
        # neither, so only the last word can stand right before one.
        if argv[-1].text[:1].isdigit():
            end = groups[-1][-1].end_byte
            if self.src[end : end + 1] in _FD_NEXT:
                return None
        in_system_dir = bool(slash) and (directory or "/") in SYSTEM_DIRS
        return _plain_unit(argv, join_words(argv), base, slash, in_system_dir, plain_git)

    def assignment(
        self, node: Node, state: Cwd, frame: Frame, floors: list[str], program: str | None = None
    ) -> str:
        """`NAME=value` as text; floors for variables that change what runs."""
        return self.assignment_word(node, state, frame, floors, program).text

    def assignment_word(
        self, node: Node, state: Cwd, frame: Frame, floors: list[str], program: str | None = None
    ) -> Word:
        """`NAME=value` as a word (dynamic when the value is); floors as assignment()."""
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.text(name_node) if name_node is not None else ""
        if name_node is not None and name_node.type == "subscript":
            index = name_node.child_by_field_name("index")
            self.nested(name_node, "array subscript", state, frame)
            if index is None or not _INTEGER.match(self.text(index)):
                floors.append(f"array subscript in `{name}` is evaluated as arithmetic")
            base = name_node.child_by_field_name("name")
            bare = self.text(base) if base is not None else name
        else:
            bare = name
        operator = "+=" if any(c.type == "+=" for c in node.children) else "="
        value, static = "", True
        if value_node is not None:
            word = self.words([value_node], state, frame, "assign")[0]
            value, static = word.text, word.dynamic is None
        if dangerous_variable(bare) and not (
            operator == "=" and bare == name and harmless_setting(bare, value, static, program)
        ):
            floors.append(f"sets {bare}, which changes what commands run")
        text = f"{name}{operator}{value}"
        return Word(text, text, None if static else f"variable assignment `{text}`")

    # -- wrappers and units -------------------------------------------------------

    def run(
        self,
        argv: list[Word],
        assigned: Sequence[str],
        redirects: Redirects,
        floors: list[str],
        state: Cwd,
        frame: Frame,
        piped: bool,
    ) -> None:
        """Peel wrappers off argv and emit the resulting unit(s)."""
        floors = list(floors)
        globbed: list[str] = []
        if any(word.dynamic for word in argv[1:]):
            harmless = _harmless_dynamic(argv)
            for word in argv[1:]:
                if not word.dynamic:
                    continue
                if _glob_only(word) and harmless(word):
                    globbed.append(word.text)  # expanded when the engine decides
                elif not harmless(word):
                    floors.append(f"argument is only known at run time: {word.dynamic}")
        layers: list[list[Word]] = []
        values: list[str] = []
        if assigned:
            layers.append([Word(a, a) for a in assigned] + argv)
            # `GIT_TRACE=F git status`: a value may name a file the program writes.
            values = [a.partition("=")[2] for a in assigned]
        extra = _NO_EXTRA
        current = argv
        for _ in range(MAX_WRAPPERS):
            layer = peel(current)
            if layer is None:
                break
            if current[0].text == "xargs" or program_name(current[0]) == "xargs":
                layer = self.xargs_layer(current, redirects, piped)
            if extra is _NO_EXTRA:
                extra = _Extra()
            extra.absorb(layer, floors)
            if layer.keep or not (layer.inner or layer.scripts or layer.extra):
                self.emit(
                    current, layers, floors, extra, redirects, state, frame, piped, values, globbed
                )
                self.spawn(layer, current, layers, floors, extra, redirects, state, frame)
                return
            if layer.scripts or layer.extra:
                produced = self.spawn(
                    layer, current, layers, floors, extra, redirects, state, frame
                )
                if not produced:
                    self.emit(
                        current,
                        layers,
                        floors,
                        extra,
                        redirects,
                        state,
                        frame,
                        piped,
                        values,
                        globbed,
                    )
                if not layer.inner:
                    return
            layers.append(current)
            current = layer.inner
            if current and current[0].source == "{":
                # `time { …; }` arrives as words: the group's first command follows `{`.
                floors.append("a brace group after a keyword is not analysed precisely")
                current = current[1:]
                if not current:
                    break
        else:
            floors.append("too many nested wrappers")
        if not current:
            current = layers.pop()
        self.emit(current, layers, floors, extra, redirects, state, frame, piped, values, globbed)
        self.after(current, state)

    def xargs_layer(self, argv: list[Word], redirects: Redirects, piped: bool) -> Peel:
        """xargs with what its standard input is known to hold (wrappers.xargs_peel): the
        literal text a pipe or heredoc gives it, else only whether it has one."""
        literal = None
        if redirects.stdin in ("heredoc", "herestring"):
            literal = redirects.stdin_text
        elif piped and redirects.stdin is None:  # (a `<` redirect replaces the pipe)
            literal = self.piped_text
        stdin = piped or redirects.stdin is not None
        return xargs_peel(list(argv[1:]), literal, stdin)

    def spawn(
        self,
        layer: Peel,
        current: list[Word],
        layers: list[list[Word]],
        floors: list[str],
        extra: _Extra,
        redirects: Redirects,
        state: Cwd,
        frame: Frame,
    ) -> int:
        """Units for what a wrapper runs as shell source or as further commands."""
        if not layer.scripts and not layer.extra:
            return 0
        outer = tuple(join_words(x) for x in [*layers, current])
        floor_reasons = [*floors]
        if frame.floor:
            floor_reasons.append(frame.floor)
        inner_frame = frame._replace(
            alternates=frame.alternates + outer,
            floor="; ".join(dict.fromkeys(floor_reasons)) or None,
            reads=(*frame.reads, *redirects.reads, *extra.reads),
            writes=(*frame.writes, *redirects.writes, *extra.writes),
        )
        inner_state = state.within(extra.cwd) if extra.cwd else state.copy()
        produced = 0
        for script, context in layer.scripts:
            # eval runs in this shell: a cd inside it moves the commands after it.
            target = state if context == "eval" else inner_state.copy()
            script_frame = inner_frame._replace(context=context, remote=frame.remote or
                                                context == "ssh")  # fmt: skip
            produced += self.reparse(script, context, script_frame, target)
        for argv, context in layer.extra:
            before = len(self.sink.units)
            self.run(
                argv,
                (),
                Redirects(),
                [],
                inner_state.copy(),
                inner_frame._replace(context=context, alternates=frame.alternates),
                False,
            )
            produced += len(self.sink.units) - before
        return produced

    def emit(
        self,
        primary: list[Word],
        layers: list[list[Word]],
        floors: list[str],
        extra: _Extra,
        redirects: Redirects,
        state: Cwd,
        frame: Frame,
        piped: bool,
        environment_values: Sequence[str] = (),
        globbed: Sequence[str] = (),
    ) -> None:
        floors = list(floors)
        text = join_words(primary)
        alternates = [join_words(layer) for layer in layers] if layers else []
        name = program_name(primary[0])
        paths = Paths()
        text, cwd_words = self._program_paths(
            primary, text, alternates, floors, extra, redirects, state, frame, piped, paths
        )
        self._given_paths(extra, redirects, paths)
        if piped or redirects.stdin is not None:
            self.stdin(name, primary, text, redirects, piped, floors, state, frame)
            if name == "exec" and len(primary) == 1:  # a shell reading commands reads these
                floors.append("exec replaces the standard input the shell may read commands from")
        context = frame.context
        if name is not None and (
            name in INLINE_INTERPRETERS or name.startswith(("python", "pypy"))
        ):
            context = interpreter_context(name, primary) or context
        self._content_paths(
            name, primary, floors, alternates, redirects, piped, paths, environment_values, globbed
        )
        self.add_unit(
            text,
            alternates,
            paths.reads,
            paths.writes,
            floors,
            frame,
            state,
            context,
            cwd_words,
            paths=paths,
            words=_unit_words(primary, text),
        )

    def _program_paths(
        self,
        primary: list[Word],
        text: str,
        alternates: list[str],
        floors: list[str],
        extra: _Extra,
        redirects: Redirects,
        state: Cwd,
        frame: Frame,
        piped: bool,
        paths: Paths,
    ) -> tuple[str, list[Word]]:
        """What the program named by the command's first word reads and writes, by its own
        knowledge; the unit's text (a system directory's program by its base name) and the
        words that may change its cwd."""
        head = primary[0]
        args = primary[1:]
        name = program_name(head)
        cwd_words = extra.cwd
        if head.dynamic is not None:
            floors.append(f"command name `{head.source}` is only known at run time")
        elif "/" in head.text:
            directory, _, base = head.text.rpartition("/")
            base_form = join_words([Word(base, base), *args])
            if (directory or "/") in SYSTEM_DIRS:
                alternates.insert(0, text)
                text = base_form
            else:
                alternates.append(base_form)
                paths.read(head.text)
        if head.text in PATCH_COMMANDS and head.dynamic is None:
            self.patch(args, redirects, piped, paths)
        elif name in _SPECIAL:
            text, git_cwd = self.special(name, primary, text, alternates, floors, paths)
            if git_cwd:
                cwd_words = [*cwd_words, *git_cwd]
        elif head.dynamic is None:
            base = head.text.rsplit("/", 1)[-1]
            if base not in _NAMES_WITH_RULES:
                if args:
                    paths.unknown(args)  # what collect() does for a name it has no rule for
                    if base not in WRAPPERS:  # (their commands are units already)
                        self.unknown_program(primary, text, paths, state, frame)
            else:
                self.ruled(base, args, alternates, floors, paths)
        else:
            paths.unknown(args)
        return text, cwd_words

    @staticmethod
    def _given_paths(extra: _Extra, redirects: Redirects, paths: Paths) -> None:
        """What wrappers' options and the command's redirects name."""
        if extra.used:
            paths.unknown(extra.option_words)
            paths.recursive.extend(extra.recursive)
            paths.unknown_names = extra.unknown_names or paths.unknown_names
            for path in extra.reads:
                paths.read(path)
            for path in extra.writes:
                paths.write(path)
            for path in extra.recursive_writes:
                paths.recursive_write(path)
        for path in redirects.reads:
            paths.read(path)
        for path in redirects.writes:
            paths.write(path)

    def _content_paths(
        self,
        name: str | None,
        primary: list[Word],
        floors: list[str],
        alternates: list[str],
        redirects: Redirects,
        piped: bool,
        paths: Paths,
        environment_values: Sequence[str],
        globbed: Sequence[str],
    ) -> None:
        """Paths the command reaches beyond its operands: environment values, globs, trees
        read whole, inline code, `$(pwd)` words and links it makes."""
        args = primary[1:]
        for value in environment_values:
            paths.operand(value)
        if globbed:
            paths.globbed.extend(globbed)
        if name in RECURSIVE_NAMES:
            recursive_dirs(name, args, paths)
        if name is not None and (name in _CODE_NAMES or is_interpreter(name)):
            self.code_paths(name, args, paths, floors, piped or redirects.stdin is not None)
        if paths.floors:
            floors.extend(paths.floors)
        if any(_PWD_SOURCE.search(word.source) for word in args):
            # `$(pwd)` is `$PWD` (words.py); a deny written with `$(pwd)` sees it as written.
            alternates.append(" ".join(word.source for word in primary))
            if paths.writes or paths.recursive_writes or paths.operands:
                # `ls $(pwd)/src` reads what `$PWD/src` names; `rm -rf $(pwd)` stays a question.
                floors.append("a command substitution (`$(pwd)`) names what it may write")
        if name in LINK_MAKERS:
            maker = len(self.sink.units)
            for link, target in made_links(name, args, self.sink.links):
                self.sink.links.append((link, target, maker))

    def patch(self, args: list[Word], redirects: Redirects, piped: bool, paths: Paths) -> None:
        """Codex's `apply_patch`: the paths of a literal patch are its writes (applypatch.py)."""
        if redirects.stdin in ("heredoc", "herestring"):
            literal = redirects.stdin_text if redirects.stdin_literal else None
        elif piped and redirects.stdin is None:
            literal = self.piped_text if self.piped_literal else None
        else:
            literal = None
        writes, reason = patch_writes(args, literal, piped or redirects.stdin is not None)
        if not self.clean and not reason:  # where a heredoc ends is then tree-sitter's guess
            writes, reason = [], "apply_patch in a command that does not parse cleanly"
        for path in writes:
            paths.write(path)
        if reason:
            paths.floors.append(reason)

    def unknown_program(
        self, argv: list[Word], text: str, paths: Paths, state: Cwd, frame: Frame
    ) -> None:
        """What a program with no rule of its own may run (unknown.py)."""
        found = tails(argv)
        paths.may_run.extend(found.forms)
        if found.shell is None and not found.scripts:
            return
        reason = f"`{argv[0].text}` is not known, and may run what follows it"
        inner = frame._replace(
            alternates=(*frame.alternates, text),
            floor=f"{frame.floor}; {reason}" if frame.floor else reason,
        )
        if found.shell is not None:
            self.run(argv[found.shell :], (), Redirects(), [], state.copy(), inner, False)
        for script in found.scripts:
            self.reparse(script, "script of an unknown program", inner, state.copy())

    def code_paths(
        self, name: str, args: list[Word], paths: Paths, floors: list[str], stdin: bool
    ) -> None:
        """Inline code and command languages (inline.py): paths they name, floors."""
        code = inline_code(name, args)
        if code is not None:
            if code.floor:
                floors.append(code.floor)
            for path in code.reads:
                paths.read(path)
            for path in code.writes:
                paths.write(path)
                paths.operand(path)  # -i reads the file before writing it
            for path in code.operands:
                paths.operand(path)
        if name in AWKS:
            for program in awk_programs(args):
                operands, writes = awk_paths(program)
                for path in operands:
                    paths.operand(path)
                for path in writes:
                    paths.write(path)
        reason = command_language_floor(name, args, stdin)
        if reason:
            floors.append(reason)

    def ruled(
        self, base: str, args: list[Word], alternates: list[str], floors: list[str], paths: Paths
    ) -> None:
        """A command name with runner, exec-option or path rules of its own."""
        alternates.extend(container_run_forms(base, args))
        inner = runner_inner(base, args)
        if inner is not None:
            alternates.extend(_peeled_forms(inner, floors))
            if base in REMOTE_RUNNERS:
                args = args[: len(args) - len(inner)]
            else:
                self.runner_inner(inner, floors, paths)
        collect(base, args, paths)
        reason = exec_option_floor(base, args)
        if reason:
            floors.append(reason)
        if base in _SEDS:
            _sed_paths(args, paths)

    def runner_inner(self, inner: list[Word], floors: list[str], paths: Paths) -> None:
        """What a local runner starts (`uv run pytest --pastebin`, `npx tar -xPf a`) is
        decided with its own program's knowledge too: its paths, floors, code options."""
        current = inner
        for _ in range(MAX_WRAPPERS):
            layer = peel(current)
            if layer is None or not layer.inner:
                break
            current = layer.inner
        name = program_name(current[0]) if current else None
        if name is None:
            return
        args = current[1:]
        if name == "git":
            form = git.normalise(current)
            floors.extend(form.floors)
            _git_paths(form, paths)
        elif name in COLLECT_NAMES:
            collect(name, args, paths)
            if name in RECURSIVE_NAMES:
                recursive_dirs(name, args, paths)
        reason = exec_option_floor(name, args)
        if reason:
            floors.append(reason)
        if name in _SEDS:
            _sed_paths(args, paths)
        if name in _CODE_NAMES or is_interpreter(name):
            self.code_paths(name, args, paths, floors, False)

    def special(
        self,
        name: str,
        primary: list[Word],
        text: str,
        alternates: list[str],
        floors: list[str],
        paths: Paths,
    ) -> tuple[str, list[Word]]:
        """Commands with rules of their own: git, cd, builtins that name variables."""
        args = primary[1:]
        git_cwd: list[Word] = []
        if name == "git":
            form = git.normalise(primary)
            floors.extend(form.floors)
            git_cwd = form.cwd
            _git_paths(form, paths)
            if form.stripped:
                alternates.append(text)
                text = join_words(form.argv)
            alternates.extend(git.reordered(form.argv))
        if name in ("cd", "pushd"):
            for word in scan(args, short_flags="LPe@").operands:
                if word.text != "-":
                    paths.read(word.text)
        else:
            collect(name, args, paths)
        if name in _NAME_BUILTINS:
            for word in _variable_names(name, primary):
                if word.dynamic is not None:
                    # `printf -v "$x" 1` with x='a[$(cmd)]': bash evaluates the subscript.
                    floors.append(f"`{name}` names a variable only known at run time")
                elif name not in ("test", "["):
                    floors.extend(name_floors(word.text, name))
                elif "[" in word.text:
                    floors.append(f"`{name}` with an array subscript evaluates it as arithmetic")
        elif name in DECLARATIONS:
            floors.extend(declaration_floors(name, args))
        reason = builtin_floor(name, args)
        if reason:
            floors.append(reason)
        if name == "let":
            floors.append("let evaluates arithmetic, which can run commands hidden in variables")
        elif name == "hash" and any(w.text.startswith("-p") for w in args):
            floors.append("hash -p changes which program a name runs")
        elif name == "enable" and any(w.text.startswith("-f") for w in args):
            floors.append("enable -f loads a builtin from a shared library")
        elif name == "shopt" and any(w.text == "expand_aliases" for w in args):
            floors.append("aliases are not analysed")
        return text, git_cwd

    def stdin(
        self,
        name: str | None,
        primary: list[Word],
        text: str,
        redirects: Redirects,
        piped: bool,
        floors: list[str],
        state: Cwd,
        frame: Frame,
    ) -> None:
        """A shell or interpreter whose program arrives on standard input."""
        script_reader = reads_script_from_stdin(primary) or _sources_stdin(name, primary)
        known = self.piped_text if piped else None
        if (piped or redirects.stdin == "pipe") and (name == "xargs" or script_reader):
            floors.append("pipe into a shell or interpreter runs whatever arrives on stdin")
        elif redirects.stdin in ("heredoc", "herestring") and script_reader:
            if name is not None and is_interpreter(name):
                # Like `python -c CODE`: under the required sandbox the kernel holds it
                # (engine.py lifts exactly this reason there); elsewhere it asks.
                floors.append(INTERPRETER_HEREDOC)
            else:
                floors.append("a shell or interpreter reading its program from a heredoc")
            known = redirects.stdin_text
        else:
            return
        if known and name is not None and not is_interpreter(name):
            # The program is known (`echo 'rm -rf /' | sh`, `bash <<EOF`): show it to denies.
            self.reparse(
                Word(known, known),
                "script on stdin",
                frame._replace(alternates=(*frame.alternates, text), floor=floors[-1]),
                state.copy(),
            )

    def add_unit(
        self,
        text: str,
        alternates: Sequence[str],
        reads: Sequence[str],
        writes: Sequence[str],
        floors: Sequence[str],
        frame: Frame,
        state: Cwd,
        context: str | None = None,
        cwd_words: Sequence[Word] = (),
        paths: PathsView | None = None,
        words: tuple[str, ...] = (),
    ) -> None:
        where = state.within(cwd_words) if cwd_words else state
        configs = where.configs
        other_cwds: tuple[str, ...] = ()
        if len(configs) == 1:  # the common case: one place, known or not
            cwd = configs[0].path
            unknown = None
            if cwd == UNKNOWN:
                cwd, unknown = None, where.unknown
            rewrite_pwd = cwd is not None
        else:
            known = [p for p in where.paths if p != UNKNOWN]
            cwd = known[0] if known else None
            if len(known) > 1:
                other_cwds = _other_cwds(known)
            unknown = where.unknown
            rewrite_pwd = True  # (relative to each place: `$PWD/x` is `./x`)
        reasons = list(floors) if floors or frame.floor else []
        if frame.floor:
            reasons.append(frame.floor)
        remote = frame.remote
        if paths is not None and not remote:
            operands: Sequence[str] = paths.operands
            recursive: Sequence[str] = paths.recursive
            globbed, may_run = paths.globbed, paths.may_run
            recursive_writes = paths.recursive_writes
            unknown_names = paths.unknown_names
        else:
            unknown_names = ""
            operands = recursive = globbed = may_run = recursive_writes = ()
        if remote:
            reads = writes = ()
        elif frame.reads or frame.writes:
            writes = list(dict.fromkeys([*writes, *frame.writes]))
            reads = [p for p in dict.fromkeys([*reads, *frame.reads]) if p not in writes]
        elif writes:
            reads = [p for p in reads if p not in writes]
        if reads or writes or operands:
            # One C-level scan decides whether either rewrite can apply (most units: no).
            if rewrite_pwd and any(map(_STARTS_WITH_PWD, chain(reads, writes, operands))):
                # (A relative cwd is where the unit's relative paths start already:
                # `cd src && cat $PWD/../.e*` reads `./../.e*` there, not `src/../.e*`.)
                base = cwd if len(configs) == 1 and cwd and not is_relative(cwd) else None
                reads = [_pwd(p, base) for p in reads]
                writes = [_pwd(p, base) for p in writes]
                operands = [_pwd(p, base) for p in operands]
                globbed = [_pwd(p, base) for p in globbed]  # (the same words, expanded later)
            if any(map(_STARTS_SPECIAL, chain(reads, writes, operands))):
                reads, writes, operands = (
                    _special_files(group, reasons, self.sink.process_substitutions)
                    for group in (reads, writes, operands)
                )
        if unknown and _names_relative(reads, writes, recursive, operands):
            reasons.append(f"a relative path {unknown}")
        if frame.alternates:
            alternates = [*alternates, *frame.alternates]
        if alternates:
            alternates = tuple(a for a in dict.fromkeys(alternates) if a != text)
        reason = "; ".join(dict.fromkeys(reasons)) if reasons else None
        self.sink.units.append(
            Unit(
                command=text,
                alternates=tuple(alternates),
                reads=tuple(reads),
                writes=tuple(writes),
                cwd=cwd,
                other_cwds=other_cwds,
                operands=tuple(operands),
                recursive_reads=tuple(recursive),
                may_run=tuple(dict.fromkeys(may_run)) if may_run else (),
                globbed=tuple(dict.fromkeys(globbed)) if globbed else (),
                floor=Action.ASK if reason else None,
                floor_reason=reason,
                context=context or frame.context,
                recursive_writes=tuple(recursive_writes),
                unknown_names=unknown_names,
                words=words,
            )
        )

    def after(self, argv: list[Word], state: Cwd) -> None:
        """Effects on the commands that follow: cd, pushd, popd, functions that cd."""
        head = argv[0].text
        if head in _MOVES or "/" in head:
            name = program_name(argv[0])
            if name in _MOVES:
                if self.sink.moves_redefined:
                    state.lose(f"runs after `{head}`, {self.sink.moves_redefined}")
                else:
                    state.change(name, argv[1:], self.sink.probe)
        elif self.sink.cwd_functions and argv[0].static and head in self.sink.cwd_functions:
            state.lose(f"runs after `{head}`, a function that changes directory")


def _git_paths(form: git.GitForm, paths: Paths) -> None:
    """What git's normalised form reads and writes (git.py), into the unit's paths."""
    for path in form.reads:
        paths.read(path)
    for path in form.writes:
        paths.write(path)
    paths.recursive.extend(form.recursive)
    for path in form.recursive_writes:
        paths.recursive_write(path)


def _unit_words(primary: list[Word], text: str) -> tuple[str, ...]:
    """The words of a unit's `text` when one holds a space (Unit.words); () when
    splitting the text on spaces gives them, or when the text is another form."""
    if not any(" " in word.text for word in primary):
        return ()
    words = [word.text for word in primary]
    if " ".join(words) != text:
        words[0] = words[0].rsplit("/", 1)[-1]  # `/usr/bin/curl …` is `curl …`
        if " ".join(words) != text:
            return ()
    return tuple(words)


def _runnable(argv: list[Word], has_bodies: bool) -> list[Word]:
    """The words that run a program: empty ones that came from nothing dropped; none
    for a keyword before a body (`time ( … )`) or a lone `}` tree-sitter did not place."""
    for word in argv:
        if not word.text:
            argv = [w for w in argv if w.text or w.source[:1] in ("'", '"', "$")]
            break
    if has_bodies and all(w.static and w.text in ("time", "-p", "!") for w in argv):
        return []  # the keyword itself runs nothing
    if argv and argv[0].source == "}" and len(argv) == 1:
        return []  # the end of a brace group tree-sitter did not recognise
    return argv


def _children_by_role(node: Node) -> tuple[list[Node], list[Node], list[Node], list[Node]]:
    """A command's children: (assignments, words, redirects, bodies)."""
    assignments: list[Node] = []
    word_nodes: list[Node] = []
    redirect_nodes: list[Node] = []
    bodies: list[Node] = []
    for child in node.children:
        kind = child.type
        role = _CHILD_ROLES.get(kind)
        if role is None:
            if child.is_named or kind == "$":
                word_nodes.append(child)
        elif role == _NAME:
            word_nodes.extend(child.children)
        elif role == _WORD:
            word_nodes.append(child)
        elif role == _ASSIGNMENT:
            assignments.append(child)
        elif role == _REDIRECT:
            redirect_nodes.append(child)
        else:
            bodies.append(child)  # `time ( … )`: tree-sitter hangs the body on `time`
    return assignments, word_nodes, redirect_nodes, bodies


class _Extra:
    """What the wrapper layers peeled so far contribute to the final unit (_NO_EXTRA: none)."""

    __slots__ = (
        "cwd", "option_words", "reads", "recursive", "recursive_writes", "unknown_names", "used",
        "writes",
    )  # fmt: skip

    def __init__(self) -> None:
        self.cwd: list[Word] = []
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.option_words: list[Word] = []
        self.recursive: list[str] = []
        self.recursive_writes: list[str] = []
        self.unknown_names = ""
        self.used = False

    def absorb(self, layer: Peel, floors: list[str]) -> None:
        self.used = True
        if layer.floor:
            floors.append(layer.floor)
        # `env NAME=value CMD`: a harmless setting is decided by the program it reaches.
        settings = layer.settings if len(layer.settings) == len(layer.assigned) else ()
        program = final_program(layer.inner) if settings and not layer.cwd else None
        for index, name in enumerate(layer.assigned):
            if not dangerous_variable(name):
                continue
            if settings:
                value = settings[index].text.partition("=")[2]
                if harmless_setting(name, value, settings[index].static, program):
                    continue
            floors.append(f"sets {name}, which changes what commands run")
        self.cwd.extend(layer.cwd)
        self.reads.extend(layer.reads)
        self.writes.extend(layer.writes)
        self.recursive.extend(layer.recursive)
        self.recursive_writes.extend(layer.recursive_writes)
        self.option_words.extend(layer.option_words)
        self.unknown_names = layer.unknown_names or self.unknown_names


def _pwd(path: str, cwd: str | None) -> str:
    """`$PWD` in a unit that runs after a cd means that directory (or, where several
    are possible, is relative to each)."""
    if path == "$PWD" or path.startswith("$PWD/"):
        return (cwd if cwd is not None else ".") + path[4:]
    return path


# Paths that name something other than what they spell: the shell's own directory, a
# process's files, an open descriptor.
_SPECIAL_FILE = lazy_compile(r"(?:^|\s)/(?:proc|dev/fd)/")
_PROC_SELF = lazy_compile(r"^/proc/(?:self|thread-self)/(cwd|root)(?=/|$)")
_OUR_DESCRIPTOR = lazy_compile(r"^/dev/fd/[0-9]+$|^/proc/(?:self|thread-self)/fd/[0-9]+$")
_PROC_PROCESS = lazy_compile(r"^/proc/(?:self|thread-self|[0-9]+)(?:/|$)")


def _special_files(group: Sequence[str], reasons: list[str], substitutions: bool) -> list[str]:
    """`/proc/self/cwd/x` is x in the unit's directory, `/proc/self/root/x` is /x;
    another process's files and open descriptors are ask (a descriptor may be one of
    this command's own `<( )`: those are harmless)."""
    out: list[str] = []
    for path in group:
        match = _PROC_SELF.match(path)
        if match:
            rest = path[match.end() :]
            if match.group(1) == "cwd":
                out.append("." + rest)
            else:
                out.append(rest or "/")
            continue
        if _OUR_DESCRIPTOR.match(path):
            if not substitutions:
                reasons.append(f"`{path}` is an open file whose name is not known")
            continue
        if _PROC_PROCESS.match(path) or path.startswith("/dev/fd/"):
            reasons.append(f"`{path}` reaches another file through a process")
            continue
        out.append(path)
    return out


def _other_cwds(known: Sequence[str | None]) -> tuple[str, ...]:
    return tuple("" if p is None else p for p in known[1:])


# `$PWD…` (rewritten per unit) and `/proc…`, `/dev/fd/…` (_special_files), tested as
# C-level prefix checks over a unit's paths.
_STARTS_WITH_PWD = methodcaller("startswith", "$PWD")
_STARTS_SPECIAL = methodcaller("startswith", ("/proc", "/dev/fd/"))


def _names_relative(
    reads: Sequence[str], writes: Sequence[str], recursive: Sequence[str], operands: Sequence[str]
) -> bool:
    """A path whose meaning depends on the directory (operands: only file-like words)."""
    return any(is_relative(p) for group in (reads, writes, recursive) for p in group) or any(
        _file_like(p) for p in operands
    )


def _file_like(word: str) -> bool:
    """An operand that may name a file in an unknown directory (`id_rsa`, `.env`, `a/b`):
    bare words such as `status` or `test` are taken as subcommands."""
    return any(c in word for c in "./_~")


# Names that run their operands as code: a process substitution given to them is a
# script, not data.
_RUNS_OPERANDS = SHELLS | FOREIGN_SHELLS | INTERPRETERS | names("source . eval exec xargs")


_TEXT_ONLY = names("echo printf : true false")
_SEDS = names("sed gsed")
_PWD_SOURCE = lazy_compile(r"\$\(\s*pwd|`\s*pwd")
# A word that is a known-harmless substitution alone or as an option's value (words.py).
_VALUE_WORD = lazy_compile(r"(-[A-Za-z]|--[A-Za-z][\w-]*=)?(\"?)\$\([^()`\\]*\)\2")
_COUNT_OPTIONS = names("-j -n -p --jobs --workers --numprocesses --parallel --processes")
_COUNTS_OPERANDS = names("sleep seq expr test [")
_PRINTED_ONLY = (
    VALUE_OUTPUT,
    "variable `",
    "glob in",
    "brace expansion",
    "tilde expansion",
    "arithmetic expansion",
    "command substitution",  # its commands are units of their own
)


_PROGRAM_FILE_OPTIONS = names(
    "-f --file -x -S -K --config -F --rcfile --init-file -init --command -c --script -s "
    "--source -l --load -I --from-file --eval -e -E -cmd -T"
)


def _sed_paths(args: Sequence[Word], paths: Paths) -> None:
    """`sed '1r FILE'` reads FILE, `sed 'w FILE'` and `s/a/b/w FILE` write it."""
    reads, writes = sed_files(args)
    for path in reads:
        paths.read(path)
    for path in writes:
        paths.write(path)


def _harmless_dynamic(argv: Sequence[Word]) -> Callable[[Word], bool]:
    """Run-time arguments that cannot change what runs or which file is touched:
    a cd/pushd target (the directory becomes unknown instead, cwd.py) and a process
    substitution given to a program that reads it as data (`diff <(…) <(…)`)."""
    head = argv[0]
    if head.static and head.text in _MOVES:
        return lambda word: True
    if head.static and head.text in _TEXT_ONLY:
        # `echo $PATH`: the value is only printed (code-evaluating expansions are
        # floored for the whole command, evaluating.py).
        return lambda word: all(
            part.startswith(_PRINTED_ONLY) for part in (word.dynamic or "").split("; ")
        )
    runs_code = any(
        w.static and (w.text.rsplit("/", 1)[-1] in _RUNS_OPERANDS or is_interpreter(w.text))
        for w in argv
    )
    # `sed -f <(…)`, `make -f <(…)`, `curl -K <(…)`: a program or config file read from a
    # process substitution is code nobody has seen.
    program_files = {
        id(word)
        for previous, word in pairwise(argv)
        if previous.static and previous.text in _PROGRAM_FILE_OPTIONS
    }

    counts = {
        id(word)
        for previous, word in pairwise(argv)
        if previous.static and previous.text in _COUNT_OPTIONS
    }

    def harmless(word: Word) -> bool:
        reason = word.dynamic or ""
        if ";" in reason:
            return False
        if reason.startswith(VALUE_OUTPUT):
            # Digits, as a count (`-j$(nproc)`, `--jobs=$(nproc)`, `-n $(nproc)`) or to a
            # program whose operands are not files (`sleep $(date +%S)`): never a file name
            # (`touch $(date +%s)` writes one, `sort -o $(nproc)` too: they stay questions).
            found = _VALUE_WORD.fullmatch(word.source)
            if runs_code or found is None:
                return False
            option = found.group(1)
            if option:
                return OUTPUT_OPTION.match(option.rstrip("=")) is None
            return id(word) in counts or (head.static and head.text in _COUNTS_OPERANDS)
        if _glob_only(word):
            # A glob with a literal start (`src/*.py`) cannot expand to an option such as
            # `-c`; a bare `*` given to a shell or interpreter could.
            return not runs_code or word.source[:1] not in "*?["
        if runs_code:
            return False
        return (
            reason.startswith("process substitution")
            and word.source.startswith(("<(", ">("))
            and word.source.endswith(")")
            and id(word) not in program_files
        )

    return harmless


def _glob_only(word: Word) -> bool:
    """An unquoted glob and nothing else run-time (`src/*.py`, not `$D/*.py`)."""
    reason = word.dynamic or ""
    return reason.startswith("glob in") and ";" not in reason and "\n" not in word.text


def _compact(text: str) -> str:
    return " ".join(text.split())


def _sources_stdin(name: str | None, argv: Sequence[Word]) -> bool:
    return name in ("source", ".") and len(argv) > 1 and argv[1].text in ("/dev/stdin", "-")


def _peeled_forms(argv: list[Word], floors: list[str]) -> list[str]:
    """A runner's inner command and its wrapper-free forms, for deny matching."""
    forms = [join_words(argv)]
    current = argv
    for _ in range(MAX_WRAPPERS):
        layer = peel(current)
        if layer is None:
            break
        if layer.floor:
            floors.append(layer.floor)
        if layer.scripts:
            floors.append("a runner starting a shell script is not analysed")
        if not layer.inner:
            break
        current = layer.inner
        forms.append(join_words(current))
    if current and "/" in current[0].text:
        forms.append(join_words([Word(current[0].text.rsplit("/", 1)[-1], ""), *current[1:]]))
    return forms


def _variable_names(name: str, argv: Sequence[Word]) -> list[Word]:
    """The arguments of a builtin that name variables."""
    args = list(argv[1:])
    if name in ("printf", "wait"):
        return attached(args, "-v" if name == "printf" else "-p")
    if name in ("test", "["):
        return [args[i + 1] for i in range(len(args) - 1) if args[i].text == "-v"]
    if name == "read":
        result = scan(args, "adinNptu")
        return result.operands + result.values("-a")
    if name in ("mapfile", "readarray"):
        return scan(args, "dnOsuCc").operands
    if name == "getopts":
        return args[1:2]
    return args


_NO_EXTRA = _Extra()  # shared, never mutated: no wrapper was peeled

"""The statement walker: every place in a bash syntax tree where a command can run."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.model import Unit
from askgate.policy.shell.argv import names
from askgate.policy.shell.base import REDIRECT_TYPES, Frame, Redirects, SinkLike, in_context
from askgate.policy.shell.builtins import BuiltinMixin
from askgate.policy.shell.cwd import Cwd, Probe
from askgate.policy.shell.evaluating import evaluating_expansions
from askgate.policy.shell.unexplained import hidden_substitutions
from askgate.policy.shell.words import Node, Word

MAX_REPARSE_DEPTH = 6
SWEEP_BUDGET_SECONDS = 0.25
MAX_NESTING = 60

_SUBSTITUTIONS = names("command_substitution process_substitution")
_WORD_LIKE = names(
    "word string raw_string ansi_c_string translated_string concatenation simple_expansion "
    "expansion command_substitution process_substitution arithmetic_expansion "
    "brace_expression number"
)

Parse = Callable[[bytes], Node]  # bytes -> root node

# Source with no quoting, expansion, grouping, test or comment syntax: when it also holds no
# reserved word, every command-like node is a simple command lying between two separators,
# so there are at most (separators + 1) of them. An `&` touching `<` or `>` is part of a
# redirection (`2>&1`, `&>f`); `|&` and `;;` count extra: the bound only ever errs high,
# and a high bound just means the sweep runs.
_FLAT_SOURCE = lazy_compile(rb"[A-Za-z0-9_./:=@%+,~*?<> \t\n;&|-]*")
_SEPARATOR = lazy_compile(rb"&&|\|\||(?<![<>])&(?!>)|[;|\n]")
_RESERVED_WORD = lazy_compile(
    rb"(?<![^\s;&|<>])(?:if|then|else|elif|fi|for|while|until|do|done|case|esac|select|"
    rb"function|time|coproc|in)(?![^\s;&|<>])"
)


# Quoted strings that expand nothing ('…', or "…" with no dollar, backquote or backslash)
# hold no command: for the bound each is one plain word. Pairing quotes left to right is
# what bash does, and a `"` the pattern cannot pair stays in the text, which then is not
# flat. Not with a heredoc, whose body is text where quotes pair nothing.
_INERT_QUOTED = lazy_compile(rb"'[^']*'|\"[^\"$`\\]*\"")


# A value `while read f` may stand for: plain characters only (bash prints them as written).
_PLAIN_VALUE = re.compile(r"~?[A-Za-z0-9._/+,:@=-]*")
_MAX_READ_VALUES = 16


def _sets_variable(name: str, body: str) -> bool:
    """Whether a loop body may set `name` (then `$name` is not the loop's value)."""
    return bool(
        re.search(
            rf"\b{re.escape(name)}\+?=|\b(?:read|mapfile|readarray|getopts|printf|declare|"
            rf"local|typeset|export|let|unset|eval|source)\b|\.\s",
            body,
        )
    )


def _flat_command_bound(src: bytes) -> int:
    """At most how many command-like nodes src parses into; -1 when that is not obvious."""
    if (b"'" in src or b'"' in src) and b"<<" not in src:
        src = _INERT_QUOTED.sub(b"x", src)
    if not _FLAT_SOURCE.fullmatch(src) or _RESERVED_WORD.search(src):
        return -1
    return len(_SEPARATOR.findall(src)) + 1


def _flatten_list(node: Node) -> list[Node]:
    """The statements of a (left- or right-nested) list, in order."""
    items: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "list":
            named = [c for c in current.children if c.is_named and c.type != "comment"]
            stack.extend(reversed(named))
        else:
            items.append(current)
    return items


def _operator_after(src: bytes, items: Sequence[Node], index: int) -> bytes:
    """The list operator between items[index] and the next (b"" after the last)."""
    if index + 1 >= len(items):
        return b""
    between = src[items[index].end_byte : items[index + 1].start_byte].lstrip()
    return between[:2]


class Sink(SinkLike):
    """Everything one analysis collects; shared by the walkers of re-parsed strings."""

    __slots__ = (
        "cwd_functions",
        "find_commands",
        "floors",
        "functions",
        "glob_options",
        "integers",
        "lastpipe",
        "links",
        "moves_redefined",
        "parse",
        "probe",
        "process_substitutions",
        "units",
    )

    def __init__(self, parse: Parse, find_commands: Callable[[Node], list[Node] | None]) -> None:
        self.units: list[Unit] = []
        self.floors: list[str] = []
        self.cwd_functions: set[str] = set()
        self.functions: set[str] = set()  # every function name defined (SHADOWED_NAMES)
        # Why cd/pushd/popd may not do what they say (redefined, disabled), or None.
        self.moves_redefined: str | None = None
        self.lastpipe = False  # `shopt -s lastpipe`: the last pipeline stage is this shell
        self.links: list[tuple[str, str | None, int]] = []  # (name, target, maker unit)
        self.process_substitutions = False  # `/dev/fd/N` may be one of ours
        self.integers: set[str] = set()  # variables only ever set to literal integers
        # Why globs may not expand as bash's defaults say (`shopt -s dotglob` …), or None.
        self.glob_options: str | None = None
        self.probe: Probe | None = None  # does a directory exist now (cwd.py)? None: unknown
        self.parse = parse
        self.find_commands = find_commands


class Walker(BuiltinMixin):
    """Walks one parsed source (the command, or a string re-parsed from it) into units.

    `state` (a Cwd) flows through a sequence of statements and is copied where bash
    forks (subshells, pipeline stages, substitutions, background jobs); `frame` carries
    what the surroundings impose (context, floors, inherited redirects).
    """

    sink: Sink  # the concrete sink; the mixins see it through base.SinkLike

    def __init__(self, sink: Sink, src: bytes) -> None:
        self.sink = sink
        self.src = src
        self.ascii_src = src.decode("ascii") if src.isascii() else None
        self.visited: set[int] = set()
        self.redirect_words_taken: set[int] = set()
        self.nesting = 0
        self.piped_text: str | None = None
        self.piped_lines: list[str] | None = None  # the lines it prints, when exactly known
        self.shallow = False  # set by sweep(): substitutions are handled one by one
        self.clean = False  # the tree parsed without errors (set by program())
        # `for f in src/*.py`: inside the body, `$f` stands for this word (loop_variable).
        self.loop_values: dict[str, Word] = {}

    # -- entry points -------------------------------------------------------------

    def program(self, root: Node, state: Cwd, frame: Frame) -> None:
        self.clean = not root.has_error
        self.sink.floors.extend(evaluating_expansions(root, self.src, self.sink.integers))
        self.statements(root, state, frame)
        for text in hidden_substitutions(root, self.src):
            # Code the tree kept as a word (``${x:-`cmd`}``): ask, and parse that text
            # again so deny rules see the commands in it.
            reason = f"`{text[:80]}` holds an expansion the parser kept as plain text"
            self.sink.floors.append(reason)
            floor = f"{frame.floor}; {reason}" if frame.floor else reason
            self.reparse(Word(text, text), "hidden substitution", frame._replace(floor=floor),
                         state.copy())  # fmt: skip

    def reparse(self, script: Word, context: str, frame: Frame, state: Cwd) -> int:
        """Analyse a string that a wrapper runs as shell source (`bash -c`, `eval` …)."""
        if frame.depth >= MAX_REPARSE_DEPTH:
            self.sink.floors.append("commands nested in strings too deeply to analyse")
            return 0
        text = script.text
        if not text.strip():
            return 0
        src = text.encode("utf-8", "replace")
        root = self.sink.parse(src)
        inner_frame = frame._replace(depth=frame.depth + 1, context=context)
        if root.has_error:
            reason = f"the string run by {context} does not parse cleanly"
            # Like the outer command not parsing: bash may read it differently.
            self.sink.floors.append(reason)
            inner_frame = inner_frame._replace(
                floor=f"{frame.floor}; {reason}" if frame.floor else reason
            )
        before = len(self.sink.units)
        walker = Walker(self.sink, src)
        walker.program(root, state, inner_frame)
        walker.sweep(root, state, inner_frame)
        return len(self.sink.units) - before

    def sweep(self, root: Node, state: Cwd, frame: Frame) -> None:
        """Safety net: a command the walk did not reach still becomes a unit (floored)."""
        visited = self.visited
        # visited holds only command-like nodes of this tree: when it is as large as the
        # bound, the walk reached every one of them and the search would find nothing.
        if not root.has_error and len(visited) == _flat_command_bound(self.src):
            return
        found = self.sink.find_commands(root)
        if found is None:
            self.sink.floors.append("the command is too complex to check completely")
            return
        missed = [n for n in found if n.id not in visited]
        if not missed:
            return
        missed.sort(key=lambda n: (n.start_byte, -n.end_byte))
        reason = "a command in a place the analyser does not model"
        floor = f"{frame.floor}; {reason}" if frame.floor else reason
        # Every missed command is in `missed` itself: do not descend again (that would
        # make deeply nested input quadratic).
        self.shallow = True
        deadline = time.monotonic() + SWEEP_BUDGET_SECONDS
        for index, node in enumerate(missed):
            if index % 64 == 63 and time.monotonic() > deadline:
                self.sink.floors.append("the command is too complex to check completely")
                return
            if node.id not in visited:
                self.statement(node, state.copy(), frame._replace(floor=floor))

    # -- statements ---------------------------------------------------------------

    def statements(self, parent: Node, state: Cwd, frame: Frame, piped: bool = False) -> None:
        children = parent.children
        count = len(children)
        for index, child in enumerate(children):
            if not child.is_named:
                continue
            background = index + 1 < count and children[index + 1].type == "&"
            if background:
                self.statement(child, state.copy(), frame, piped)
                continue
            configs, fallible = state.configs, state.fallible
            self.statement(child, state, frame, piped)
            if state.fallible != fallible and state.configs != configs:
                # The change may have failed: both places are possible.
                state.union([state.snapshot(configs, fallible)])

    def statement(
        self,
        node: Node,
        state: Cwd,
        frame: Frame,
        piped: bool = False,
        tail: Sequence[Node] = (),
    ) -> None:
        if self.nesting >= MAX_NESTING:
            self.sink.floors.append("the command nests too deeply to analyse")
            return
        self.nesting += 1
        try:
            self._dispatch(node, state, frame, piped, tail)
        finally:
            self.nesting -= 1

    def _dispatch(
        self, node: Node, state: Cwd, frame: Frame, piped: bool, tail: Sequence[Node]
    ) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, state, frame, tail, piped)
        elif kind == "redirected_statement":
            self.redirected(node, state, frame, piped, tail)
        elif kind == "list":
            # Flattened without recursion: a chain of a thousand `&&` is a thousand units,
            # not a thousand levels of nesting.
            items = _flatten_list(node)
            failed: list[Cwd] = []  # where the shell stays if a directory change failed
            src = self.src
            for index, child in enumerate(items):
                last = index == len(items) - 1
                configs, fallible = state.configs, state.fallible
                self.statement(child, state, frame, piped, tail if last else ())
                if state.configs is not configs and state.configs != configs:
                    before = state.snapshot(configs, fallible)
                    if state.fallible != fallible:
                        failed.append(before)
                    if index and _operator_after(src, items, index - 1) == b"||":
                        # `a || b`: where a succeeded, b never ran.
                        state.union([before])
                if failed and _operator_after(src, items, index) != b"&&":
                    # `a && b` runs b only where a succeeded; after `;`, `||` (or
                    # the end of the list) the shell may be where a failed.
                    state.union(failed)
                    failed.clear()
        elif kind == "pipeline":
            self.pipeline(node, state, frame, piped, tail)
        elif kind == "subshell":
            frame = self.inherit(tail, state, frame)
            self.statements(node, state.copy(), in_context(frame, "subshell"), piped)
        elif kind == "compound_statement":
            frame = self.inherit(tail, state, frame)
            if node.child_count and node.children[0].type == "((":
                self.arithmetic(node, state, frame)
            else:
                self.statements(node, state, frame, piped)
        elif kind in ("negated_command", "do_group", "else_clause"):
            named = [c for c in node.children if c.is_named and c.type != "comment"]
            for index, child in enumerate(named):
                last = index == len(named) - 1
                self.statement(child, state, frame, piped, tail if last else ())
        elif kind == "if_statement":
            self.if_statement(node, state, self.inherit(tail, state, frame), piped)
        elif kind in ("while_statement", "for_statement", "c_style_for_statement"):
            self.loop(node, state, self.inherit(tail, state, frame), piped)
        elif kind == "case_statement":
            self.case_statement(node, state, self.inherit(tail, state, frame), piped)
        elif kind == "function_definition":
            self.function(node, state, frame)
        elif kind in ("variable_assignment", "variable_assignments"):
            self.bare_assignments(node, state, frame, tail)
        elif kind == "declaration_command":
            self.declaration(node, state, frame, tail)
        elif kind == "unset_command":
            self.unset(node, state, frame, tail)
        elif kind == "test_command":
            self.test(node, state, frame, tail)
        elif kind in REDIRECT_TYPES:
            self.redirect_only([node, *tail], state, frame)
        elif kind in ("comment", "heredoc_end", "heredoc_start"):
            pass
        elif kind in _SUBSTITUTIONS:
            self.nested(node, node.type.replace("_", " "), state, frame)
        else:
            self.loose(node, state, frame, piped)

    def redirected(
        self, node: Node, state: Cwd, frame: Frame, piped: bool, tail: Sequence[Node]
    ) -> None:
        body = node.child_by_field_name("body")
        redirects = [c for c in node.children if c.type in REDIRECT_TYPES]
        redirects.extend(tail)
        if body is None:
            self.redirect_only(redirects, state, frame)
        elif body.type == "command":
            self.command(body, state, frame, redirects, piped)
        elif body.type in ("list", "pipeline", "redirected_statement", "negated_command"):
            # tree-sitter hangs `a && b > f` on the whole list; bash gives it to `b`.
            self.statement(body, state, frame, piped, redirects)
        else:
            inherited = self.inherit(redirects, state, frame)
            lines = self.substituted_lines(body, redirects)
            if lines is not None:
                self.piped_lines = lines  # `while read f; …; done < <(printf …)`
            try:
                self.statement(body, state, inherited, piped)
            finally:
                if lines is not None:
                    self.piped_lines = None

    def substituted_lines(self, body: Node, redirects: Sequence[Node]) -> list[str] | None:
        """`while …; done < <(echo WORDS)`: the lines of a literal producer."""
        if body.type != "while_statement" or len(redirects) != 1:
            return None
        redirect = redirects[0]
        if redirect.type != "file_redirect" or not self.text(redirect).startswith("<"):
            return None
        target = redirect.child_by_field_name("destination")
        if target is None or target.type != "process_substitution":
            return None
        inner = [c for c in target.children if c.is_named and c.type != "comment"]
        return self.static_lines(inner[0]) if len(inner) == 1 else None

    def inherit(self, redirects: Sequence[Node], state: Cwd, frame: Frame) -> Frame:
        """Redirects of a compound statement belong to every command inside it."""
        if not redirects:
            return frame
        info = self.redirects(redirects, state, frame)
        floor = frame.floor
        if info.floors:
            reason = "; ".join(info.floors)
            floor = f"{floor}; {reason}" if floor else reason
        for trailing, is_piped in info.trailing:
            self.statement(trailing, state.copy(), frame, piped=is_piped)
        return frame._replace(
            reads=frame.reads + tuple(info.reads),
            writes=frame.writes + tuple(info.writes),
            floor=floor,
        )

    def redirect_only(self, redirects: Sequence[Node], state: Cwd, frame: Frame) -> None:
        info = self.redirects(redirects, state, frame)
        text = " ".join(" ".join(self.text(r).split()) for r in redirects)
        self.add_unit(text, (), info.reads, info.writes, info.floors, frame, state)
        for trailing, is_piped in info.trailing:
            self.statement(trailing, state.copy(), frame, piped=is_piped)

    def pipeline(
        self, node: Node, state: Cwd, frame: Frame, piped: bool, tail: Sequence[Node]
    ) -> None:
        stages = [c for c in node.children if c.is_named and c.type != "comment"]
        if frame.context == "command":
            frame = in_context(frame, "pipeline")
        previous_output: str | None = None
        previous_lines: list[str] | None = None
        for index, stage in enumerate(stages):
            last = index == len(stages) - 1
            self.piped_text = previous_output if index > 0 else None
            self.piped_lines = previous_lines if index > 0 else None
            # Every stage runs in its own subshell: a cd there does not leak (except
            # the last one under `shopt -s lastpipe`).
            stage_state = state if last and self.sink.lastpipe else state.copy()
            before = state.copy() if stage_state is state else None
            self.statement(stage, stage_state, frame, piped or index > 0, tail if last else ())
            if before is not None and not state.same(before) and state.fallible != before.fallible:
                state.union([before])
            self.piped_text = None
            self.piped_lines = None
            previous_output = self.static_output(stage) if not last else None
            previous_lines = self.static_lines(stage) if not last else None

    def static_output(self, stage: Node) -> str | None:
        """What `echo 'literal'`, `printf 'literal'` or `cat <<EOF` print, when it is fixed."""
        if not self.src.startswith((b"echo", b"printf", b"cat"), stage.start_byte):
            return None
        body = stage.child_by_field_name("body") if stage.type == "redirected_statement" else stage
        if body is None or body.type != "command":
            return None
        name = body.child_by_field_name("name")
        if name is None or name.text not in (b"echo", b"printf", b"cat"):
            return None
        argv = self.words([c for c in body.children if c.is_named and c.type != "command_name"
                           and c.type not in REDIRECT_TYPES], Cwd(), Frame())  # fmt: skip
        if any(not w.static for w in argv):
            return None
        if name.text == b"cat":
            if argv:
                return None
            heredocs = [c for c in stage.children if c.type in ("heredoc_redirect",
                                                                "herestring_redirect")]  # fmt: skip
            if len(heredocs) != 1:
                return None
            info = self.redirects(heredocs, Cwd(), Frame())
            return info.stdin_text
        return " ".join(w.text for w in argv if not w.text.startswith("-"))

    def static_lines(self, stage: Node) -> list[str] | None:
        """The lines `echo WORDS` or `printf '%s\\n' WORDS` print, when they are exactly the
        words as written: no options, escapes, quotes or expansions (anything else, and
        any other producer: None, the lines are unknown)."""
        if stage.type != "command" or not self.src.startswith(
            (b"echo ", b"printf "), stage.start_byte
        ):
            return None
        name = stage.child_by_field_name("name")
        if name is None or name.text not in (b"echo", b"printf"):
            return None
        parts = [c for c in stage.children if c.is_named and c.type != "command_name"]
        argv = self.words(parts, Cwd(), Frame())
        if not argv or any(not w.static for w in argv):
            return None
        if name.text == b"printf":
            if argv[0].text != "%s\\n":
                return None
            argv = argv[1:]
        if len(argv) > _MAX_READ_VALUES or any(
            w.source != w.text or w.text[:1] == "-" or not _PLAIN_VALUE.fullmatch(w.text)
            for w in argv
        ):
            return None
        if name.text == b"echo":
            return [" ".join(w.text for w in argv)] if argv else None
        return [w.text for w in argv]

    def read_variable(self, node: Node) -> str | None:
        """`while read [-r] NAME` (one variable, nothing else): NAME."""
        condition = node.child_by_field_name("condition")
        if condition is None or condition.type != "command":
            return None
        name = condition.child_by_field_name("name")
        if name is None or name.text != b"read":
            return None
        args = [self.text(c) for c in condition.children if c.is_named and c.type != "command_name"]
        if args[:1] == ["-r"]:
            args = args[1:]
        if len(args) != 1 or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", args[0]):
            return None
        return args[0]

    # -- control flow -------------------------------------------------------------

    def if_statement(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        branches: list[Cwd] = []
        current: Cwd | None = None
        has_else = False
        children = node.children
        for index, child in enumerate(children):
            if not child.is_named or child.type == "comment":
                continue
            if node.field_name_for_child(index) == "condition":
                self.statement(child, state, frame)
            elif child.type in ("elif_clause", "else_clause"):
                branch = state.copy()
                has_else = has_else or child.type == "else_clause"
                self.clause(child, branch, frame, piped)
                branches.append(branch)
            else:
                if current is None:
                    current = state.copy()
                    branches.append(current)
                self.statement(child, current, frame, piped)
        if not has_else:
            branches.append(state.copy())
        state.merge(branches)

    def clause(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        for child in node.children:
            if child.is_named and child.type != "comment":
                self.statement(child, state, frame, piped)

    def case_statement(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        branches: list[Cwd] = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "value":
                self.words([child], state, frame, "pattern")
            elif child.type == "case_item":
                branch = state.copy()
                for item_index, part in enumerate(child.children):
                    if not part.is_named or part.type == "comment":
                        continue
                    if child.field_name_for_child(item_index) == "value":
                        self.words([part], state, frame, "pattern")
                    else:
                        self.statement(part, branch, frame, piped)
                branches.append(branch)
        branches.append(state.copy())
        state.merge(branches)

    def loop(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        """A cd inside a loop moves every later iteration: walk again with the cwd unknown."""
        before = state.copy()
        units_mark, floors_mark = len(self.sink.units), len(self.sink.floors)
        self.loop_parts(node, state, frame, piped)
        if not state.same(before):
            del self.sink.units[units_mark:]
            del self.sink.floors[floors_mark:]
            state.assign(before)
            state.lose("runs in a loop that changes directory")
            self.loop_parts(node, state, frame, piped)

    def loop_variable(self, node: Node, state: Cwd, frame: Frame) -> tuple[str, Word] | None:
        """`for f in ONE_WORD` whose value is static or a glob, and a body that does not
        set f: inside the body `$f` / "$f" stand for that word (a glob is expanded when
        the engine decides)."""
        if node.type != "for_statement":
            return None
        variable = node.child_by_field_name("variable")
        values = node.children_by_field_name("value")
        body = node.child_by_field_name("body")
        if variable is None or len(values) != 1 or body is None:
            return None
        name = self.text(variable)
        word = self.words(values, Cwd(), Frame())
        if len(word) != 1 or not (word[0].static or (word[0].dynamic or "").startswith("glob")):
            return None
        if ";" in (word[0].dynamic or "") or _sets_variable(name, self.text(body)):
            return None
        return name, word[0]

    def loop_parts(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        if node.type == "c_style_for_statement":
            header = [c for c in node.children if c.type != "do_group" and c.is_named]
            for part in header:
                self.nested(part, "arithmetic", state, frame)
            close = next((c for c in node.children if c.type == "))"), None)
            end = close.end_byte if close is not None else node.end_byte
            text = " ".join(self.src[node.start_byte : end].decode("utf-8", "replace").split())
            reason = "arithmetic loops evaluate variables, which can run commands"
            self.add_unit(text, (), (), (), [reason], frame, state, "arithmetic")
        loop_value = self.loop_variable(node, state, frame)
        lines = self.piped_lines if node.type == "while_statement" else None
        if lines:
            # `printf '%s\\n' a b | while read f; do …; done`: the body runs once per line,
            # `$f` standing for it (from any other producer `$f` stays unknown: ask).
            variable = self.read_variable(node)
            body = node.child_by_field_name("body")
            if (
                variable is not None
                and body is not None
                and not _sets_variable(variable, self.text(body))
            ):
                self.piped_lines = None
                for index, child in enumerate(node.children):
                    if node.field_name_for_child(index) == "condition":
                        self.statement(child, state, frame, piped)
                for line in lines:
                    self.bound_body(body, variable, Word(line, line), state, frame, piped)
                return
        for index, child in enumerate(node.children):
            kind = child.type
            if kind == "select":
                self.sink.floors.append("select is not analysed")
            if not child.is_named or kind == "comment":
                continue
            field = node.field_name_for_child(index)
            if node.type == "c_style_for_statement" and kind != "do_group":
                continue
            if field == "value":
                self.words([child], state, frame)
            elif field == "variable":
                continue
            elif field == "body" and loop_value is not None:
                self.bound_body(child, loop_value[0], loop_value[1], state, frame, piped)
            else:
                self.statement(child, state, frame, piped)

    def bound_body(
        self, body: Node, name: str, value: Word, state: Cwd, frame: Frame, piped: bool
    ) -> None:
        """Walk a loop body with `$name` standing for `value`."""
        previous = self.loop_values.get(name)
        self.loop_values[name] = value
        try:
            self.statement(body, state, frame, piped)
        finally:
            if previous is None:
                del self.loop_values[name]
            else:
                self.loop_values[name] = previous

    def function(self, node: Node, state: Cwd, frame: Frame) -> None:
        """A function body's commands are units where it is defined (calls are not traced)."""
        name_node = node.child_by_field_name("name")
        name = self.text(name_node) if name_node is not None else ""
        body = node.child_by_field_name("body")
        body_state = state.copy()
        redirects = [c for c in node.children if c.type in REDIRECT_TYPES]
        inner = self.inherit(redirects, state, frame._replace(context="function"))
        if body is not None:
            self.statement(body, body_state, inner)
        self.sink.functions.add(name)
        if not body_state.same(state) and name:
            self.sink.cwd_functions.add(name)

    def loose(self, node: Node, state: Cwd, frame: Frame, piped: bool) -> None:
        """ERROR nodes and other debris: walk statements, and make the stray words a unit."""
        pending: list[Node] = []
        children = [node] if node.type in _WORD_LIKE else node.children

        def flush() -> None:
            if not pending:
                return
            words = self.words(pending, state, frame)
            pending.clear()
            words = [w for w in words if w.text.strip()]
            if words:
                reason = "part of a command that does not parse"
                self.run(words, (), Redirects(), [reason], state, frame, piped)

        for child in children:
            kind = child.type
            if kind == "command_name":
                pending.extend(child.children)
            elif kind in _WORD_LIKE:
                pending.append(child)
            else:
                flush()
                if child.is_named:
                    self.statement(child, state, frame, piped)
        flush()

    # -- substitutions ----------------------------------------------------------------

    def nested(self, node: Node, kind: str, state: Cwd, frame: Frame) -> None:
        """Commands inside $( ), backticks, <( ), >( ), found anywhere under node."""
        if self.shallow:
            return
        if node.type in _SUBSTITUTIONS:
            if kind == "heredoc":
                context = "heredoc"
            elif node.type == "process_substitution":
                context = "process substitution"
            else:
                context = "command substitution"
            inner = frame._replace(context=context, alternates=(), reads=(), writes=())
            # Commands in >( ) read what the outer command writes into the pipe.
            piped = node.type == "process_substitution" and node.children[0].type == ">("
            self.statements(node, state.copy(), inner, piped)
            return
        stack = list(reversed(node.children))
        while stack:
            child = stack.pop()
            if child.type in _SUBSTITUTIONS:
                self.nested(child, kind, state, frame)
            elif child.child_count:
                stack.extend(reversed(child.children))

"""Statements that are not simple commands: assignments, declarations, tests, arithmetic."""

from __future__ import annotations

from collections.abc import Sequence

from askgate.policy.lazy_regex import lazy_compile
from askgate.policy.shell.base import Frame
from askgate.policy.shell.commands import CommandMixin
from askgate.policy.shell.cwd import Cwd
from askgate.policy.shell.pathargs import FILE_TESTS, Paths, operand_value
from askgate.policy.shell.variables import declaration_floors
from askgate.policy.shell.words import Node, Word, synthetic

_ARITHMETIC_TEST = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_FILE_PAIR_TESTS = frozenset({"-nt", "-ot", "-ef"})
_IDENTIFIER = lazy_compile(r"[A-Za-z_]")
_INTEGER = lazy_compile(r"[+-]?\d+")


class BuiltinMixin(CommandMixin):
    # -- commands that are not simple commands ------------------------------------

    def bare_assignments(self, node: Node, state: Cwd, frame: Frame, tail: Sequence[Node]) -> None:
        parts = [node] if node.type == "variable_assignment" else list(node.named_children)
        floors: list[str] = []
        texts = [self.assignment(p, state, frame, floors) for p in parts if p.type ==
                 "variable_assignment"]  # fmt: skip
        redirects = self.redirects(tail, state, frame)
        floors.extend(redirects.floors)
        named = _exported_paths(texts) if _EXPORTS.search(self.src) else None
        if floors or tail or named is not None:
            self.add_unit(" ".join(texts), (), redirects.reads, redirects.writes, floors, frame,
                          state, "assignment", paths=named)  # fmt: skip

    def declaration(self, node: Node, state: Cwd, frame: Frame, tail: Sequence[Node]) -> None:
        self.visited.add(node.id)
        keyword = node.children[0].type if node.child_count else "declare"
        floors: list[str] = []
        words: list[Word] = []
        others: list[Node] = []
        for child in node.children[1:]:
            if child.type == "variable_assignment":
                if others:
                    words.extend(self._loose_words(others, state, frame, floors))
                    others = []
                words.append(self.assignment_word(child, state, frame, floors))
            elif child.is_named:
                others.append(child)
        words.extend(self._loose_words(others, state, frame, floors))
        texts = [keyword, *(w.text for w in words)]
        floors.extend(declaration_floors(keyword, words))
        redirects = self.redirects(tail, state, frame)
        floors.extend(redirects.floors)
        self.add_unit(" ".join(texts), (), redirects.reads, redirects.writes, floors, frame,
                      state, paths=_exported_paths(texts[1:]))  # fmt: skip

    def _loose_words(
        self, nodes: Sequence[Node], state: Cwd, frame: Frame, floors: list[str]
    ) -> list[Word]:
        words = self.words(nodes, state, frame)
        for word in words:
            if word.dynamic:
                floors.append(f"argument is only known at run time: {word.dynamic}")
            if "[" in word.text and not word.text.startswith("-"):
                floors.append(f"array subscript in `{word.source}` is evaluated as arithmetic")
        return words

    def unset(self, node: Node, state: Cwd, frame: Frame, tail: Sequence[Node]) -> None:
        self.visited.add(node.id)
        floors: list[str] = []
        texts = ["unset", *(w.text for w in self._loose_words(node.named_children, state,
                                                               frame, floors))]  # fmt: skip
        floors.extend(declaration_floors("unset", [Word(t, t) for t in texts[1:]]))
        redirects = self.redirects(tail, state, frame)
        self.add_unit(" ".join(texts), (), redirects.reads, redirects.writes,
                      floors + redirects.floors, frame, state)  # fmt: skip

    def test(self, node: Node, state: Cwd, frame: Frame, tail: Sequence[Node]) -> None:
        """`[[ … ]]` and `[ … ]` (tree-sitter parses both as test_command)."""
        self.visited.add(node.id)
        opener = node.children[0].type if node.child_count else "[["
        mode = "pattern" if opener == "[[" else "arg"
        words: list[Word] = []
        self._flatten(node.children[1:-1], words, state, frame, mode)
        floors: list[str] = []
        reads: list[str] = []
        for index, word in enumerate(words):
            if word.dynamic:
                floors.append(f"argument is only known at run time: {word.dynamic}")
            if word.static and word.text in FILE_TESTS and index + 1 < len(words):
                reads.append(words[index + 1].text)
            if word.static and word.text in _FILE_PAIR_TESTS and 0 < index < len(words) - 1:
                reads.extend([words[index - 1].text, words[index + 1].text])
            if opener == "[[" and word.text in _ARITHMETIC_TEST:
                operands = words[index - 1 : index] + words[index + 1 : index + 2]
                if any(not _INTEGER.fullmatch(w.text) for w in operands):
                    floors.append("[[ … -eq … ]] evaluates variable names as arithmetic")
            if word.text == "-v" and index + 1 < len(words) and "[" in words[index + 1].text:
                floors.append("-v with an array subscript evaluates it as arithmetic")
        redirects = self.redirects(tail, state, frame)
        closer = "]]" if opener == "[[" else "]"
        text = " ".join([opener, *(w.text for w in words), closer])
        self.add_unit(text, (), [*reads, *redirects.reads], redirects.writes,
                      floors + redirects.floors, frame, state)  # fmt: skip

    def _flatten(
        self, nodes: Sequence[Node], out: list[Word], state: Cwd, frame: Frame, mode: str
    ) -> None:
        pending: list[Node] = []

        def flush() -> None:
            if pending:
                out.extend(self.words(pending, state, frame, mode))
                pending.clear()

        for child in nodes:
            kind = child.type
            if kind in (
                "binary_expression",
                "unary_expression",
                "parenthesized_expression",
                "negated_expression",
                "postfix_expression",
                "ternary_expression",
            ):
                flush()
                self._flatten(child.children, out, state, frame, mode)
            elif kind == "test_operator" or not child.is_named:
                flush()
                out.append(synthetic(self.text(child)))
            elif kind == "comment":
                continue
            else:
                pending.append(child)
        flush()

    def arithmetic(self, node: Node, state: Cwd, frame: Frame) -> None:
        """`(( … ))`: runs nothing itself, but evaluating variables can."""
        self.nested(node, "arithmetic", state, frame)
        text = " ".join(self.text(node).split())
        body = text[2:-2]
        floors = []
        if "$" in body or "`" in body or _IDENTIFIER.search(body):
            floors.append("arithmetic on variables can run commands hidden in their values")
        self.add_unit(text, (), (), (), floors, frame, state, "arithmetic")


# A command that exports variables: `export`, `declare|typeset -x`, `set -a`, allexport.
_EXPORTS = lazy_compile(rb"\bexport\b|\b(?:declare|typeset|local)\s+-\w*x|\bset\s+-\w*a|allexport")


def _exported_paths(texts: Sequence[str]) -> Paths | None:
    """`export GIT_TRACE=~/.bashrc`: a program may write (git's trace) or read the file a
    variable in its environment names, so each `NAME=path` value is an argument of
    unknown role of the unit that sets it (a read, and a write that only tightens)."""
    paths = Paths()
    for text in texts:
        value = operand_value(Word(text, text))
        if value is not None:
            paths.operand(value)
    return paths if paths.operands else None

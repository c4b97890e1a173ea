"""Redirects: which files a command reads and writes, and what arrives on its stdin."""

from __future__ import annotations

import re
from collections.abc import Sequence

from askgate.policy.shell.base import NO_REDIRECTS, Base, Frame, Redirects
from askgate.policy.shell.cwd import Cwd
from askgate.policy.shell.words import Node, Word

# `<&-` and `>&-` close a descriptor and take no target: tree-sitter-bash lexes them as one
# operator and hangs the next word (`cat 0<&- .env`) on the redirect as if it were the target.
_CLOSING = frozenset({"<&-", ">&-"})


class RedirectMixin(Base):
    # -- redirects --------------------------------------------------------------

    def redirects(self, nodes: Sequence[Node], state: Cwd, frame: Frame) -> Redirects:
        if not nodes:
            return NO_REDIRECTS
        result = Redirects()
        for node in nodes:
            if node.type == "file_redirect":
                self.file_redirect(node, state, frame, result)
            elif node.type == "heredoc_redirect":
                self.heredoc(node, state, frame, result)
            elif node.type == "herestring_redirect":
                parts = [c for c in node.children if c.is_named and c.type != "file_descriptor"]
                if parts:
                    word = self.words(parts, state, frame, "assign")[0]
                    result.stdin, result.stdin_text = "herestring", word.text
                    result.stdin_literal = word.static and _on_stdin(node)
        if len(nodes) > 1:
            result.stdin_literal = False  # (tree-sitter mis-nests several stdin redirects)
        return result

    def redirect_arguments(self, redirects: Sequence[Node]) -> list[Node]:
        """The words after each file redirect's target: arguments of the command."""
        found: list[Node] = []
        for node in redirects:
            if node.type != "file_redirect":
                continue
            destinations = [c for c in node.children if c.is_named and c.type not in
                            ("file_descriptor", "ERROR")]  # fmt: skip
            groups = self.group(destinations)
            first = 0 if _closes(node) else 1
            if len(groups) > first:
                self.redirect_words_taken.add(node.id)
                found.extend(n for group in groups[first:] for n in group)
        return found

    def file_redirect(self, node: Node, state: Cwd, frame: Frame, result: Redirects) -> None:
        operators: list[str] = []
        descriptor: str | None = None
        destinations: list[Node] = []
        for child in node.children:
            kind = child.type
            if not child.is_named:
                operators.append(kind)
            elif kind == "file_descriptor":
                descriptor = self.text(child)
            elif kind == "ERROR":
                if b">" in child.text:
                    operators.append("<>")  # tree-sitter does not know `<>`
            else:
                destinations.append(child)
        if not destinations:
            return
        groups = self.group(destinations)
        if _CLOSING.intersection(operators):
            # every word is the command's (redirect_arguments), none is a target
            if node.id not in self.redirect_words_taken:
                result.floors.append("words after a closed descriptor are not modelled here")
            return
        if len(groups) > 1:
            # tree-sitter-bash hangs the words after a redirect's target on the redirect
            # (`cat 2>/dev/null .env`); bash gives them to the command: command() takes
            # them as arguments (redirect_arguments). Anywhere else they are not modelled.
            if node.id not in self.redirect_words_taken:
                result.floors.append("words after a redirect target are not modelled here")
            groups = groups[:1]
        for target_nodes in groups:
            word = self.builder(state, frame).build(target_nodes)
            if len(target_nodes) == 1 and target_nodes[0].type == "process_substitution":
                if "<" in operators or "<>" in operators:
                    result.stdin = "pipe"
                continue
            if ">&" in operators or "<&" in operators:
                if word.static and (word.text.isdigit() or word.text in ("-", "")):
                    continue  # duplicating or closing a descriptor
                if "<&" in operators:
                    continue
            if not word.static:
                result.floors.append(f"redirect target `{word.source}` is only known at run time")
            if "<>" in operators:
                result.reads.append(word.text)
                result.writes.append(word.text)
            elif "<" in operators:
                result.reads.append(word.text)
                if descriptor in (None, "0"):
                    result.stdin = "file"
            else:
                result.writes.append(word.text)

    def heredoc(self, node: Node, state: Cwd, frame: Frame, result: Redirects) -> None:
        quoted = False
        for child in node.children:
            kind = child.type
            if kind == "heredoc_start":
                quoted = any(q in child.text for q in (b"'", b'"', b"\\"))
            elif kind == "file_redirect":
                self.file_redirect(child, state, frame, result)
            elif kind == "heredoc_body":
                result.stdin, result.stdin_text = "heredoc", self.text(child)
                result.stdin_literal = quoted and _on_stdin(node)  # (`<<-` strips tabs)
                if not quoted:
                    self.heredoc_body(child, state, frame)
            elif kind == "pipeline":
                for stage in child.named_children:
                    result.trailing.append((stage, True))
            elif child.is_named and kind not in ("heredoc_end", "ERROR", "comment"):
                result.trailing.append((child, False))

    def heredoc_body(self, body: Node, state: Cwd, frame: Frame) -> None:
        """Substitutions in an unquoted heredoc run; tree-sitter leaves backticks as text."""
        heredoc_frame = frame._replace(context="heredoc")
        for child in body.named_children:
            if child.type != "heredoc_content":
                self.nested(child, "heredoc", state, heredoc_frame)
        text = self.text(body)
        for match in re.finditer(r"`((?:[^`\\]|\\.)*)`", text, re.DOTALL):
            inner = re.sub(r"\\([`$\\])", r"\1", match.group(1))
            self.reparse(Word(inner, inner), "heredoc", heredoc_frame, state.copy())


def _on_stdin(node: Node) -> bool:
    """A plain `<<` or `<<<` (no descriptor, no `<<-`, no other redirect of stdin hung on
    it, nothing tree-sitter could not place): its text is what fd 0 reads."""
    for child in node.children:
        kind = child.type
        if kind in ("file_descriptor", "<<-", "ERROR", "heredoc_redirect", "herestring_redirect"):
            return False
        if kind == "file_redirect" and any(
            "<" in c.type or c.type == "ERROR" for c in child.children
        ):
            return False
        if kind == "pipeline" and (not child.children or child.children[0].type != "|"):
            return False  # `cat <<E && a | b`: a pipeline hung on the heredoc, not fed by it
    return True


def _closes(node: Node) -> bool:
    """`cat 0<&- .env`: the redirect closes a descriptor, its words are arguments."""
    return any(not c.is_named and c.type in _CLOSING for c in node.children)

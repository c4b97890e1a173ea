"""Shared pieces of the walker: the frame around statements, words, redirect results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from askgate.policy.model import Unit
from askgate.policy.shell.cwd import Cwd, Probe
from askgate.policy.shell.pathargs import PathsView
from askgate.policy.shell.words import RUNTIME_CHARS, Node, Word, WordBuilder, runtime_reason

REDIRECT_TYPES = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})


class Frame(NamedTuple):
    """What surrounds the statements being walked."""

    context: str = "command"
    alternates: tuple[str, ...] = ()  # outer written forms (`bash -c '…'`) added to every unit
    floor: str | None = None  # every unit here is at least ask, for this reason
    reads: tuple[str, ...] = ()  # redirects of an enclosing compound statement
    writes: tuple[str, ...] = ()
    depth: int = 0  # how many re-parses deep (bash -c inside eval inside …)
    remote: bool = False  # runs on another machine (ssh): its paths are not ours


class Redirects:
    """The redirects of one command, evaluated."""

    __slots__ = ("floors", "reads", "stdin", "stdin_literal", "stdin_text", "trailing", "writes")

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.floors: list[str] = []
        self.stdin: str | None = None  # "pipe" | "heredoc" | "herestring" | "file"
        self.stdin_text: str | None = None
        self.stdin_literal = False  # stdin_text is exactly what fd 0 reads (applypatch.py)
        self.trailing: list[tuple[Node, bool]] = []  # statements tree-sitter hung on a heredoc


NO_REDIRECTS = Redirects()  # shared, never mutated

# Plain words (a lone `word`/`number` node) recur across commands: their `dynamic` reason
# (or _BUILD: has a backslash, needs the full builder) is remembered per text.
_PLAIN_WORD_DYNAMIC: dict[str, object] = {}
_MEMO_LIMIT = 4096
_UNSEEN = object()
_BUILD = object()


def join_words(words: Sequence[Word]) -> str:
    return " ".join([w.text for w in words])


def in_context(frame: Frame, context: str) -> Frame:
    """frame with another context (cheaper than NamedTuple._replace on the hot path)."""
    return frame if frame.context == context else Frame(context, *frame[1:])


class SinkLike:
    """What a walker collects into (walker.Sink)."""

    units: list[Unit]
    floors: list[str]
    cwd_functions: set[str]
    moves_redefined: str | None
    lastpipe: bool
    links: list[tuple[str, str | None, int]]
    process_substitutions: bool
    probe: Probe | None


class Base:
    """State and helpers every part of the walker uses; Walker provides the abstract ones."""

    src: bytes
    ascii_src: str | None  # src as str when it is ASCII (byte offsets are then str offsets)
    visited: set[int]
    redirect_words_taken: set[int]  # file redirects whose trailing words are arguments
    sink: SinkLike
    piped_text: str | None  # what the previous pipeline stage is known to print
    loop_values: dict[str, Word]  # `for f in GLOB`: what `$f` stands for in the body
    clean: bool  # the tree being walked parsed without errors

    # Provided by Walker.
    def nested(self, node: Node, kind: str, state: Cwd, frame: Frame) -> None:
        raise NotImplementedError

    def statement(
        self,
        node: Node,
        state: Cwd,
        frame: Frame,
        piped: bool = False,
        tail: Sequence[Node] = (),
    ) -> None:
        raise NotImplementedError

    def reparse(self, script: Word, context: str, frame: Frame, state: Cwd) -> int:
        raise NotImplementedError

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
    ) -> None:
        raise NotImplementedError

    # -- words ----------------------------------------------------------------

    def builder(self, state: Cwd, frame: Frame, mode: str = "arg") -> WordBuilder:
        return WordBuilder(self.src, lambda node, kind: self.nested(node, kind, state, frame), mode)

    def group(self, nodes: Sequence[Node]) -> list[list[Node]]:
        """Adjacent nodes form one shell word (`r''m`, `a\\<newline>b`)."""
        groups: list[list[Node]] = []
        last_end = -1
        src = self.src
        for node in nodes:
            if node.is_missing:
                continue
            start = node.start_byte
            # Only a gap made of nothing but line continuations joins (a gap that does not
            # start with a backslash cannot be one).
            if groups and (
                start <= last_end
                or (src[last_end] == 92 and not src[last_end:start].replace(b"\\\n", b""))
            ):
                groups[-1].append(node)
            else:
                groups.append([node])
            last_end = node.end_byte
        return groups

    def arguments(self, groups: Sequence[Sequence[Node]], state: Cwd, frame: Frame) -> list[Word]:
        """`words()` for already grouped nodes; a plain word skips the builder."""
        src = self.src
        ascii_src = self.ascii_src
        memo = _PLAIN_WORD_DYNAMIC
        argv: list[Word] = []
        build = None
        for group in groups:
            if len(group) == 1:
                node = group[0]
                kind = node.type
                if kind == "word" or kind == "number":
                    if ascii_src is not None:
                        raw = ascii_src[node.start_byte : node.end_byte]
                    else:
                        raw = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
                    dynamic = memo.get(raw, _UNSEEN)
                    if dynamic is _UNSEEN:
                        if "\\" in raw:
                            dynamic = _BUILD
                        else:
                            reason = runtime_reason(raw) if RUNTIME_CHARS.search(raw) else None
                            dynamic = f"{reason} in `{raw}`" if reason else None
                        if len(memo) >= _MEMO_LIMIT:
                            memo.clear()
                        memo[raw] = dynamic
                    if dynamic is not _BUILD:
                        argv.append(Word(raw, raw, dynamic))  # type: ignore[arg-type]
                        continue
            if build is None:
                build = self.builder(state, frame).build
            argv.append(build(group))
        return argv

    def words(
        self, nodes: Sequence[Node], state: Cwd, frame: Frame, mode: str = "arg"
    ) -> list[Word]:
        if mode == "arg":
            return self.arguments(self.group(nodes), state, frame)
        build = self.builder(state, frame, mode).build
        return [build(group) for group in self.group(nodes)]

    def text(self, node: Node) -> str:
        if self.ascii_src is not None:
            return self.ascii_src[node.start_byte : node.end_byte]
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

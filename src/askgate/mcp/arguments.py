"""Which arguments of an MCP call are paths, URLs or commands, and in which role.

Pure: a tool's name, its arguments, the `inputSchema` and `annotations` the server declared
in `tools/list` in; a list of `Argument`s out. Nothing here decides; `decide.py` checks each
argument against the policy.

How a string is classified (docs/mcp.md, "Arguments"):

* a **command** when the tool is shell-like (its name has a word such as ``shell``, ``exec``,
  ``run``, ``bash``, ``terminal``) and the key is ``command``, ``cmd`` or ``script`` (a list of
  strings there is one argv, shell-joined);
* a **URL** when it is an ``http(s)://`` URL, or its key names a URL (``url``, ``href``,
  ``endpoint``), or its key is ``uri`` (or its schema says ``format: uri``) and it has a web
  scheme; a ``uri`` in the server's own scheme (``memo://…``) is left to the call's rule;
* a **path** when it is a ``file://`` URI, or its key names a path (``path``, ``file``,
  ``directory``, ``source``, ``destination``, …, also ``paths``/``files`` lists), or its
  schema says ``format: path``-like, or it looks like one (starts with ``/``, ``~``,
  ``./``, ``../``) under a key that is not free text (``content``, ``text``, ``query``, …).

A path's role: **write** (checked as a read too) when the key names a destination, the
tool's name has a writing verb, or the server declared ``destructiveHint: true``; **read**
when the key names a source (of a tool that does not move or delete) or the tool's name has
only reading verbs; else **write**, the strictest (an argument askgate cannot classify is
checked as a write and a read).
``readOnlyHint`` never loosens anything: a read-only tool's paths are reads only where the
rules above already say so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from enum import StrEnum
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec

MAX_DEPTH = 32
MAX_VALUES = 2_000
MAX_PATH_LENGTH = 4_096


class Role(StrEnum):
    READ = "read"
    WRITE = "write"
    URL = "url"
    COMMAND = "command"
    # Not checkable: the policy cannot see it, so the call needs a human at least.
    OPAQUE = "opaque"


class Argument(msgspec.Struct, frozen=True):
    """One value of a call the policy looks at: where it sits (``arguments.path``,
    ``arguments.edits[0].path``), what it is and the value to check."""

    where: str
    role: Role
    value: str
    why: str = ""  # for OPAQUE: what could not be checked
    recursive: bool = False  # a READ of a directory and everything below it


# Words of tool names and keys: split on `_`, `-`, `.`, `/`, spaces and camelCase.
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")

SHELL_WORDS = frozenset({"shell", "exec", "execute", "run", "bash", "sh", "zsh", "terminal",
                         "command", "cmd", "powershell", "spawn", "subprocess"})  # fmt: skip
COMMAND_KEYS = frozenset({"command", "cmd", "script", "commandline", "command_line"})
PATH_WORDS = frozenset({"path", "paths", "file", "files", "filename", "filenames", "filepath",
                        "dir", "dirs", "directory", "directories", "folder", "folders",
                        "source", "sources", "src", "destination", "dest", "dst", "root",
                        "roots", "cwd", "location", "workdir",
                        "output"})  # fmt: skip
URL_WORDS = frozenset({"url", "urls", "uri", "uris", "href", "link", "endpoint"})
# Keys that name a web location whatever the scheme (a `uri` may be a server's own scheme).
LOCATOR_WORDS = URL_WORDS - {"uri", "uris"}
# Keys whose values are free text: a value that happens to start with `/` is not a path.
TEXT_WORDS = frozenset({"content", "contents", "text", "body", "message", "query", "pattern",
                        "description", "title", "comment", "prompt", "data", "code", "old",
                        "new", "patterns", "summary", "note", "notes", "regex", "search",
                        "replace", "string", "name", "value", "label", "subject", "diff",
                        "patch"})  # fmt: skip
WRITE_KEY_WORDS = frozenset({"destination", "dest", "dst", "target", "output", "to", "out"})
READ_KEY_WORDS = frozenset({"source", "sources", "src", "from", "input"})
READ_VERBS = frozenset({"read", "get", "list", "search", "find", "view", "show", "cat", "stat",
                        "info", "tree", "glob", "grep", "ls", "head", "tail", "describe",
                        "query", "fetch", "status", "log", "diff", "inspect", "lookup",
                        "count", "check", "allowed", "directories"})  # fmt: skip
WRITE_VERBS = frozenset({"write", "edit", "create", "delete", "remove", "rm", "move", "mv",
                         "rename", "copy", "cp", "mkdir", "put", "set", "update", "save",
                         "append", "patch", "upload", "commit", "add", "push", "apply",
                         "reset", "checkout", "init", "clone", "replace", "insert", "modify",
                         "truncate", "chmod", "chown", "link", "unlink", "install", "branch",
                         "merge", "rebase", "tag", "stash", "restore", "drop", "post",
                         "send", "kill", "stop", "start", "make", "new"})  # fmt: skip
# Verbs that destroy their source: a `source` of a move is written, not read.
# Verbs of tools that read a directory and everything below it.
RECURSIVE_VERBS = frozenset({"search", "tree", "find", "glob", "grep", "walk", "recursive"})
MOVING_VERBS = frozenset({"move", "mv", "rename", "delete", "remove", "rm", "unlink", "drop"})
PATH_FORMATS = frozenset({"path", "file-path", "filepath", "directory"})
URI_FORMATS = frozenset({"uri", "uri-reference", "iri", "iri-reference", "url"})


def words(name: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(name))


class ToolShape(msgspec.Struct, frozen=True):
    """What `classify` needs to know about a tool, from its name and tools/list entry."""

    name: str
    verbs: frozenset[str]
    shell_like: bool
    destructive: bool
    schema: Mapping[str, Any] | None

    @classmethod
    def of(cls, name: str, entry: Mapping[str, Any] | None = None) -> ToolShape:
        entry = entry or {}
        annotations = entry.get("annotations")
        hints = annotations if isinstance(annotations, Mapping) else {}
        schema = entry.get("inputSchema")
        verbs = words(name)
        return cls(
            name=name,
            verbs=verbs,
            shell_like=bool(verbs & SHELL_WORDS),
            destructive=hints.get("destructiveHint") is True,
            schema=schema if isinstance(schema, Mapping) else None,
        )

    @property
    def writes(self) -> bool:
        return self.destructive or bool(self.verbs & WRITE_VERBS)

    @property
    def reads_only(self) -> bool:
        return bool(self.verbs & READ_VERBS) and not self.writes


def classify(shape: ToolShape, arguments: Any) -> list[Argument]:
    """Every path, URL and command in `arguments` (nested objects and arrays too)."""
    out: list[Argument] = []
    if arguments is None:
        return out
    if not isinstance(arguments, Mapping):
        return [Argument("arguments", Role.OPAQUE, "", "the arguments are not an object")]
    budget = [MAX_VALUES]
    _walk(shape, arguments, shape.schema, "arguments", None, 0, budget, out)
    return out


def _walk(
    shape: ToolShape,
    value: Any,
    schema: Mapping[str, Any] | None,
    where: str,
    key: str | None,
    depth: int,
    budget: list[int],
    out: list[Argument],
) -> None:
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        if budget[0] == -1 or depth == MAX_DEPTH + 1:
            out.append(Argument(where, Role.OPAQUE, "", "too many or too deeply nested values"))
        return
    if isinstance(value, Mapping):
        props = schema.get("properties") if schema else None
        for k, v in value.items():
            sub = props.get(k) if isinstance(props, Mapping) else None
            _walk(shape, v, _node(sub), f"{where}.{k}", str(k), depth + 1, budget, out)
        return
    if isinstance(value, list):
        if key is not None and _is_command_key(shape, key) and _all_strings(value):
            out.append(Argument(where, Role.COMMAND, shlex.join(value)))
            return
        items = _node(schema.get("items")) if schema else None
        for n, v in enumerate(value):
            _walk(shape, v, items, f"{where}[{n}]", key, depth + 1, budget, out)
        return
    if isinstance(value, str):
        found = _classify_string(shape, value, schema, key)
        if found is not None:
            role, text = found
            recursive = role is Role.READ and bool(shape.verbs & RECURSIVE_VERBS)
            out.append(Argument(where, role, text, recursive=recursive))


def _node(schema: Any) -> Mapping[str, Any] | None:
    return schema if isinstance(schema, Mapping) else None


def _all_strings(value: list[Any]) -> bool:
    return bool(value) and all(isinstance(v, str) for v in value)


def _is_command_key(shape: ToolShape, key: str) -> bool:
    return shape.shell_like and (key.lower() in COMMAND_KEYS)


def _classify_string(
    shape: ToolShape, value: str, schema: Mapping[str, Any] | None, key: str | None
) -> tuple[Role, str] | None:
    if key is not None and _is_command_key(shape, key):
        return Role.COMMAND, value
    key_words = words(key) if key else frozenset()
    fmt = schema.get("format") if schema else None
    fmt = fmt.lower() if isinstance(fmt, str) else None
    lowered = value[:8].lower()
    if lowered.startswith("file:"):
        path = file_uri_path(value)
        if path is None:
            return Role.OPAQUE, value[:200]
        return _path_role(shape, key_words), path
    if lowered.startswith(("http://", "https://")):
        return Role.URL, value
    text_key = bool(key_words & TEXT_WORDS) and not key_words & (PATH_WORDS | URL_WORDS)
    if key_words & URL_WORDS or fmt in URI_FORMATS:
        if _has_scheme(value):
            if key_words & LOCATOR_WORDS or _web_scheme(value):
                return Role.URL, value
            return None  # `memo://notes/1`: the server's own name space, its rule decides
        if not value:
            return None
        # A "uri" without a scheme is a path (or nonsense: checked as one, strictest).
        return _path_role(shape, key_words), value
    if (key_words & PATH_WORDS and not text_key) or fmt in PATH_FORMATS:
        if not value:
            return None
        return _path_role(shape, key_words), value
    if not text_key and looks_like_path(value):
        return _path_role(shape, key_words), value
    return None


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _has_scheme(value: str) -> bool:
    return _SCHEME.match(value) is not None


def _web_scheme(value: str) -> bool:
    return value[:8].lower().startswith(("http:", "https:", "ftp:", "ftps:", "ws:", "wss:"))


def looks_like_path(value: str) -> bool:
    """A value that names a file by its spelling alone."""
    if not value or len(value) > MAX_PATH_LENGTH or "\n" in value:
        return False
    return value in (".", "..", "~") or value.startswith(("/", "~/", "./", "../"))


def file_uri_path(uri: str) -> str | None:
    """The local path of a ``file:`` URI; None for one that names another host or cannot
    be read as a path (checked as opaque: a human decides)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
        return None
    if parts.query or parts.fragment:
        return None
    path = unquote(parts.path, errors="surrogateescape")
    return path if path.startswith("/") else None


def _path_role(shape: ToolShape, key_words: frozenset[str]) -> Role:
    if shape.destructive or key_words & WRITE_KEY_WORDS:
        return Role.WRITE
    if key_words & READ_KEY_WORDS and not shape.verbs & MOVING_VERBS:
        return Role.READ
    if shape.reads_only:
        return Role.READ
    return Role.WRITE

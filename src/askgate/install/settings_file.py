"""Edit an agent's JSON settings file in place: read, change one entry, diff, write back.

Shared by the installers: nothing here knows which agent it edits. Other keys keep their
order and values; the file keeps its mode; the new text replaces the old atomically
(temp file + rename in the same directory), so a crash never leaves half a settings file.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import stat
import tempfile
from typing import Any

MAX_SETTINGS_BYTES = 4 * 1024 * 1024


class SettingsError(Exception):
    """A settings file that cannot be read or changed safely: nothing is written."""


def load(path: str) -> tuple[dict[str, Any], str]:
    """(settings, original text); a missing file is empty settings and empty text."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return {}, ""
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise SettingsError(f"{path}: larger than {MAX_SETTINGS_BYTES} bytes")
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return {}, text
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(f"{path}: not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: the top level is not a JSON object")
    return data, text


def render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{path} (now)",
        tofile=f"{path} (after)",
    )
    return "".join(lines)


def write(path: str, text: str, *, private: bool = False) -> None:
    """Replace `path` with `text`, keeping its mode; `private`: mode 0600 whatever it was
    (the text holds a secret that others must not read)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, mode=0o700, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = 0o600
    if private:
        mode = 0o600
    fd, tmp = tempfile.mkstemp(prefix=".askgate-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def hook_groups(settings: dict[str, Any], event: str) -> list[Any]:
    """The settings' `hooks.<event>` list (created when absent); SettingsError when the
    file has something else there."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError("'hooks' is not a JSON object")
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise SettingsError(f"'hooks.{event}' is not a JSON array")
    return groups


def remove_hooks(settings: dict[str, Any], event: str, is_ours: Any) -> int:
    """Remove every handler `is_ours(handler)` under `hooks.<event>`; drop groups, the
    event and `hooks` when that leaves them empty. Returns how many were removed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(event), list):
        return 0
    removed = 0
    kept_groups = []
    for group in hooks[event]:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            kept_groups.append(group)
            continue
        kept = [h for h in handlers if not (isinstance(h, dict) and is_ours(h))]
        removed += len(handlers) - len(kept)
        if kept or not handlers:
            kept_groups.append({**group, "hooks": kept} if kept != handlers else group)
    if kept_groups:
        hooks[event] = kept_groups
    else:
        del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed

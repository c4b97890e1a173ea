"""Parent side: serve a session's forwarded asks through a prompter (thin I/O shell).

One thread watches `<root>/sessions/` (recursively: a child's cleanup may delete and
recreate our request directory) and refreshes the heartbeat; another shows prompts
one at a time, as a terminal can only ask one question at a time. All decisions are
made by `protocol.ServerCore`.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from pathlib import Path

from askgate.forwarding.env import default_forwarding_root
from askgate.forwarding.io import (
    HOST,
    ChangeWaiter,
    Mode,
    UnsafeDirectory,
    atomic_write_at,
    exists_at,
    heartbeat_alive,
    list_json_at,
    now_ms,
    open_subdirectory,
    opened_directory,
    read_heartbeat,
    read_limited_at,
    remove_at,
    session_parts,
    write_below,
)
from askgate.forwarding.protocol import (
    DEFAULT_TIMEOUT,
    HEARTBEAT_INTERVAL,
    MAX_REQUEST_BYTES,
    POLL_INTERVAL,
    Effect,
    FileInfo,
    Heartbeat,
    Layout,
    Log,
    Respond,
    ServerCore,
    Show,
    encode,
)
from askgate.prompt import Prompter, PromptReply, PromptState

logger = logging.getLogger("askgate.forwarding")

_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}


class ForwardingError(RuntimeError):
    """The server cannot start (another live process serves the session, bad root …)."""


class ForwardingServer:
    """Answers `<root>/sessions/<session>/requests/*.json` through `prompter`."""

    def __init__(
        self,
        session_id: str,
        prompter: Prompter,
        *,
        root: str | Path | None = None,
        mode: Mode = "watch",
        poll_interval: float = POLL_INTERVAL,
        heartbeat_interval: float = HEARTBEAT_INTERVAL,
        rescan_interval: float = 1.0,
        prompt_timeout: float | None = None,
        step_ms: int = 5,  # inotify check granularity: ~0.7 % CPU idle, ~10 ms round trips
    ) -> None:
        # Validates the session id; the timeout is named in "nobody answered within N s".
        self.core = ServerCore(session_id, prompt_timeout=prompt_timeout)
        self.session_id = session_id
        self.prompter = prompter
        self.layout = Layout(root if root is not None else default_forwarding_root())
        self.mode: Mode = mode
        self.poll_interval = poll_interval
        self.heartbeat_interval = heartbeat_interval
        # In watch mode a full rescan still runs this often, in case an event was missed.
        self.rescan_interval = rescan_interval
        self.prompt_timeout = prompt_timeout
        self.step_ms = step_ms
        self._lock = threading.Lock()  # guards `core`
        self._stop = threading.Event()
        self._prompts: queue.SimpleQueue[Show | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._waiter: ChangeWaiter | None = None
        self._last_scan_error: str | None = None

    # -- lifecycle

    def start(self) -> None:
        """Publish the heartbeat and start serving; returns once children can ask."""
        if self._threads:
            raise ForwardingError("server already started")
        existing = read_heartbeat(self.layout, self.session_id)
        if heartbeat_alive(existing, self.session_id, now_ms()) and existing is not None:
            raise ForwardingError(
                f"session {self.session_id} is already served by pid {existing.pid} "
                f"on {existing.host}"
            )
        try:
            with opened_directory(self.layout.root, self._parts("requests"), create=True):
                pass
            with opened_directory(self.layout.root, ("serving",), create=True):
                pass
            self._waiter = ChangeWaiter(
                self.layout.sessions_dir,
                mode=self.mode,
                poll_interval=self.poll_interval,
                step_ms=self.step_ms,
                stop=self._stop,
            )
            self._write_heartbeat()
        except OSError as exc:
            raise ForwardingError(f"cannot serve under {self.layout.root}: {exc}") from exc
        self._threads = [
            threading.Thread(target=self._watch_loop, name="askgate-forward-watch", daemon=True),
            threading.Thread(target=self._prompt_loop, name="askgate-forward-prompt", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        logger.info(
            "serving forwarded permission requests for session %s under %s (%s mode)",
            self.session_id,
            self.layout.root,
            self._waiter.mode,
        )

    def stop(self, timeout: float = 2.0) -> None:
        """Stop watching, withdraw the heartbeat. A prompt still on screen is abandoned
        (its thread is a daemon); the child then sees no heartbeat and gives up."""
        self._stop.set()
        self._prompts.put(None)
        watcher, prompter = self._threads or (None, None)
        if watcher is not None:
            watcher.join(timeout)
        if prompter is not None:
            prompter.join(0.1)  # may sit in a human's dialog; it answers nothing after stop
        if self._waiter is not None:
            self._waiter.close()
        current = read_heartbeat(self.layout, self.session_id)
        if current is not None and current.pid == os.getpid():
            # Left behind as "stopped", not removed: a child must tell a parent that
            # served and stopped (fail fast) from one without heartbeats (wait).
            try:
                self._write_heartbeat(stopped=True)
            except OSError as exc:
                logger.warning("cannot mark the serving heartbeat stopped: %s", exc)

    def __enter__(self) -> ForwardingServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def watching(self) -> Mode:
        """The mode actually in use: a watch falls back to polling when inotify fails or a
        symlink below the root would make a recursive watch follow it."""
        return self._waiter.mode if self._waiter is not None else self.mode

    # -- watch thread

    def _watch_loop(self) -> None:
        assert self._waiter is not None
        next_heartbeat = time.monotonic() + self.heartbeat_interval
        tick = self.rescan_interval if self._waiter.mode == "watch" else self.poll_interval
        self._scan()
        while not self._stop.is_set():
            try:
                self._waiter.wait(max(0.0, min(tick, next_heartbeat - time.monotonic())))
                if self._stop.is_set():
                    break
                if time.monotonic() >= next_heartbeat:
                    next_heartbeat = time.monotonic() + self.heartbeat_interval
                    self._refresh()
                self._scan()
            except Exception:
                # A bug here must not silently end serving (the heartbeat would go stale
                # and every child fail): log it and carry on with the next round.
                logger.exception("forwarding server loop failed; continuing")
                self._stop.wait(tick)

    def _refresh(self) -> None:
        try:
            self._write_heartbeat()
            self._collect_orphans()
        except OSError as exc:
            logger.warning("cannot refresh the serving heartbeat: %s", exc)

    def _write_heartbeat(self, *, stopped: bool = False) -> None:
        heartbeat = Heartbeat(
            session_id=self.session_id,
            pid=os.getpid(),
            host=HOST,
            refreshed_at=now_ms(),
            interval_ms=int(self.heartbeat_interval * 1000),
            stopped=stopped,
        )
        with opened_directory(self.layout.root, ("serving",), create=True) as serving:
            atomic_write_at(serving, self._heartbeat_name, encode(heartbeat))

    @property
    def _heartbeat_name(self) -> str:
        return self.layout.heartbeat_path(self.session_id).name

    def _parts(self, *below: str) -> tuple[str, ...]:
        return session_parts(self.session_id, *below)

    def _collect_orphans(self) -> None:
        """Responses nobody picked up (their child died) are removed after the
        protocol's timeout, so the directory does not grow forever."""
        cutoff_ns = (now_ms() - int(DEFAULT_TIMEOUT * 1000)) * 1_000_000
        try:
            with opened_directory(self.layout.root, self._parts("responses")) as responses:
                for info in list_json_at(responses):
                    if info.mtime_ns < cutoff_ns:
                        remove_at(responses, info.name)
        except FileNotFoundError:
            return
        except OSError as exc:  # a refused directory: nothing in it is touched
            logger.warning("cannot collect unread responses: %s", exc)

    def _scan(self) -> None:
        # The requests directory is opened once per scan, without following a symlink
        # anywhere below the root; every read goes through that descriptor.
        try:
            with opened_directory(self.layout.root, self._parts("requests")) as requests:
                listing = list_json_at(requests)
                self._last_scan_error = None
                with self._lock:
                    to_read = self.core.to_read(listing)
                for info in to_read:
                    self._read_request(requests, info)
        except FileNotFoundError:
            return  # a child's cleanup removed it; it comes back with the next request
        except OSError as exc:
            # Log each distinct failure once (a permission error would repeat forever).
            if str(exc) != self._last_scan_error:
                logger.warning("cannot list %s: %s", self.layout.requests_dir(self.session_id), exc)
                self._last_scan_error = str(exc)

    def _read_request(self, requests: int, info: FileInfo) -> None:
        error: str | None = None
        data: bytes | None
        try:
            data = read_limited_at(requests, info.name, MAX_REQUEST_BYTES)
        except FileNotFoundError:
            return  # withdrawn between listing and reading
        except OSError as exc:
            data, error = None, str(exc)
        with self._lock:
            actions = self.core.received(info, data, now_ms=now_ms(), error=error)
        self._perform(actions)

    def _request_exists(self, request_id: str) -> bool:
        try:
            with opened_directory(self.layout.root, self._parts("requests")) as requests:
                return exists_at(requests, f"{request_id}.json")
        except OSError:
            return False

    # -- prompt thread

    def _prompt_loop(self) -> None:
        while True:
            show = self._prompts.get()
            if show is None or self._stop.is_set():
                return
            request_id = show.request.id
            if not self._request_exists(request_id):
                with self._lock:
                    self.core.done(request_id)  # withdrawn while queued
                continue
            try:
                reply = self.prompter.prompt(show.prompt, self.prompt_timeout)
                if not isinstance(reply, PromptReply):
                    raise TypeError(f"prompter returned {type(reply).__name__}, not PromptReply")
            except Exception as exc:
                logger.exception("prompter failed on forwarded request %s", request_id)
                reply = PromptReply(state=PromptState.UNAVAILABLE, detail=f"prompter failed: {exc}")
            if self._stop.is_set():
                return
            try:
                with self._lock:
                    actions = self.core.answered(request_id, reply, now_ms=now_ms())
                self._perform(actions)
            except Exception:
                # This thread is the only one showing prompts: it must outlive a bug, or
                # every later child waits out its whole timeout behind a live heartbeat.
                logger.exception("cannot answer forwarded request %s", request_id)
                with self._lock:
                    self.core.done(request_id)

    # -- actions

    def _perform(self, actions: list[Effect]) -> None:
        for action in actions:
            if isinstance(action, Log):
                logger.log(
                    _LOG_LEVELS[action.level],
                    action.message,
                    extra={"event": f"forwarded_permission.{action.event}"},
                )
            elif isinstance(action, Show):
                self._prompts.put(action)
            elif isinstance(action, Respond):
                self._respond(action)

    def _respond(self, action: Respond) -> None:
        name = f"{action.request_id}.json"
        session_dir = self.layout.session_dir(self.session_id)
        try:
            # One descriptor for the session directory; requests/ and responses/ are
            # opened below it, never through a symlink, and all I/O goes through them.
            with opened_directory(self.layout.root, self._parts()) as session:
                requests = open_subdirectory(session, "requests", session_dir / "requests")
                try:
                    if not exists_at(requests, name):
                        logger.info("request %s was withdrawn before its answer", action.request_id)
                        return
                    # A sibling child's cleanup may remove the empty responses/ at any
                    # moment: write_below re-creates it rather than losing the answer.
                    write_below(session, "responses", session_dir / "responses", name, action.data)
                    remove_at(requests, name)
                finally:
                    os.close(requests)
        except UnsafeDirectory as exc:
            logger.warning("cannot answer request %s: %s", action.request_id, exc)
        except FileNotFoundError:
            logger.info("request %s was withdrawn before its answer", action.request_id)
        except OSError as exc:
            logger.warning("cannot answer request %s: %s", action.request_id, exc)
        finally:
            with self._lock:
                self.core.done(action.request_id)

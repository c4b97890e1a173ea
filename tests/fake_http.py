"""The lifecycle every fake model server shares: an HTTP server on 127.0.0.1 (a free port),
served from a daemon thread, started and closed by the test."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class BackgroundServer:
    def __init__(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one poll
            name=name,
            daemon=True,
        )

    @property
    def origin(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

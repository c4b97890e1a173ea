"""`askgate serve`, `askgate user`, `askgate enroll` as commands: output and one-line errors."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from askgate.server.keys import load_or_create_secret, ntfy_topic


def askgate(*args: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
    }
    return subprocess.run(
        [sys.executable, "-m", "askgate", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_user_add_prints_the_token_alone_on_the_last_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = askgate("user", "add", "alice", "--data-dir", str(data), tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    token = done.stdout.splitlines()[-1]
    assert re.fullmatch(r"agt_[A-Za-z0-9_-]{43}", token)
    listed = askgate("user", "list", "--data-dir", str(data), tmp_path=tmp_path)
    assert listed.stdout.startswith("alice\tu-") and "tenant=user:u-" in listed.stdout
    assert token not in listed.stdout
    rotated = askgate("user", "token", "alice", "--data-dir", str(data), tmp_path=tmp_path)
    assert rotated.returncode == 0 and rotated.stdout.splitlines()[-1] != token


def test_the_default_data_dir_is_under_xdg_data_home(tmp_path: Path) -> None:
    done = askgate("user", "add", "bob", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "xdg-data" / "askgate" / "askgate.sqlite3").is_file()
    assert (tmp_path / "xdg-data" / "askgate" / "secret").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("user", "add", "alice"), "user 'alice' exists"),
        (("user", "token", "nobody"), "no user named 'nobody'"),
        (("user", "frobnicate"), "invalid choice"),
        (("enroll", "nobody"), "no user named 'nobody'"),
        (("enroll", "alice", "--ntfy-url", "ftp://x"), "not an http(s) URL"),
        (("serve", "--port", "70000"), "--port must be between 0 and 65535"),
        (("serve", "--port", "nope"), "invalid int value"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    data = tmp_path / "data"
    askgate("user", "add", "alice", "--data-dir", str(data), tmp_path=tmp_path)
    done = askgate(*args, "--data-dir", str(data), tmp_path=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_serve_refuses_a_busy_port_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = askgate(
            "serve", "--port", str(port), "--data-dir", str(tmp_path / "d"), tmp_path=tmp_path
        )
    assert done.returncode == 2 and "cannot listen on 127.0.0.1" in done.stderr
    assert "Traceback" not in done.stderr


def test_serve_refuses_a_secret_open_to_others(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "secret").write_text("x" * 64)
    (data / "secret").chmod(0o644)
    done = askgate("serve", "--port", "0", "--data-dir", str(data), tmp_path=tmp_path)
    assert done.returncode == 2 and "chmod 600" in done.stderr
    assert "Traceback" not in done.stderr


def test_enroll_prints_the_topic_url_deep_link_and_a_qr_code(tmp_path: Path) -> None:
    data = tmp_path / "data"
    askgate("user", "add", "alice", "--id", "gh-583231", "--data-dir", str(data), tmp_path=tmp_path)
    done = askgate(
        "enroll",
        "alice",
        "--ntfy-url",
        "https://ntfy.example/",
        "--data-dir",
        str(data),
        tmp_path=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    topic = ntfy_topic(load_or_create_secret(str(data / "secret"), env={}), "gh-583231")
    assert f"https://ntfy.example/{topic}" in done.stdout
    assert f"ntfy://ntfy.example/{topic}" in done.stdout
    assert "█" in done.stdout or "▀" in done.stdout  # the terminal QR code
    # derived, never stored: the topic is nowhere in the database
    assert topic.encode() not in (data / "askgate.sqlite3").read_bytes()


@pytest.mark.parametrize("word", ["serve", "user", "group", "enroll"])
def test_a_missing_dependency_is_one_line_never_a_traceback(tmp_path: Path, word: str) -> None:
    # As in a broken install: the store's database layer cannot be imported.
    code = (
        "import sys; sys.modules['sqlalchemy'] = None\n"
        "from askgate.entry import main\n"
        f"sys.exit(main([{word!r}, 'list' if {word!r} in ('user', 'group') else 'x', "
        f"'--data-dir', {str(tmp_path / 'd')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode in (1, 2), done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("askgate: error:")


def test_serve_answers_keep_alive_requests_without_nagle_delay() -> None:
    """Accepted connections inherit the listener's proto; asyncio turns Nagle off (TCP_NODELAY)
    only when that proto says TCP. Without it every answer on a keep-alive connection waited
    for the client's delayed ACK (~40 ms): the head and body are written apart."""
    import asyncio

    from askgate.server.cli import _bind

    async def accepted_nodelay() -> int:
        sock = _bind("127.0.0.1", 0)
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_client(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            conn = writer.get_extra_info("socket")
            seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            writer.close()

        server = await asyncio.start_server(on_client, sock=sock)
        try:
            _r, writer = await asyncio.open_connection(*sock.getsockname()[:2])
            flag = await asyncio.wait_for(seen, 10)
            writer.close()
            return flag
        finally:
            server.close()

    assert asyncio.run(accepted_nodelay()) != 0

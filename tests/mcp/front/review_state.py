"""One `tools/call` of a host on MCP 2026-07-28 through toolgate's front door, with the official Python MCP SDK's
client (2.x), driving the multi-round-trip loop by hand so the test sees each leg.

usage: review_state.py URL TOKEN NAME ARGUMENTS_JSON [REQUEST_STATE]

Connects with `Authorization: Bearer TOKEN` (the SDK negotiates the newest version it and the server share), calls
tool NAME with ARGUMENTS_JSON, carrying REQUEST_STATE back when given, and prints one JSON object on stdout:
{"version", "kind": "input_required" | "complete" | "error", "state", "text", "structured", "status", "error"}.
`status` is toolgate's outcome in `_meta` ("SUCCESS", "PENDING_REVIEW", ...). The Rust test
(tests/it/mcp_front_review_state.rs) asserts on it.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import types
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError


async def main(url: str, token: str, name: str, arguments: dict, state: str | None) -> dict:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        report = {"version": client.protocol_version}
        try:
            result = await client.session.call_tool(name, arguments, request_state=state, allow_input_required=True)
        except MCPError as err:
            return report | {"kind": "error", "error": {"code": err.code, "message": err.message}}
        if isinstance(result, types.InputRequiredResult):
            return report | {"kind": "input_required", "state": result.request_state,
                             "requests": bool(result.input_requests)}
        text = "".join(block.text for block in result.content if getattr(block, "type", "") == "text")
        meta = (result.meta or {}).get("dev.toolgate/call", {})
        return report | {"kind": "complete", "text": text, "structured": result.structured_content,
                         "status": meta.get("status"), "is_error": bool(result.is_error)}


if __name__ == "__main__":
    given = sys.argv[5] if len(sys.argv) > 5 else None
    print(json.dumps(anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), given)))

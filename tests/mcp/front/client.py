"""An MCP host's side of toolgate's front door, with the official Python MCP SDK's client (2.x).

usage: client.py URL TOKEN CALLS_JSON

Connects over streamable HTTP with `Authorization: Bearer TOKEN`, lists every tool (following pagination), makes
each call of CALLS_JSON (a list of {"name": ..., "arguments": {...}}) in order, and prints one JSON object on
stdout: {"tools": [{"name", "input_schema", "annotations"}], "results": [{"is_error", "text", "structured",
"meta"}]}. The Rust test that runs it asserts on that report.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def _dump(value):
    return value.model_dump(mode="json", by_alias=True, exclude_none=True) if value is not None else None


async def main(url: str, token: str, calls: list[dict]) -> dict:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools, cursor = [], None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools += [_dump(tool) for tool in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    break
            results = []
            for call in calls:
                result = await session.call_tool(call["name"], call.get("arguments", {}))
                text = "".join(block.text for block in result.content if getattr(block, "type", "") == "text")
                meta = _dump(result).get("_meta", {})
                results.append(
                    {"is_error": bool(result.is_error), "text": text, "structured": result.structured_content,
                     "meta": meta}
                )
            return {"tools": tools, "results": results}


if __name__ == "__main__":
    report = anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
    print(json.dumps(report))

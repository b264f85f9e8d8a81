"""The MCP server toolgate's integration tests and MCP latency bench talk to (official Python MCP SDK, FastMCP).

    python tests/mcp/server.py stdio                    # MCP over stdin/stdout
    python tests/mcp/server.py http --port 8931         # streamable HTTP at http://127.0.0.1:8931/mcp
    python tests/mcp/server.py stdio --page-size 3      # tools/list answers 3 tools per page (nextCursor)

Without --page-size, tools/list answers every tool in one page (FastMCP never paginates, however many tools).

Tools (wire behaviour as of mcp==1.30.0):
    echo(text)          -> text content `text`; no outputSchema, no structuredContent
    add(a, b)           -> outputSchema {sum: integer} (required); structuredContent {"sum": a+b}, text content
                           is the same object as JSON
    bad_output()        -> declares the same outputSchema as add but answers structuredContent
                           {"sum": "not a number"} with isError false (sent as is: neither FastMCP nor the
                           low-level server validates a CallToolResult a tool returns itself)
    fail(reason)        -> isError true, text content "Error executing tool fail: <reason>"
    whoami(user_id, note) -> text "<user_id>:<note>"
    count(n)            -> inputSchema says integer, but the server does not coerce: text "int:5" when it
                           received the JSON number 5, "str:5" when it received the JSON string "5"
    pid()               -> text: this process's id
    env_var(name)       -> text: the environment variable's value in this process, or "<unset>"
    header(name)        -> text: the HTTP header's value on this call's request, "<unset>", or "<no http request>"
    add_tool(name, notify=true) -> registers a tool `name` (no arguments, answers the text `name`), sends
                           notifications/tools/list_changed unless notify is false, answers the text "added"
                           (or "exists")
    chart()             -> a text block, a one-pixel PNG image block and an embedded text resource
    steps(n)            -> notifications/progress 1..n of n (when the request has a progressToken), then "done"
    ask_model(prompt)   -> logs "asking the model: <prompt>" at info, asks the host's model (sampling/createMessage,
                           both on the call's response stream), answers "the model said: <its text>", or
                           "refused: <the error>" when the request was refused

Resources and prompts: `memo://greeting` (text "hello from the memo server"), the template
`memo://notes/{note_id}` (text "note <note_id>"), and the prompt `summarize(topic)` (one user message).

Nothing but MCP goes to stdout. One line goes to stderr at start: `toolgate-test-mcp: started pid=N transport=T`;
over HTTP a second one once the port is bound: `toolgate-test-mcp: listening on http://127.0.0.1:N/mcp`.
The server advertises capabilities.tools.listChanged = true.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Annotated, TypedDict

import anyio

from mcp import types
from mcp.server.fastmcp import Context, FastMCP
from mcp.server.lowlevel import NotificationOptions
from pydantic import WithJsonSchema

SUM_SCHEMA = {
    "type": "object",
    "properties": {"sum": {"type": "integer", "title": "Sum"}},
    "required": ["sum"],
    "title": "AddResult",
}


class AddResult(TypedDict):
    sum: int


class TestServer(FastMCP):
    """FastMCP, plus: bad_output's declared outputSchema, and optional tools/list pagination."""

    page_size = 0

    async def list_tools(self) -> list[types.Tool]:
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "bad_output":
                tool.outputSchema = SUM_SCHEMA
        return tools

    async def list_tools_paged(self, request: types.ListToolsRequest) -> types.ListToolsResult:
        tools = await self.list_tools()
        # The low-level server calls this with None to refill its tool cache.
        cursor = request.params.cursor if request is not None and request.params else None
        start = int(cursor) if cursor else 0
        end = start + self.page_size
        return types.ListToolsResult(tools=tools[start:end], nextCursor=str(end) if end < len(tools) else None)


mcp = TestServer("toolgate-test-mcp", log_level="WARNING")

# FastMCP's transports build the initialize answer with default NotificationOptions (tools.listChanged false);
# this server does send notifications/tools/list_changed, so it says so.
_low = mcp._mcp_server
_default_init_options = _low.create_initialization_options


def _init_options(notification_options=None, experimental_capabilities=None):
    notification_options = notification_options or NotificationOptions(tools_changed=True)
    return _default_init_options(notification_options, experimental_capabilities)


_low.create_initialization_options = _init_options


# A 1×1 transparent PNG, base64.
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Returns the text."""
    return text


@mcp.tool()
def add(a: int, b: int) -> AddResult:
    """Adds two integers; structured output {"sum": a+b}."""
    return {"sum": a + b}


@mcp.tool()
def bad_output() -> types.CallToolResult:
    """Declares the outputSchema {sum: integer} and answers structuredContent that violates it."""
    bad = {"sum": "not a number"}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text='{"sum": "not a number"}')],
        structuredContent=bad,
        isError=False,
    )


@mcp.tool()
def chart() -> types.CallToolResult:
    """A caption, a one-pixel PNG and an embedded text resource: a result of more than text."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="the chart"),
            types.ImageContent(type="image", data=PIXEL_PNG, mimeType="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///data.csv", mimeType="text/csv", text="a,b\n1,2"),
            ),
        ],
        isError=False,
    )


@mcp.resource("memo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A text resource."""
    return "hello from the memo server"


@mcp.resource("memo://notes/{note_id}", mime_type="text/plain")
def note(note_id: str) -> str:
    """A resource template: one note by id."""
    return f"note {note_id}"


@mcp.prompt()
def summarize(topic: str) -> str:
    """A prompt with one argument."""
    return f"Summarize {topic} in one sentence."


@mcp.tool(structured_output=False)
async def steps(n: int, ctx: Context) -> str:
    """Reports progress 1..n of n back to back, the last just before its answer, then answers "done"."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return "done"


@mcp.tool(structured_output=False)
async def ask_model(prompt: str, ctx: Context) -> str:
    """Logs, then asks the host's model for `prompt` (sampling) and answers what it said, or why it could not ask."""
    await ctx.info(f"asking the model: {prompt}")
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    try:
        result = await ctx.session.create_message(
            messages=[message], max_tokens=20, related_request_id=ctx.request_id
        )
    except Exception as err:  # noqa: BLE001 - any refusal is the answer
        return f"refused: {err}"
    return f"the model said: {result.content.text}"


@mcp.tool(structured_output=False)
def fail(reason: str) -> str:
    """Always fails with the reason: a result with isError true."""
    raise RuntimeError(reason)


@mcp.tool(structured_output=False)
def whoami(user_id: str, note: str) -> str:
    """Returns "<user_id>:<note>"."""
    return f"{user_id}:{note}"


# The schema says integer; the validator takes an int or a str as received, so the answer shows which came.
@mcp.tool(structured_output=False)
def count(n: Annotated[int | str, WithJsonSchema({"type": "integer", "title": "N"})]) -> str:
    """Returns "int:<n>" when n arrived as a JSON integer, "<type>:<n>" otherwise."""
    return f"{type(n).__name__}:{n}"


@mcp.tool(structured_output=False)
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool(structured_output=False)
def env_var(name: str) -> str:
    """The value of environment variable `name` in this process, or "<unset>"."""
    return os.environ.get(name, "<unset>")


@mcp.tool(structured_output=False)
def header(name: str, ctx: Context) -> str:
    """The value of HTTP header `name` on this call's request, "<unset>", or "<no http request>" over stdio."""
    request = ctx.request_context.request
    if request is None:
        return "<no http request>"
    return request.headers.get(name, "<unset>")


@mcp.tool(structured_output=False)
async def add_tool(name: str, ctx: Context, notify: bool = True) -> str:
    """Registers a tool called `name` (no arguments, returns its own name) and sends tools/list_changed, unless
    `notify` is false (then only a client that lists the tools again finds it)."""
    if mcp._tool_manager.get_tool(name) is not None:
        return "exists"

    def new_tool() -> str:
        return name

    mcp.add_tool(new_tool, name=name, description=f"Added at run time; returns {name!r}.", structured_output=False)
    if not notify:
        return "added"
    # Tied to this request, so over streamable HTTP it travels on this call's own response stream and does not
    # depend on the client having opened the optional GET stream.
    await ctx.session.send_notification(
        types.ServerNotification(types.ToolListChangedNotification()),
        related_request_id=ctx.request_id,
    )
    return "added"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--port", type=int, default=8000, help="http only; binds 127.0.0.1; 0 picks a free port")
    parser.add_argument("--page-size", type=int, default=0, help="tools per tools/list page; 0: no pagination")
    args = parser.parse_args()

    if args.page_size > 0:
        mcp.page_size = args.page_size
        _low.list_tools()(mcp.list_tools_paged)

    print(f"toolgate-test-mcp: started pid={os.getpid()} transport={args.transport}", file=sys.stderr, flush=True)
    if args.transport == "stdio":
        mcp.run("stdio")
    else:
        anyio.run(serve_http, args.port)


async def serve_http(port: int) -> None:
    """FastMCP's streamable-HTTP app under uvicorn on 127.0.0.1:port; says on stderr once the port is bound."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as e:
        print(f"toolgate-test-mcp: cannot listen on 127.0.0.1:{port}: {e}", file=sys.stderr, flush=True)
        sys.exit(1)
    sock.listen(128)
    port = sock.getsockname()[1]  # the real one when asked for 0
    print(f"toolgate-test-mcp: listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(mcp.streamable_http_app(), log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    main()

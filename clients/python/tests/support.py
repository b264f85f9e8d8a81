"""Test support: the real tool servers the gateway calls, a scripted chat model, the agent graph, and reading its
transcript."""

from __future__ import annotations

import json
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition

from toolgate._pb import runtime_pb2, runtime_pb2_grpc

# The scripted chat model is the examples' own (examples/scripted.py).
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
from scripted import ScriptedChatModel as ScriptedChatModel  # noqa: E402
from scripted import scripted as scripted  # noqa: E402


def unique(name: str) -> str:
    """A tool name no other test uses: every test registers its own tools on the shared gateway."""
    return f"{name}_{uuid.uuid4().hex[:8]}"


@dataclass
class Received:
    """One request a tool server got: the arguments as the tool saw them, and what came with them."""

    tool: str
    args: Any
    call_id: str = ""
    context: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


# A handler answers the arguments with (HTTP status, body) for HTTP tools (a bytes body with its content type as a
# third item), or with an InvokeResponse's fields (content, structured, is_error, error_message) for gRPC tools.
Handler = Callable[[Any], Any]


class HttpTools:
    """An HTTP tool server: each tool is a path with a handler; every request is recorded."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._received: dict[str, list[Received]] = {}
        self._lock = threading.Lock()
        tools = self

        class Handler_(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                path = self.path.lstrip("/")
                args = json.loads(body) if body else None
                with tools._lock:
                    tools._received.setdefault(path, []).append(
                        Received(
                            tool=path,
                            args=args,
                            call_id=self.headers.get("x-toolgate-call-id", ""),
                            headers=dict(self.headers),
                        )
                    )
                    handler = tools._handlers.get(path)
                status, answer, *media = handler(args) if handler else (404, {"error": "no such tool"})
                if isinstance(answer, bytes):
                    data, kind = answer, media[0] if media else "application/octet-stream"
                elif isinstance(answer, str):
                    data, kind = answer.encode(), "text/plain"
                else:
                    data, kind = json.dumps(answer).encode(), "application/json"
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler_)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def route(self, path: str, handler: Handler) -> dict[str, Any]:
        """Serves `path`; answers the backend section of a tool spec that calls it."""
        self._handlers[path] = handler
        return {"http": {"url": f"http://127.0.0.1:{self._server.server_port}/{path}"}}

    def received(self, path: str) -> list[Received]:
        with self._lock:
            return list(self._received.get(path, []))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class GrpcTools(runtime_pb2_grpc.ToolRuntimeServicer):
    """A `toolgate.v1.ToolRuntime` server: handlers by tool name; every invocation is recorded with its
    CallContext."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._received: dict[str, list[Received]] = {}
        self._lock = threading.Lock()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        runtime_pb2_grpc.add_ToolRuntimeServicer_to_server(self, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    def route(self, tool: str, handler: Handler) -> dict[str, Any]:
        self._handlers[tool] = handler
        return {"grpc": {"target": f"http://127.0.0.1:{self.port}"}}

    def received(self, tool: str) -> list[Received]:
        with self._lock:
            return list(self._received.get(tool, []))

    def Invoke(self, request: runtime_pb2.InvokeRequest, context: grpc.ServicerContext) -> runtime_pb2.InvokeResponse:
        args = json.loads(request.arguments) if request.arguments else None
        ctx = {
            "tenant": request.context.tenant,
            "user_id": request.context.user_id,
            "session_id": request.context.session_id,
            "values": dict(request.context.values),
        }
        with self._lock:
            self._received.setdefault(request.tool, []).append(
                Received(tool=request.tool, args=args, call_id=request.call_id, context=ctx)
            )
            handler = self._handlers.get(request.tool)
        if handler is None:
            return runtime_pb2.InvokeResponse(is_error=True, error_message=f"no handler for {request.tool}")
        answer = handler(args)
        if "structured" in answer and not isinstance(answer["structured"], str):
            answer = {**answer, "structured": json.dumps(answer["structured"])}
        return runtime_pb2.InvokeResponse(**answer)

    def close(self) -> None:
        self._server.stop(grace=None)


def register(
    client: Any, http_tools: HttpTools, base: str, properties: dict[str, Any], handler: Handler, **spec: Any
) -> str:
    """Registers an HTTP tool named `base` plus a unique suffix, taking an object with these properties (all
    required), served by `handler`; `spec` adds to the spec (`review`, ...). Answers its name."""
    name = unique(base)
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    client.register_tool(
        {
            "name": name,
            "description": f"{base}.",
            "input_schema": schema,
            "backend": http_tools.route(name, handler),
            **spec,
        }
    )
    return name


def forecast_tool(client: Any, http_tools: HttpTools) -> str:
    """A forecast tool taking a city and a whole number of days (at least 1); answers its name."""
    properties = {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}
    return register(
        client, http_tools, "forecast", properties, lambda args: (200, {"city": args["city"], "sky": "clear"})
    )


def call(name: str, args: dict[str, Any], id: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": args, "id": id or f"call_{uuid.uuid4().hex[:10]}", "type": "tool_call"}


def ai(*calls: dict[str, Any], content: str = "") -> AIMessage:
    """An AIMessage carrying tool calls, with an id (as models' messages have) so it can be replaced."""
    return AIMessage(content=content, tool_calls=list(calls), id=f"ai_{uuid.uuid4().hex[:10]}")


def agent_graph(model: Any, tools_node: Any, *, checkpointer: Any = None) -> Any:
    """The usual ReAct graph: agent -> (tools_condition) -> tools -> agent, over MessagesState, with an
    in-memory checkpointer (for interrupts) unless one is given."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    async def aagent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", RunnableLambda(agent, afunc=aagent))
    builder.add_node("tools", tools_node)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer or InMemorySaver())


def thread(thread_id: str | None = None, **configurable: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id or f"t_{uuid.uuid4().hex[:8]}", **configurable}}


def kinds(messages: list[BaseMessage]) -> list[str]:
    """The message types of a transcript, in order."""
    return [type(m).__name__ for m in messages]


def tool_messages(messages: list[BaseMessage]) -> list[ToolMessage]:
    """The ToolMessages of a transcript, in order."""
    return [m for m in messages if isinstance(m, ToolMessage)]

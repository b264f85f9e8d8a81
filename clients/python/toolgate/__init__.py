"""Python client of toolgate, the gRPC sidecar that runs an LLM agent's tool calls.

Layout:
- `toolgate.client`: `Client` (sync) and `AsyncClient` (grpc.aio), and `GatewayError`.
- `toolgate.types`: the answers as frozen dataclasses (`ToolMessage` with its `ToolPart`s and `ResultBlock`s,
  `ToolError`, `Violation`, `Repair`, `PendingReview`, `CallsFromText` with its `ToolCall`s) and the
  `CallContext`.
- `toolgate.langgraph`: `GatewayToolNode`, a LangGraph `ToolNode` for a `StateGraph` or `create_react_agent`,
  `toolgate_middleware` for LangChain v1's `create_agent`, `gateway_tools` and `bind_gateway_tools`, and
  `calls_from_text_middleware` and `calls_from_text_hook`, which turn calls a model wrote in its text into tool
  calls (needs the `langgraph` extra; the middlewares, the `langchain` extra).
- `toolgate._convert`: the one place protobuf messages become those types and back.
- `toolgate._pb`: the gRPC stubs generated from proto/ by scripts/gen_stubs.py.
"""

from .client import AsyncClient, Client, GatewayError
from .types import (
    CallContext,
    CallsFromText,
    ErrorKind,
    PendingReview,
    Repair,
    ResultBlock,
    ToolCall,
    ToolError,
    ToolMessage,
    ToolPart,
    ToolStatus,
    Violation,
)

__all__ = [
    "AsyncClient",
    "CallContext",
    "CallsFromText",
    "Client",
    "ErrorKind",
    "GatewayError",
    "PendingReview",
    "Repair",
    "ResultBlock",
    "ToolCall",
    "ToolError",
    "ToolMessage",
    "ToolPart",
    "ToolStatus",
    "Violation",
]

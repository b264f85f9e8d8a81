"""Python client of toolgate, the gRPC sidecar that runs an LLM agent's tool calls.

Layout:
- `toolgate.client`: `Client` (sync) and `AsyncClient` (grpc.aio), and `GatewayError`.
- `toolgate.types`: the answers as frozen dataclasses (`ToolMessage` with its `ToolPart`s, `ToolError`, `Violation`, `Repair`,
  `PendingReview`) and the `CallContext`.
- `toolgate.langgraph`: `GatewayToolNode`, which takes `ToolNode`'s place in a LangGraph `StateGraph` (not a
  `ToolNode` subclass, so not for `create_react_agent`), and `bind_gateway_tools` (needs the `langgraph` extra).
- `toolgate._convert`: the one place protobuf messages become those types and back.
- `toolgate._pb`: the gRPC stubs generated from proto/ by scripts/gen_stubs.py.
"""

from .client import AsyncClient, Client, GatewayError
from .types import (
    CallContext,
    ErrorKind,
    PendingReview,
    Repair,
    ToolError,
    ToolMessage,
    ToolPart,
    ToolStatus,
    Violation,
)

__all__ = [
    "AsyncClient",
    "CallContext",
    "Client",
    "ErrorKind",
    "GatewayError",
    "PendingReview",
    "Repair",
    "ToolError",
    "ToolMessage",
    "ToolPart",
    "ToolStatus",
    "Violation",
]

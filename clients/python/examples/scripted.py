"""What the examples share: clients for a local gateway (from the environment), an HTTP tool server of their own, a
scripted chat model so each runs with no API key, and `check`, which prints what an example checked (and exits 1
when it does not hold).

    TOOLGATE_TARGET        the gateway (default 127.0.0.1:50051, where `toolgate serve` listens)
    TOOLGATE_TOKEN         its data token, if it has one
    TOOLGATE_ADMIN_TOKEN   its admin token, if it has one (the examples register their own tools)
    TOOLGATE_REVIEW_TOKEN  its review token, if it has one (the review example decides its calls)
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

import toolgate

#: The forecast tool two examples register (with a backend of their own).
FORECAST = {
    "name": "forecast",
    "description": "The forecast for a city, for a number of days.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["city", "days"],
    },
}


def connect() -> tuple[toolgate.Client, toolgate.Client]:
    """The clients an example needs: the agent's (data and review tokens) and the operator's (admin token), which
    registers the example's tools."""
    target = os.environ.get("TOOLGATE_TARGET", "127.0.0.1:50051")
    token = os.environ.get("TOOLGATE_TOKEN")
    agent = toolgate.Client(target, token=token, review_token=os.environ.get("TOOLGATE_REVIEW_TOKEN"), timeout=30)
    admin = toolgate.Client(target, token=token, admin_token=os.environ.get("TOOLGATE_ADMIN_TOKEN"), timeout=30)
    return agent, admin


class ToolServer:
    """An HTTP tool on 127.0.0.1 (the gateway POSTs the arguments as JSON): `url`, and every argument object it
    was sent, in `received`."""

    def __init__(self, handler: Callable[[Any], Any]) -> None:
        self.received: list[Any] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                args = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"null")
                server.received.append(args)
                body = json.dumps(handler(args)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_port}/"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


class ScriptedChatModel(GenericFakeChatModel):
    """A chat model answering a script of messages, one per turn (LangChain's GenericFakeChatModel). It keeps every
    prompt it was shown (`seen`) and the tools it was bound to, in OpenAI form (`seen_tools`), binding them as
    real chat models do, so prebuilt agents accept it."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)
    seen_tools: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        self.seen_tools = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=self.seen_tools, **kwargs)


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(replies))


def ai_calls(id: str, *calls: tuple[str, str, dict[str, Any]]) -> AIMessage:
    """An AIMessage with this id making these (call id, tool name, arguments) calls."""
    tool_calls = [{"id": c, "name": n, "args": a, "type": "tool_call"} for c, n, a in calls]
    return AIMessage(id=id, content="", tool_calls=tool_calls)


def transcript(messages: list[BaseMessage]) -> str:
    """One line per message: what the graph's state holds, as a reader of its steps sees it."""
    lines = []
    for m in messages:
        calls = getattr(m, "tool_calls", None) or []
        shown = ", ".join(f"{c['name']}({json.dumps(c['args'])})" for c in calls) if calls else m.content
        status = f" [{m.status}]" if isinstance(m, ToolMessage) else ""
        lines.append(f"  {m.type:<6}{status} {shown}")
    return "\n".join(lines)


def check(holds: bool, what: str) -> None:
    """Prints `checked: what`, or exits 1 saying what did not hold."""
    if not holds:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)
    print(f"checked: {what}")

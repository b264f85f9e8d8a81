"""Calls a model wrote in its answer's text instead of making them: the gateway reads them (`CallsFromText`), and
the AIMessage is answered again carrying them as tool calls, its content the text that is not a call, so the graph
routes to the tools instead of ending. `calls_from_text_hook` does it as a node (`create_react_agent`'s
`post_model_hook`, or a `StateGraph` node between the model and `tools_condition`); `CallsFromTextMiddleware`
(`_middleware`) as LangChain v1 middleware. Reading, repair and validation are the gateway's: nothing here parses
the text."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.runnables import RunnableConfig, RunnableLambda

from ..client import AsyncClient, Client
from ..types import CallsFromText
from ._binding import run_context

logger = logging.getLogger("toolgate.langgraph")

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


class TextCallReader:
    """Sends an AIMessage without tool calls to the gateway's `CallsFromText` and answers it again with the calls
    found, or None when there are none (nothing found, or a refusal, logged at debug on `toolgate.langgraph`).

    - `tools`: the registered names of the tools the model was offered; None: every tool the run's tenant sees.
    - `context`: a CallContext, dict, or `callable(config)` giving the defaults the RunnableConfig completes
      (`configurable.tenant`, `user_id`, `session_id` or `thread_id`), as `GatewayToolNode` reads it.
    - `format`: the model's output format (hermes, qwen3_coder_xml, llama3_json, llama3_python_tag, mistral,
      harmony, pythonic, json, or auto). None: the chat model's name is sent with each text (the AIMessage's
      `response_metadata` `model_name` or `model`), and the gateway reads the format of its family, or every
      format for a family it does not know."""

    def __init__(
        self,
        client: Client | AsyncClient,
        *,
        tools: Sequence[str] | None = None,
        context: Any = None,
        timeout: float | None = None,
        format: str | None = None,
    ) -> None:
        if isinstance(tools, str):
            raise TypeError("tools is a list of registered tool names, not one str")
        if format is not None and not isinstance(format, str):
            raise TypeError(f"format is a format's name, such as 'hermes', not {type(format).__name__}")
        self.client = client
        self.tool_names = None if tools is None else list(tools)
        self.context = context
        self.timeout = timeout
        self.format = format

    def read(self, message: Any, config: RunnableConfig | None) -> AIMessage | None:
        text = _text_to_read(message)
        if text is None:
            return None
        if isinstance(self.client, AsyncClient):
            raise TypeError("calls_from_text with an AsyncClient runs only in async graphs (ainvoke, astream)")
        found = self.client.calls_from_text(text, **self._request(message, config))
        return with_text_calls(message, text, found)

    async def aread(self, message: Any, config: RunnableConfig | None) -> AIMessage | None:
        text = _text_to_read(message)
        if text is None:
            return None
        if isinstance(self.client, AsyncClient):
            found = await self.client.calls_from_text(text, **self._request(message, config))
        else:
            found = await asyncio.to_thread(self.client.calls_from_text, text, **self._request(message, config))
        return with_text_calls(message, text, found)

    def _request(self, message: AIMessage, config: RunnableConfig | None) -> dict[str, Any]:
        context = run_context(self.context, config or {})
        request = {"context": context, "tools": self.tool_names, "timeout": self.timeout, "format": self.format}
        return {**request, "model": None if self.format else model_of(message)}


def model_of(message: AIMessage) -> str | None:
    """The name of the chat model that wrote `message`, as LangChain's integrations record it in its
    `response_metadata` (`model_name`: OpenAI, Groq, Mistral, Fireworks; `model`: Anthropic, Ollama)."""
    metadata = message.response_metadata or {}
    name = metadata.get("model_name") or metadata.get("model")
    return name if isinstance(name, str) else None


def _text_to_read(message: Any) -> str | None:
    """The text of an AIMessage that made no tool call (valid or not), or None when there is nothing to read."""
    if not isinstance(message, AIMessage) or message.tool_calls or message.invalid_tool_calls:
        return None
    text = str(message.text)
    return text if text.strip() else None


def with_text_calls(message: AIMessage, text: str, found: CallsFromText) -> AIMessage | None:
    """`message` again (same id, so `add_messages` replaces it) carrying the calls found as tool calls and the rest
    of the text as its content; None when none was found. Each call keeps the name as the model wrote it (the
    gateway resolves it when the call runs) and gets the id `toolgate_text_<message id>_<index>`. What was read
    is in `response_metadata["toolgate"]["calls_from_text"]`: the envelope, its wrappers and the text as
    written."""
    if not found.calls:
        if found.refusal:
            logger.debug(
                "calls_from_text: no calls taken from the AIMessage %s (%s, read as %s): %s",
                message.id,
                found.refusal_reason,
                found.format,
                found.refusal,
            )
        return None
    base = _ID_UNSAFE.sub("_", message.id) if message.id else uuid.uuid4().hex
    calls, invalid = [], []
    for index, call in enumerate(found.calls):
        call_id = f"toolgate_text_{base}_{index}"
        args = _parsed(call.arguments)
        if isinstance(args, dict):
            calls.append(tool_call(name=call.name, args=args, id=call_id))
        else:
            error = "the arguments read from the text are not a JSON object"
            invalid.append(invalid_tool_call(name=call.name, args=call.arguments, id=call_id, error=error))
    toolgate = dict(message.response_metadata.get("toolgate") or {})
    toolgate["calls_from_text"] = {
        "envelope": found.envelope,
        "wrappers": list(found.wrappers),
        "format": found.format,
        "text": text,
    }
    return AIMessage(
        content=_content_with(message.content, found.rest),
        tool_calls=calls,
        invalid_tool_calls=invalid,
        id=message.id,
        name=message.name,
        additional_kwargs=dict(message.additional_kwargs),
        response_metadata={**message.response_metadata, "toolgate": toolgate},
        usage_metadata=message.usage_metadata,
    )


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return None


def _is_text(block: Any) -> bool:
    return isinstance(block, str) or (
        isinstance(block, Mapping) and block.get("type") == "text" and isinstance(block.get("text"), str)
    )


def _content_with(content: Any, rest: str) -> Any:
    """The content with its text replaced by `rest`: a str content becomes `rest`; in a list of blocks the text
    blocks become one block holding `rest` (none when it is empty), where the first was, and every other block
    (reasoning, images, ...) stays."""
    if isinstance(content, str):
        return rest
    out: list[Any] = []
    placed = False
    for block in content:
        if not _is_text(block):
            out.append(block)
        elif not placed:
            placed = True
            if rest:
                out.append(rest if isinstance(block, str) else {"type": "text", "text": rest})
    return out


def last_message(state: Any, messages_key: str = "messages") -> Any:
    """The last message of a graph's state (a dict, or an object with the messages as an attribute), or None."""
    messages = state.get(messages_key) if isinstance(state, Mapping) else getattr(state, messages_key, None)
    return messages[-1] if messages else None


def calls_from_text_hook(
    client: Client | AsyncClient,
    *,
    tools: Sequence[str] | None = None,
    context: Any = None,
    timeout: float | None = None,
    messages_key: str = "messages",
    format: str | None = None,
) -> RunnableLambda:
    """A node that reads the calls a model wrote in its last answer's text instead of making them, for
    `create_react_agent(model, tools=GatewayToolNode(client), post_model_hook=calls_from_text_hook(client))`
    (version "v2", the default), or for a `StateGraph` between the model's node and `tools_condition`. When the
    last message is an AIMessage without tool calls and the gateway finds calls in its text, it answers that
    AIMessage again (same id) carrying them as tool calls, with the text that is not a call as its content; else
    it answers nothing. Runs on a `Client` (sync and async graphs) or an `AsyncClient` (async graphs).

    `tools`: the registered names of the tools the model was offered (default: every tool the run's tenant sees);
    `context`: the CallContext's defaults, as `GatewayToolNode` takes them; `format`: the model's output format
    (default: the gateway reads the format of the model named in the AIMessage's metadata)."""
    reader = TextCallReader(client, tools=tools, context=context, timeout=timeout, format=format)

    def hook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        answered = reader.read(last_message(state, messages_key), config)
        return {messages_key: [answered]} if answered is not None else {}

    async def ahook(state: Any, config: RunnableConfig) -> dict[str, Any]:
        answered = await reader.aread(last_message(state, messages_key), config)
        return {messages_key: [answered]} if answered is not None else {}

    return RunnableLambda(hook, afunc=ahook, name="calls_from_text")

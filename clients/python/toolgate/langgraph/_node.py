"""`GatewayToolNode`: the LangGraph node itself. It reads the tool calls out of the graph's input, runs them with
the steps of `_review` on a sync or async client, and answers the LangChain messages `_transcript` makes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable

from ..client import AsyncClient, Client
from ..types import CallContext, ToolMessage, ToolStatus
from ._binding import context_from_config
from ._review import Memo, arun, drive, perform_async, perform_sync, run
from ._transcript import rewrite_ai_message, to_langchain

ErrorHook = Callable[[dict[str, Any], ToolMessage], "str | LCToolMessage | None"]


class GatewayToolNode(RunnableCallable):
    """Runs the last AIMessage's tool calls through the gateway. Use it where `ToolNode` would go:

        builder.add_node("tools", GatewayToolNode(client))
        builder.add_conditional_edges("agent", tools_condition)

    `client` is a `Client` (for `invoke`/`stream`) or an `AsyncClient` (for `ainvoke`/`astream`); a `Client`
    also serves the async methods, from a worker thread.

    - `context`: a CallContext, dict, or `callable(config)` giving the defaults the RunnableConfig completes.
    - `rewrite_transcript` (default True): when what ran differs from what the AIMessage says, answer the
      AIMessage again (same id) with the arguments that ran.
    - `on_error(tool_call, message)`: called for each failed call with the LangChain tool call and the typed
      `toolgate.ToolMessage` (its `error.original_arguments` is the input that caused the failure). It may
      return a replacement content (str), a whole LangChain ToolMessage, or None to keep the default.
    - `review` (default True): interrupt for calls that need review. With False the gateway waits for the
      decision until the request's deadline instead (review_mode WAIT).
    """

    def __init__(
        self,
        client: Client | AsyncClient,
        *,
        name: str = "tools",
        tags: Sequence[str] | None = None,
        messages_key: str = "messages",
        rewrite_transcript: bool = True,
        on_error: ErrorHook | None = None,
        context: CallContext | Mapping[str, Any] | Callable[[RunnableConfig], Any] | None = None,
        review: bool = True,
        timeout: float | None = None,
    ) -> None:
        super().__init__(self._func, self._afunc, name=name, tags=tags, trace=False)
        self.client = client
        self.messages_key = messages_key
        self.rewrite_transcript = rewrite_transcript
        self.on_error = on_error
        self.context = context
        self.review = review
        self.timeout = timeout
        self._memo = Memo()

    # ---- entry points ----

    def _func(self, input: Any, config: RunnableConfig) -> Any:
        if isinstance(self.client, AsyncClient):
            raise TypeError("GatewayToolNode with an AsyncClient runs only in async graphs (ainvoke, astream)")
        ai, calls, as_list = self._parse_input(input)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx = self._context_of(config)
        driver = drive(calls, self._batch_key(config, calls), self._memo, self.review)
        client = self.client
        messages = run(driver, lambda step: perform_sync(client, step, self._review_mode, ctx, self.timeout))
        return self._finish(ai, calls, messages, as_list)

    async def _afunc(self, input: Any, config: RunnableConfig) -> Any:
        ai, calls, as_list = self._parse_input(input)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx = self._context_of(config)
        driver = drive(calls, self._batch_key(config, calls), self._memo, self.review)

        def perform(step: Any) -> Any:
            if isinstance(self.client, AsyncClient):
                return perform_async(self.client, step, self._review_mode, ctx, self.timeout)
            return asyncio.to_thread(perform_sync, self.client, step, self._review_mode, ctx, self.timeout)

        messages = await arun(driver, perform)
        return self._finish(ai, calls, messages, as_list)

    @property
    def _review_mode(self) -> str:
        return "defer" if self.review else "wait"

    # ---- input and output ----

    def _parse_input(self, input: Any) -> tuple[AIMessage, list[dict[str, Any]], bool]:
        if isinstance(input, list):
            messages, as_list = input, True
        elif isinstance(input, Mapping):
            messages, as_list = input.get(self.messages_key, []), False
        else:
            messages, as_list = getattr(input, self.messages_key, []), False
        ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
        if ai is None:
            raise ValueError("no AIMessage found in input")
        calls = [dict(c) for c in ai.tool_calls]
        # Calls whose arguments did not parse: the gateway repairs broken JSON, so they are run too.
        calls += [
            {"name": c["name"], "args": c.get("args") or "", "id": c["id"], "invalid": True}
            for c in ai.invalid_tool_calls
            if c.get("name") and c.get("id")
        ]
        for i, call in enumerate(calls):
            call["id"] = call.get("id") or f"toolgate_call_{i}"
        return ai, calls, as_list

    def _context_of(self, config: RunnableConfig) -> CallContext:
        default = self.context(config) if callable(self.context) else self.context
        return context_from_config(config, default)

    @staticmethod
    def _batch_key(config: RunnableConfig, calls: list[dict[str, Any]]) -> tuple:
        conf = config.get("configurable") or {}
        signature = tuple((c["id"], c["name"], json.dumps(c.get("args"), sort_keys=True, default=str)) for c in calls)
        return (str(conf.get("thread_id", "")), str(conf.get("checkpoint_ns", "")), signature)

    def _finish(self, ai: AIMessage, calls: list[dict[str, Any]], messages: list[ToolMessage], as_list: bool):
        tool_messages = [self._tool_message(call, m) for call, m in zip(calls, messages, strict=True)]
        return self._output(tool_messages, ai, calls, messages, as_list)

    def _tool_message(self, call: dict[str, Any], m: ToolMessage) -> LCToolMessage:
        out = to_langchain(m, call)
        if m.status is not ToolStatus.SUCCESS and self.on_error is not None:
            replaced = self.on_error({k: v for k, v in call.items() if k != "invalid"}, m)
            if isinstance(replaced, LCToolMessage):
                return replaced
            if replaced is not None:
                out.content = str(replaced)
        return out

    def _output(self, tool_messages: list[LCToolMessage], ai: AIMessage, calls, messages, as_list: bool) -> Any:
        if as_list:
            return tool_messages
        updates: list[AnyMessage] = []
        if self.rewrite_transcript and calls:
            rewritten = rewrite_ai_message(ai, calls, messages)
            if rewritten is not None:
                updates.append(rewritten)
        return {self.messages_key: [*updates, *tool_messages]}

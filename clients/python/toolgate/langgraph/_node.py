"""`GatewayToolNode`: the LangGraph node itself, a `ToolNode` subclass. It reads the tool calls out of the graph's
input, runs them with the steps of `_review` on a sync or async client, and answers the LangChain messages
`_transcript` makes."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode

from ..client import AsyncClient, Client
from ..types import CallContext, ToolMessage
from ._binding import agateway_tools, fixed_context, gateway_tools, run_context
from ._review import Memo, execute_async, execute_sync
from ._transcript import ErrorHook, answer, rewrite_ai_message, split_answers

# Marks on the calls the node sends: arguments that did not parse, and an id the node gave the call.
_INVALID, _ID_GIVEN = "invalid", "toolgate_id_given"


class GatewayToolNode(ToolNode):
    """Runs the last AIMessage's tool calls through the gateway, in one ExecuteBatch. It takes ToolNode's place in
    a `StateGraph` whose state holds the messages (`MessagesState`, or a list of messages), and is one for
    prebuilt agents:

        builder.add_node("tools", GatewayToolNode(client))
        builder.add_conditional_edges("agent", tools_condition)

        agent = create_react_agent(model, tools=GatewayToolNode(client))

    Its `tools_by_name` are the gateway's tools as LangChain tools (`gateway_tools`), which a prebuilt agent binds
    its model to; the node never invokes them. With a `Client` they are fetched when first asked for, as the
    `context` (when not a callable) sees them; with an `AsyncClient`, pass them (`tools=await
    agateway_tools(client)`) or build the node with `await GatewayToolNode.acreate(client)`.

    Sent one call at a time (`Send`, as `create_react_agent`'s default version "v2" does), the node still sends
    one batch per AIMessage: the task carrying the first of the AIMessage's unanswered calls runs all of them, and
    answers every ToolMessage and the rewritten AIMessage; the tasks of the other calls answer nothing. A call sent
    that the last AIMessage does not carry runs on its own.

    `client` is a `Client` (for `invoke`/`stream`) or an `AsyncClient` (for `ainvoke`/`astream`); a `Client`
    also serves the async methods, from a worker thread. Resuming a review decides it through ToolReview, so
    with `review` on the client needs the gateway's review (or admin) token: `Client(..., review_token=...)`.

    - `context`: a CallContext, dict, or `callable(config)` giving the defaults the RunnableConfig completes.
    - `rewrite_transcript` (default True): when what ran differs from what the AIMessage says, answer the
      AIMessage again (same id) with the arguments that ran. A packed parallel call the gateway split (one
      array per parameter that takes one value) is always written as the calls it was split into, with ids
      `<id>`, `<id>_2`, ..., each answered by its own ToolMessage.
    - `on_error(tool_call, message)`: called for each call that answered an error (`message.error` is set,
      never None), with the LangChain tool call and the typed `toolgate.ToolMessage` (its
      `error.original_arguments` is the input that caused the failure). It may return a replacement content
      (str), a whole LangChain ToolMessage, or None to keep the default.
    - `review` (default True): interrupt for calls that need review. With False the gateway waits for the
      decision until the request's deadline instead (review_mode WAIT).

    Tool calls need distinct ids (two calls with one id raise ValueError). A call without one gets an id made
    from the AIMessage's id and its index, and the AIMessage is answered again (same message id) carrying it,
    even with `rewrite_transcript` off, so each ToolMessage answers a call in the transcript.
    """

    def __init__(
        self,
        client: Client | AsyncClient,
        *,
        tools: Sequence[BaseTool] | None = None,
        name: str = "tools",
        tags: Sequence[str] | None = None,
        messages_key: str = "messages",
        rewrite_transcript: bool = True,
        on_error: ErrorHook | None = None,
        context: CallContext | Mapping[str, Any] | Callable[[RunnableConfig], Any] | None = None,
        review: bool = True,
        timeout: float | None = None,
    ) -> None:
        super().__init__(list(tools or ()), name=name, tags=list(tags) if tags else None, messages_key=messages_key)
        self._tools_given = tools is not None
        self.client = client
        self.messages_key = messages_key
        self.rewrite_transcript = rewrite_transcript
        self.on_error = on_error
        self.context = context
        self.review = review
        self.timeout = timeout
        self._memo = Memo()

    @classmethod
    async def acreate(cls, client: AsyncClient, **kwargs: Any) -> GatewayToolNode:
        """A node on an `AsyncClient`, carrying the gateway's tools for a prebuilt agent to bind."""
        if "tools" not in kwargs:
            context = fixed_context(kwargs.get("context"))
            kwargs["tools"] = await agateway_tools(client, context=context, timeout=kwargs.get("timeout"))
        return cls(client, **kwargs)

    @property
    def tools_by_name(self) -> dict[str, BaseTool]:
        """The gateway's tools by name, for prebuilt agents to bind their model to; fetched on first use when the
        node was built on a `Client` without `tools`."""
        if not self._tools_given:
            if isinstance(self.client, AsyncClient):
                raise TypeError(
                    "GatewayToolNode on an AsyncClient has no tools to give a prebuilt agent: build it with "
                    "`await GatewayToolNode.acreate(client)` or pass `tools=await agateway_tools(client)`"
                )
            tools = gateway_tools(self.client, context=fixed_context(self.context), timeout=self.timeout)
            self._tools_by_name = {t.name: t for t in tools}
            self._tools_given = True
        return self._tools_by_name

    # ---- entry points ----

    def _func(self, input: Any, config: RunnableConfig) -> Any:
        if isinstance(self.client, AsyncClient):
            raise TypeError("GatewayToolNode with an AsyncClient runs only in async graphs (ainvoke, astream)")
        ai, calls, as_list = self._parse_input(input, config)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx, key = run_context(self.context, config), self._batch_key(config, calls)
        messages = execute_sync(self.client, calls, self.review, ctx, self.timeout, self._memo, key)
        return self._finish(ai, calls, messages, as_list)

    async def _afunc(self, input: Any, config: RunnableConfig) -> Any:
        ai, calls, as_list = self._parse_input(input, config)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx, key = run_context(self.context, config), self._batch_key(config, calls)
        messages = await execute_async(self.client, calls, self.review, ctx, self.timeout, self._memo, key)
        return self._finish(ai, calls, messages, as_list)

    # ---- input and output ----

    def _parse_input(self, input: Any, config: RunnableConfig) -> tuple[AIMessage, list[dict[str, Any]], bool]:
        """The last AIMessage (its tool calls given ids where they had none), the calls to send, and whether the
        input was a list of messages."""
        sent = _sent_calls(input)
        if sent is not None:
            return self._parse_sent(input, sent, config)
        as_list = isinstance(input, list)
        messages = self._messages_of(input)
        position = _last_ai(messages)
        if position is None:
            raise ValueError("no AIMessage found in input")
        written = messages[position]
        ai = with_call_ids(written, position, config)
        return ai, _calls_of(ai, written), as_list

    def _parse_sent(self, input: Any, sent: list[dict[str, Any]], config: RunnableConfig):
        """Calls sent on their own (`Send`): the task of the AIMessage's first unanswered call runs all its
        unanswered calls, the other tasks none; calls the last AIMessage does not carry run alone."""
        messages = self._messages_of(self._extract_state(input, config))
        position = _last_ai(messages)
        if position is not None:
            written = messages[position]
            ai = with_call_ids(written, position, config)
            answered = {m.tool_call_id for m in messages[position + 1 :] if isinstance(m, LCToolMessage)}
            calls = [c for c in _calls_of(ai, written) if c["id"] not in answered]
            ids = [_sent_id(s, written, ai) for s in sent]
            if calls and all(i in {c["id"] for c in calls} for i in ids):
                return ai, calls if calls[0]["id"] in ids else [], False
        # Not the AIMessage's calls: an AIMessage of their own, with no id, which is never answered again.
        alone = with_call_ids(AIMessage(content="", tool_calls=sent), 0, config)
        return alone, [dict(c) for c in alone.tool_calls], False

    def _messages_of(self, input: Any) -> list[Any]:
        if isinstance(input, list):
            return input
        if isinstance(input, Mapping):
            return input.get(self.messages_key, [])
        return getattr(input, self.messages_key, [])

    @staticmethod
    def _batch_key(config: RunnableConfig, calls: list[dict[str, Any]]) -> tuple:
        conf = config.get("configurable") or {}
        signature = tuple((c["id"], c["name"], json.dumps(c.get("args"), sort_keys=True, default=str)) for c in calls)
        return (str(conf.get("thread_id", "")), str(conf.get("checkpoint_ns", "")), signature)

    def _finish(self, ai: AIMessage, calls: list[dict[str, Any]], messages: list[ToolMessage], as_list: bool):
        tool_messages = []
        for call, m in zip(calls, messages, strict=True):
            # A packed parallel call the gateway split: one ToolMessage per call it was split into, written into
            # the AIMessage too. A node given a list of messages cannot rewrite the AIMessage: there the split
            # call gets one ToolMessage, whose content gives every part's result.
            answers = split_answers(call, m) if m.parts and not as_list else [(call, m)]
            tool_messages += [self._tool_message(sub, answer) for sub, answer in answers]
        return self._output(tool_messages, ai, calls, messages, as_list)

    def _tool_message(self, call: dict[str, Any], m: ToolMessage) -> LCToolMessage:
        return answer(m, {k: v for k, v in call.items() if k not in (_INVALID, _ID_GIVEN)}, self.on_error)

    def _output(self, tool_messages: list[LCToolMessage], ai: AIMessage, calls, messages, as_list: bool) -> Any:
        if as_list:
            return tool_messages
        updates: list[AnyMessage] = []
        split = any(m.parts for m in messages)
        # A split call is always written out as its parts, so that each ToolMessage answers a call the AIMessage
        # carries, even with `rewrite_transcript` off.
        rewrite = (self.rewrite_transcript or split) and calls
        rewritten = (
            rewrite_ai_message(ai, calls, messages, splits_only=not self.rewrite_transcript) if rewrite else None
        )
        if rewritten is None and ai.id is not None and any(c.get(_ID_GIVEN) for c in calls):
            rewritten = ai  # the tool call ids the node gave the calls, so the ToolMessages answer calls it carries
        if rewritten is not None:
            updates.append(rewritten)
        return {self.messages_key: [*updates, *tool_messages]}


# ---- reading the input ----


def _sent_calls(input: Any) -> list[dict[str, Any]] | None:
    """The tool calls of a `Send` payload (a ToolCallWithContext, or a list of tool calls), or None."""
    if isinstance(input, Mapping) and input.get("__type") == "tool_call_with_context":
        return [dict(input["tool_call"])]
    if isinstance(input, list) and input and isinstance(input[-1], Mapping) and input[-1].get("type") == "tool_call":
        return [dict(c) for c in input]
    return None


def _last_ai(messages: Sequence[Any]) -> int | None:
    return next((i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], AIMessage)), None)


def _calls_of(ai: AIMessage, written: AIMessage) -> list[dict[str, Any]]:
    """The calls to send for `ai`: its tool calls, then its named invalid ones (the gateway repairs broken JSON),
    each marked when the node gave it its id."""
    calls = [dict(c) for c in ai.tool_calls]
    calls += [
        {"name": c["name"], "args": c.get("args") or "", "id": c["id"], _INVALID: True}
        for c in ai.invalid_tool_calls
        if c.get("name")
    ]
    if ai is not written:
        written_ids = {c.get("id") for c in [*written.tool_calls, *written.invalid_tool_calls]}
        for call in calls:
            # The AIMessage is answered again, carrying the ids the node gave.
            call[_ID_GIVEN] = call["id"] not in written_ids
    return calls


def _sent_id(sent: Mapping[str, Any], written: AIMessage, ai: AIMessage) -> str | None:
    """The id a sent call has in `ai`: its own, or, for a call sent without one, the id the node gave it."""
    if sent.get("id"):
        return sent["id"]
    same = (
        i for i, c in enumerate(written.tool_calls) if c["name"] == sent.get("name") and c["args"] == sent.get("args")
    )
    index = next(same, None)
    return None if index is None else ai.tool_calls[index]["id"]


# ---- tool call ids ----

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def with_call_ids(ai: AIMessage, position: int, config: RunnableConfig) -> AIMessage:
    """`ai` with an id on each tool call (and each named invalid tool call) that has none, so every ToolMessage
    answers a call the AIMessage carries. A generated id is the same on every run of the node over the same
    message (a review's resume runs it again): `toolgate_<message id>_<index>`, or, for a message without an id,
    a digest of the message, its place in the input and the thread. Refuses an id that two calls share: the
    gateway answers a reviewed call by its id, so the second would get the first one's outcome."""
    given = [c.get("id") for c in ai.tool_calls] + [c.get("id") for c in ai.invalid_tool_calls if c.get("name")]
    seen: set[str] = set()
    for call_id in filter(None, given):
        if call_id in seen:
            raise ValueError(
                f"the AIMessage {ai.id!r} has two tool calls with the id {call_id!r}: each call needs its own id"
            )
        seen.add(call_id)
    if all(given):
        return ai
    if ai.id:
        base = _ID_UNSAFE.sub("_", ai.id)
    else:
        conf = config.get("configurable") or {}
        seed = [conf.get("thread_id"), conf.get("checkpoint_ns"), position, ai.content, ai.tool_calls]
        base = hashlib.sha256(json.dumps(seed, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def fill(calls: list[Any], kind: str) -> list[Any]:
        return [c if c.get("id") else {**c, "id": f"toolgate_{base}_{kind}{i}"} for i, c in enumerate(calls)]

    return ai.model_copy(
        update={"tool_calls": fill(ai.tool_calls, ""), "invalid_tool_calls": fill(ai.invalid_tool_calls, "invalid")}
    )

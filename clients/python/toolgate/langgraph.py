"""LangGraph integration: `GatewayToolNode`, a drop-in for `langgraph.prebuilt.ToolNode` that runs the last
AIMessage's tool calls through the gateway, and `bind_gateway_tools`, which binds a chat model to the gateway's
model-facing definitions. Needs the `langgraph` extra (`pip install toolgate[langgraph]`).

What the node does with one AIMessage:

1. Sends its tool calls as one ExecuteBatch, with the CallContext taken from the RunnableConfig
   (`configurable.user_id`, `configurable.tenant`, `configurable.session_id` or else `thread_id`), and
   `review_mode = DEFER`, so a call that needs a person answers PENDING_REVIEW at once.
2. For pending calls, raises a LangGraph `interrupt` carrying the pending call. Resuming with
   `Command(resume={"action": "continue" | "update" | "feedback", "data": ...})` decides it through ToolReview
   (APPROVE, EDIT with `data` as the new arguments, REJECT with `data` as the feedback), then executes the same
   call id again, which answers the outcome (the gateway runs a reviewed call once, however often it is asked).
3. Answers one LangChain `ToolMessage` per call, in call order: `status="error"` on failure with the typed error in
   `additional_kwargs["error"]`, the structured result as `artifact`; and, when what ran differs from what the
   AIMessage says (repaired, injected parameters removed, edited by a reviewer), the AIMessage again with the
   same id and the arguments that ran, so the `add_messages` reducer replaces it in the transcript.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import grpc
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.types import interrupt

from .client import AsyncClient, Client, GatewayError
from .types import CallContext, ToolMessage, ToolStatus

__all__ = ["GatewayToolNode", "abind_gateway_tools", "bind_gateway_tools", "context_from_config"]

#: The resume actions, and the ToolReview action each maps to. The gateway's own names are accepted too.
RESUME_ACTIONS = {
    "continue": "approve",
    "update": "edit",
    "feedback": "reject",
    "approve": "approve",
    "edit": "edit",
    "reject": "reject",
}

#: The `type` of the value a review interrupt carries.
INTERRUPT_TYPE = "toolgate.review"

_TOOL_NAME_RULES = {"tool_name_normalized", "tool_name_prefix", "tool_name_residue"}
_PROVIDER_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# Batches interrupted for review and not yet resumed, remembered in this process; see `_Memo`.
_MEMO_LIMIT = 1024

ErrorHook = Callable[[dict[str, Any], ToolMessage], "str | LCToolMessage | None"]


def bind_gateway_tools(model: Any, client: Client, *, context: Any = None, **kwargs: Any) -> Any:
    """`model.bind_tools(...)` with the gateway's definitions in OpenAI form, as the context's tenant sees them
    (injected parameters left out). Extra keyword arguments go to `bind_tools` (e.g. `tool_choice`)."""
    return model.bind_tools(client.definitions("openai", context=context), **kwargs)


async def abind_gateway_tools(model: Any, client: AsyncClient, *, context: Any = None, **kwargs: Any) -> Any:
    """`bind_gateway_tools` for an `AsyncClient`."""
    return model.bind_tools(await client.definitions("openai", context=context), **kwargs)


def context_from_config(config: RunnableConfig | None, default: Any = None) -> CallContext:
    """The CallContext of a run: `configurable.tenant`, `configurable.user_id`, and `configurable.session_id`
    or else `configurable.thread_id`, each over the same field of `default`; `configurable.toolgate_values`
    (a dict) is added to `default`'s values."""
    base = CallContext.of(default)
    conf = (config or {}).get("configurable") or {}
    session = conf.get("session_id") or conf.get("thread_id")
    return CallContext(
        tenant=str(conf.get("tenant") or base.tenant),
        user_id=str(conf.get("user_id") or base.user_id),
        session_id=str(session) if session else base.session_id,
        values={**base.values, **{str(k): str(v) for k, v in (conf.get("toolgate_values") or {}).items()}},
    )


class _Memo:
    """Answers of calls that already ran in a batch now interrupted for review, and which calls of it are
    pending, keyed by the batch (thread, namespace and the calls themselves). LangGraph runs the node again from
    the start on resume; with this, the calls that ran are not sent again and the interrupts line up with the
    same pending calls. It lives in this process: a resume in another process sends the batch again, which
    runs its calls that need no review a second time (reviewed calls are answered by id, never run twice)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._batches: OrderedDict[tuple, tuple[dict[str, ToolMessage], list[str]]] = OrderedDict()

    def get(self, key: tuple) -> tuple[dict[str, ToolMessage], list[str]] | None:
        with self._lock:
            found = self._batches.get(key)
            return None if found is None else (dict(found[0]), list(found[1]))

    def put(self, key: tuple, answers: dict[str, ToolMessage], pending: list[str]) -> None:
        with self._lock:
            self._batches[key] = (dict(answers), list(pending))
            self._batches.move_to_end(key)
            while len(self._batches) > _MEMO_LIMIT:
                self._batches.popitem(last=False)

    def drop(self, key: tuple) -> None:
        with self._lock:
            self._batches.pop(key, None)


# The steps of one node run, as requests the runner performs: ("batch", calls) -> list[ToolMessage];
# ("decide", call_id, action, data) -> None or the GatewayError it raised.
_Step = tuple
_Driver = Generator[_Step, Any, list[ToolMessage]]


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
        self._memo = _Memo()

    # ---- entry points ----

    def _func(self, input: Any, config: RunnableConfig) -> Any:
        if isinstance(self.client, AsyncClient):
            raise TypeError("GatewayToolNode with an AsyncClient runs only in async graphs (ainvoke, astream)")
        ai, calls, as_list = self._parse_input(input)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx = self._context_of(config)
        driver = self._drive(calls, self._batch_key(config, calls))
        client = self.client
        messages = _run(driver, lambda step: _perform_sync(client, step, self._review_mode, ctx, self.timeout))
        return self._finish(ai, calls, messages, as_list)

    async def _afunc(self, input: Any, config: RunnableConfig) -> Any:
        ai, calls, as_list = self._parse_input(input)
        if not calls:
            return self._output([], ai, [], [], as_list)
        ctx = self._context_of(config)
        driver = self._drive(calls, self._batch_key(config, calls))
        result: Any = None
        try:
            step = next(driver)
            while True:
                if isinstance(self.client, AsyncClient):
                    result = await _perform_async(self.client, step, self._review_mode, ctx, self.timeout)
                else:
                    result = await asyncio.to_thread(
                        _perform_sync, self.client, step, self._review_mode, ctx, self.timeout
                    )
                step = driver.send(result)
        except StopIteration as stop:
            messages = stop.value
        return self._finish(ai, calls, messages, as_list)

    # ---- the steps, shared by the sync and async runners ----

    def _drive(self, calls: list[dict[str, Any]], key: tuple) -> _Driver:
        remembered = self._memo.get(key)
        if remembered is not None:
            # A resume: the answers of the first run, those that ran and those pending; nothing is sent again
            # before the decisions.
            answers, pending_ids = remembered
        else:
            answers = dict(zip((c["id"] for c in calls), (yield ("batch", calls)), strict=True))
            pending_ids = [c["id"] for c in calls if answers[c["id"]].pending_review]
            if not pending_ids or not self.review:
                return [answers[c["id"]] for c in calls]
            self._memo.put(key, answers, pending_ids)
        pending_calls = [c for c in calls if c["id"] in pending_ids]
        decisions = self._decisions(pending_calls, answers)
        for call in pending_calls:
            action, data = decisions[call["id"]]
            while True:
                refused = yield ("decide", call["id"], action, data)
                if refused is None or refused.code in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND):
                    # Decided now, or before this run (a resume replayed, or a reviewer elsewhere): either way
                    # executing the call id again answers the outcome.
                    break
                if refused.code != grpc.StatusCode.INVALID_ARGUMENT:
                    raise refused
                # The edited arguments do not fit the tool: ask again about this call, saying why.
                action, data = self._decisions([call], answers, error=refused.details)[call["id"]]
        outcomes = yield ("batch", pending_calls)
        for call, outcome in zip(pending_calls, outcomes, strict=True):
            answers[call["id"]] = outcome
        self._memo.drop(key)
        return [answers[c["id"]] for c in calls]

    def _decisions(
        self, pending: list[dict[str, Any]], answers: Mapping[str, ToolMessage], *, error: str | None = None
    ) -> dict[str, tuple]:
        """A decision for every pending call, interrupting until each has one. A resume value answers the first
        undecided call, or is a list answering them in order, or a dict keyed by tool call id."""
        decisions: dict[str, tuple] = {}
        while undecided := [c for c in pending if c["id"] not in decisions]:
            value = interrupt(self._payload(undecided, answers, error=error))
            for call_id, decision in _resume_decisions(value, [c["id"] for c in undecided]).items():
                decisions.setdefault(call_id, decision)
        return decisions

    @staticmethod
    def _payload(
        undecided: list[dict[str, Any]], answers: Mapping[str, ToolMessage], *, error: str | None = None
    ) -> dict[str, Any]:
        """What the interrupt carries: the first undecided call at the top level, all of them in `pending`."""
        pending = []
        for call in undecided:
            answer = answers[call["id"]]
            pending.append(
                {
                    "tool_call_id": call["id"],
                    "name": answer.name or call["name"],
                    "args": answer.arguments if answer.effective_arguments else call.get("args"),
                    "content": answer.content,
                    "repairs": [r.to_dict() for r in answer.repairs],
                }
            )
        payload = {
            "type": INTERRUPT_TYPE,
            **pending[0],
            "pending": pending,
            "actions": ["continue", "update", "feedback"],
        }
        if error is not None:
            payload["error"] = error
        return payload

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


def _run(driver: _Driver, perform: Callable[[_Step], Any]) -> list[ToolMessage]:
    try:
        step = next(driver)
        while True:
            step = driver.send(perform(step))
    except StopIteration as stop:
        return stop.value


def _perform_sync(client: Client, step: _Step, mode: str, ctx: CallContext, timeout: float | None) -> Any:
    if step[0] == "batch":
        return client.execute_batch(step[1], context=ctx, review_mode=mode, timeout=timeout)
    _, call_id, action, data = step
    try:
        client.decide(call_id, action, tenant=ctx.tenant, timeout=timeout, **_decide_kwargs(action, data))
    except GatewayError as err:
        return err
    return None


async def _perform_async(client: AsyncClient, step: _Step, mode: str, ctx: CallContext, timeout: float | None) -> Any:
    if step[0] == "batch":
        return await client.execute_batch(step[1], context=ctx, review_mode=mode, timeout=timeout)
    _, call_id, action, data = step
    try:
        await client.decide(call_id, action, tenant=ctx.tenant, timeout=timeout, **_decide_kwargs(action, data))
    except GatewayError as err:
        return err
    return None


def _decide_kwargs(action: str, data: Any) -> dict[str, Any]:
    if action == "edit":
        return {"arguments": data}
    if action == "reject":
        return {"feedback": "" if data is None else data if isinstance(data, str) else json.dumps(data)}
    return {}


def _resume_decisions(value: Any, undecided: list[str]) -> dict[str, tuple[str, Any]]:
    """Reads a resume value: `{"action", "data"}` for the first undecided call, a list of those for the
    undecided calls in order, or a dict of them keyed by tool call id."""
    if isinstance(value, Mapping) and "action" in value:
        return {undecided[0]: _decision(value)}
    if isinstance(value, Mapping):
        return {str(call_id): _decision(d) for call_id, d in value.items()}
    if isinstance(value, list | tuple):
        return {call_id: _decision(d) for call_id, d in zip(undecided, value, strict=False)}
    raise ValueError(
        'resume a toolgate review with {"action": "continue" | "update" | "feedback", "data": ...}, a list of '
        f"those, or a dict of them keyed by tool call id; got {value!r}"
    )


def _decision(value: Any) -> tuple[str, Any]:
    if not isinstance(value, Mapping) or "action" not in value:
        raise ValueError(f'a review decision is {{"action": ..., "data": ...}}, got {value!r}')
    action = RESUME_ACTIONS.get(str(value["action"]).lower())
    if action is None:
        raise ValueError(f"a review action is continue, update or feedback, not {value['action']!r}")
    data = value.get("data")
    if action == "edit" and not isinstance(data, Mapping | str):
        raise ValueError(f"an update needs the new arguments as data (a dict), got {data!r}")
    return action, data


# ---- conversions to LangChain messages ----


def to_langchain(m: ToolMessage, call: Mapping[str, Any] | None = None) -> LCToolMessage:
    """A typed `toolgate.ToolMessage` as a LangChain ToolMessage: `status="error"` unless it succeeded, the typed
    error in `additional_kwargs["error"]`, the repairs in `additional_kwargs["repairs"]`, the structured result
    as `artifact`, and the attempts, duration and effective arguments in `response_metadata["toolgate"]`."""
    additional: dict[str, Any] = {}
    if m.error is not None:
        additional["error"] = m.error.to_dict()
    if m.repairs:
        additional["repairs"] = [r.to_dict() for r in m.repairs]
    return LCToolMessage(
        content=m.content,
        tool_call_id=m.tool_call_id or (call or {}).get("id", ""),
        name=m.name or (call or {}).get("name"),
        status="success" if m.status is ToolStatus.SUCCESS else "error",
        artifact=m.structured,
        additional_kwargs=additional,
        response_metadata={
            "toolgate": {
                "status": m.status.value,
                "attempts": m.attempts,
                "duration_us": m.duration_us,
                "effective_arguments": m.arguments,
            }
        },
    )


def rewrite_ai_message(ai: AIMessage, calls: list[dict[str, Any]], messages: list[ToolMessage]) -> AIMessage | None:
    """The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, or None when all
    ran as written. Same id, so LangGraph's `add_messages` replaces the original in the state."""
    ran: dict[str, tuple[str, Any]] = {}
    for call, m in zip(calls, messages, strict=True):
        args = m.arguments
        if not isinstance(args, dict):
            continue  # never got as far as running (or not as an object): nothing to show instead
        name = call["name"]
        if any(r.rule in _TOOL_NAME_RULES for r in m.repairs) and _PROVIDER_SAFE.match(m.name or ""):
            name = m.name
        if call.get("invalid") or args != call.get("args") or name != call["name"]:
            ran[call["id"]] = (name, args)
    if not ran or ai.id is None:
        return None
    tool_calls = []
    for tc in ai.tool_calls:
        if tc.get("id") in ran:
            name, args = ran[tc["id"]]
            tc = {**tc, "name": name, "args": args}
        tool_calls.append(tc)
    invalid = []
    for tc in ai.invalid_tool_calls:
        if tc.get("id") in ran:
            name, args = ran[tc["id"]]
            tool_calls.append({"name": name, "args": args, "id": tc["id"], "type": "tool_call"})
        else:
            invalid.append(tc)
    additional = dict(ai.additional_kwargs)
    if isinstance(additional.get("tool_calls"), list):
        # The provider's raw form (OpenAI's), kept in step so a provider that resends it shows the same.
        raw_calls = []
        for raw in additional["tool_calls"]:
            if isinstance(raw, Mapping) and raw.get("id") in ran and isinstance(raw.get("function"), Mapping):
                name, args = ran[raw["id"]]
                raw = {**raw, "function": {**raw["function"], "name": name, "arguments": json.dumps(args)}}
            raw_calls.append(raw)
        additional["tool_calls"] = raw_calls
    return ai.model_copy(
        update={"tool_calls": tool_calls, "invalid_tool_calls": invalid, "additional_kwargs": additional}
    )

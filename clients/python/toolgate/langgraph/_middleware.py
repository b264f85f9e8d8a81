"""LangChain v1 agent middleware (`create_agent(..., middleware=[...])`): `ToolgateMiddleware`, whose
`wrap_tool_call` sends each call to the gateway as the model wrote it, before the host's own tool and its schema
see it; and `CallsFromTextMiddleware`, whose `after_model` turns the calls a model wrote in its text into tool
calls. Imports `langchain`, which only this module needs (`pip install toolgate[langchain]`)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage as LCToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime

from ..client import AsyncClient, Client
from ._binding import fixed_context, gateway_tools, run_context
from ._review import Memo, execute_async, execute_sync
from ._text_calls import TextCallReader, last_message
from ._transcript import ErrorHook, answer


class ToolgateMiddleware(AgentMiddleware):
    """Runs every tool call of a `create_agent` agent through the gateway: repaired, validated, injected and
    reviewed there, answering one LangChain ToolMessage (`status="error"` with the typed error in
    `additional_kwargs["error"]` when it failed, the structured result as `artifact`, the arguments that ran in
    `response_metadata["toolgate"]["effective_arguments"]`). The agent's own tools are never invoked, so their
    schemas never reject a call the gateway would repair. Each call is one `Execute` with the tool call's id.

    Unlike `GatewayToolNode`, it does not rewrite the AIMessage: `create_agent` runs each call as a task of its
    own, and tasks that each answered the AIMessage again would undo one another's rewrites."""

    def __init__(
        self,
        client: Client | AsyncClient,
        *,
        tools: Sequence[BaseTool] | None = None,
        context: Any = None,
        review: bool = True,
        on_error: ErrorHook | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__()
        if tools is None:
            if isinstance(client, AsyncClient):
                raise TypeError(
                    "toolgate_middleware on an AsyncClient cannot fetch the gateway's tools here: pass "
                    "tools=await agateway_tools(client), or tools=[] when the agent has its own"
                )
            tools = gateway_tools(client, context=fixed_context(context), timeout=timeout)
        self.tools = list(tools)
        self.client = client
        self.context = context
        self.review = review
        self.on_error = on_error
        self.timeout = timeout
        self._memo = Memo()

    @property
    def name(self) -> str:
        return "toolgate"

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Any]) -> LCToolMessage:
        if isinstance(self.client, AsyncClient):
            raise TypeError("toolgate_middleware with an AsyncClient runs only in async agents (ainvoke, astream)")
        call, config = _call_of(request)
        ctx, key = run_context(self.context, config), _key(config, call)
        [message] = execute_sync(self.client, [call], self.review, ctx, self.timeout, self._memo, key)
        return answer(message, call, self.on_error)

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[..., Awaitable[Any]]) -> LCToolMessage:
        call, config = _call_of(request)
        ctx, key = run_context(self.context, config), _key(config, call)
        [message] = await execute_async(self.client, [call], self.review, ctx, self.timeout, self._memo, key)
        return answer(message, call, self.on_error)


class CallsFromTextMiddleware(AgentMiddleware):
    """Reads the calls a model wrote in its answer's text instead of making them (Hermes `<tool_call>`, pythonic
    `[f(a=1)]`, Llama, Mistral, harmony, Qwen3-Coder XML, ...) through the gateway's `CallsFromText`, so that
    `create_agent` routes to the tools instead of ending. Its `after_model` (and `aafter_model`) answers an
    AIMessage without tool calls again (same id) carrying the calls found as tool calls, each with the name as
    written and the id `toolgate_text_<message id>_<index>`, and the text that is not a call as its content; the
    text as written stays in `response_metadata["toolgate"]["calls_from_text"]`. A text with no calls (prose, a
    mention, an example, a tool not offered) leaves the AIMessage as it is; a refusal is logged at debug on
    `toolgate.langgraph`. The calls then run as any other: with `toolgate_middleware`, through the gateway, which
    resolves the names and repairs and validates the arguments.

    - `tools`: the registered names of the tools the model was offered; None: every tool the run's tenant sees.
      (Unlike `toolgate_middleware`'s `tools`, these are names, and this middleware registers no tool.)
    - `context`: a CallContext, dict, or `callable(config)` giving the defaults the run's config completes.
    - `format`: the model's output format (hermes, qwen3_coder_xml, llama3_json, llama3_python_tag, mistral,
      harmony, pythonic, json, or auto); None: the gateway reads the format of the model the AIMessage's
      metadata names."""

    def __init__(
        self,
        client: Client | AsyncClient,
        *,
        tools: Sequence[str] | None = None,
        context: Any = None,
        timeout: float | None = None,
        format: str | None = None,
    ) -> None:
        super().__init__()
        self.tools = []
        self.reader = TextCallReader(client, tools=tools, context=context, timeout=timeout, format=format)

    @property
    def name(self) -> str:
        return "toolgate_calls_from_text"

    def after_model(self, state: Any, runtime: Runtime) -> dict[str, Any] | None:
        answered = self.reader.read(last_message(state), _run_config())
        return {"messages": [answered]} if answered is not None else None

    async def aafter_model(self, state: Any, runtime: Runtime) -> dict[str, Any] | None:
        answered = await self.reader.aread(last_message(state), _run_config())
        return {"messages": [answered]} if answered is not None else None


def _run_config() -> RunnableConfig:
    """The run's config, which a model hook is not given (`Runtime` has none); empty where LangGraph cannot tell
    (async code on Python 3.10), and the CallContext then comes from `context` alone."""
    try:
        return get_config()
    except RuntimeError:
        return {}


def _call_of(request: ToolCallRequest) -> tuple[dict[str, Any], RunnableConfig]:
    """The call as the model wrote it, and the run's config."""
    tool_call = request.tool_call
    config = getattr(request.runtime, "config", None) or {}
    return {"name": tool_call["name"], "args": tool_call.get("args"), "id": tool_call.get("id") or ""}, config


def _key(config: RunnableConfig, call: dict[str, Any]) -> tuple:
    """The memo's key of one call: the thread, the task's namespace and the call."""
    conf = config.get("configurable") or {}
    args = json.dumps(call.get("args"), sort_keys=True, default=str)
    return (str(conf.get("thread_id", "")), str(conf.get("checkpoint_ns", "")), ((call["id"], call["name"], args),))

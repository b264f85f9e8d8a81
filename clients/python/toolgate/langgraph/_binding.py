"""What a run brings from outside the node: the chat model bound to the gateway's model-facing definitions, the
gateway's tools as LangChain tools, and the CallContext read from LangGraph's RunnableConfig."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, ToolException

from ..client import AsyncClient, Client
from ..types import CallContext, ToolMessage
from ._blocks import content_of


def bind_gateway_tools(model: Any, client: Client, *, context: Any = None, **kwargs: Any) -> Any:
    """`model.bind_tools(...)` with the gateway's definitions in OpenAI form, as the context's tenant sees them
    (injected parameters left out). Extra keyword arguments go to `bind_tools` (e.g. `tool_choice`)."""
    return model.bind_tools(client.definitions("openai", context=context), **kwargs)


async def abind_gateway_tools(model: Any, client: AsyncClient, *, context: Any = None, **kwargs: Any) -> Any:
    """`bind_gateway_tools` for an `AsyncClient`."""
    return model.bind_tools(await client.definitions("openai", context=context), **kwargs)


def gateway_tools(client: Client, *, context: Any = None, timeout: float | None = None) -> list[BaseTool]:
    """The gateway's tools, as the context's tenant sees them (injected parameters left out), as LangChain tools:
    what `create_react_agent` and `create_agent` bind the model to. `GatewayToolNode` and `toolgate_middleware`
    never invoke them: they send each call to the gateway as the model wrote it, so no host-side schema check
    rejects a call the gateway would repair. Invoked on their own, each runs its call through the gateway too
    (with the CallContext of the run's config), answering the content and the structured result, or raising
    `ToolException` with the error's content."""
    definitions = client.definitions("openai", context=context, timeout=timeout)
    return [GatewayTool.of(d, client, context, timeout) for d in definitions]


async def agateway_tools(client: AsyncClient, *, context: Any = None, timeout: float | None = None) -> list[BaseTool]:
    """`gateway_tools` for an `AsyncClient`."""
    definitions = await client.definitions("openai", context=context, timeout=timeout)
    return [GatewayTool.of(d, client, context, timeout) for d in definitions]


class GatewayTool(BaseTool):
    """One gateway tool as a LangChain tool: its schema is the gateway's model-facing JSON Schema, which LangChain
    does not check; running it sends the call to the gateway, which repairs, validates and injects."""

    client: Any
    context: Any = None
    timeout: float | None = None
    response_format: str = "content_and_artifact"
    handle_tool_error: bool = True

    @classmethod
    def of(cls, definition: dict[str, Any], client: Client | AsyncClient, context: Any, timeout: float | None):
        function = definition.get("function", definition)
        return cls(
            name=function["name"],
            description=function.get("description") or "",
            args_schema=function.get("parameters") or {"type": "object", "properties": {}},
            client=client,
            context=context,
            timeout=timeout,
        )

    # The annotation, not the name, makes LangChain pass the run's config here: a tool parameter named `config`
    # stays the model's.
    def _run(self, toolgate_run_config: RunnableConfig, run_manager: Any = None, **args: Any) -> Any:
        if isinstance(self.client, AsyncClient):
            raise TypeError(f"the gateway tool {self.name!r} has an AsyncClient: run it with ainvoke")
        ctx = context_from_config(toolgate_run_config, self.context)
        return _answer(self.client.execute(self.name, args, context=ctx, timeout=self.timeout))

    async def _arun(self, toolgate_run_config: RunnableConfig, run_manager: Any = None, **args: Any) -> Any:
        if not isinstance(self.client, AsyncClient):
            return await asyncio.to_thread(self._run, toolgate_run_config, **args)
        ctx = context_from_config(toolgate_run_config, self.context)
        return _answer(await self.client.execute(self.name, args, context=ctx, timeout=self.timeout))


def _answer(m: ToolMessage) -> tuple[Any, Any]:
    if m.error is not None:
        raise ToolException(m.content)
    return content_of(m), m.structured


def fixed_context(context: Any) -> Any:
    """A context given as a value (not a function of the run's config), which fetching tools can use; else None."""
    return None if callable(context) else context


def run_context(context: Any, config: RunnableConfig) -> CallContext:
    """The CallContext of a run, over `context`: a CallContext, a dict, or a function of the run's config."""
    return context_from_config(config, context(config) if callable(context) else context)


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

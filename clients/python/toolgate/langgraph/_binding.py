"""What a run brings from outside the node: the chat model bound to the gateway's model-facing definitions, and
the CallContext read from LangGraph's RunnableConfig."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from ..client import AsyncClient, Client
from ..types import CallContext


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

"""LangGraph and LangChain integration: `GatewayToolNode`, a `langgraph.prebuilt.ToolNode` that runs the last
AIMessage's tool calls through the gateway (in a hand-built `StateGraph`, or as `create_react_agent`'s tools);
`toolgate_middleware`, LangChain v1 agent middleware for `create_agent`; `gateway_tools`, the gateway's tools as
LangChain tools; and `bind_gateway_tools`, which binds a chat model to the gateway's model-facing definitions. Needs
the `langgraph` extra (`pip install toolgate[langgraph]`); the middleware needs `langchain` too (the `langchain`
extra).

What the node does with one AIMessage:

1. Sends its tool calls as one ExecuteBatch, with the CallContext taken from the RunnableConfig
   (`configurable.user_id`, `configurable.tenant`, `configurable.session_id` or else `thread_id`), and
   `review_mode = DEFER`, so a call that needs a person answers PENDING_REVIEW at once.
2. For pending calls, raises a LangGraph `interrupt` carrying the pending call. Resuming with
   `Command(resume={"action": "continue" | "update" | "feedback", "data": ...})` decides it through ToolReview
   (APPROVE, EDIT with `data` as the new arguments, REJECT with `data` as the feedback), then executes the same
   call id again, which answers the outcome (the gateway runs a reviewed call once, however often it is asked).
   A call decided elsewhere first (FAILED_PRECONDITION) answers that decision's outcome; a review the gateway no
   longer has (NOT_FOUND) raises `GatewayError`; a call still pending after its decision interrupts again.
3. Answers one LangChain `ToolMessage` per call, in call order: `status="error"` on failure with the typed error in
   `additional_kwargs["error"]`, the structured result as `artifact`; and, when what ran differs from what the
   AIMessage says (repaired, injected parameters removed, edited by a reviewer), the AIMessage again with the
   same id and the arguments that ran, so the `add_messages` reducer replaces it in the transcript.

The middleware does 1 to 3 for each call on its own (`create_agent` runs each call as a task), without the
AIMessage rewrite.

A model that writes its calls in its text instead of making them (Hermes `<tool_call>`, pythonic `[f(a=1)]`,
Llama, Mistral, harmony, ...) ends the graph with prose. `calls_from_text_middleware` (for `create_agent`) and
`calls_from_text_hook` (`create_react_agent`'s `post_model_hook`, or a `StateGraph` node) send such an AIMessage's
text to the gateway's `CallsFromText` and answer it again carrying the calls found as tool calls, its content the
text that is not a call, so the graph routes to the tools.

Layout (this module is the public surface; the others are private):
- `_node`: `GatewayToolNode`, reading the graph's input and answering its messages.
- `_middleware`: `ToolgateMiddleware` and `CallsFromTextMiddleware`, imported on first use of
  `toolgate_middleware` or `calls_from_text_middleware`.
- `_review`: the steps of one run, the review interrupt and its resume values, and the in-process memo of
  what each step answered.
- `_transcript`: `to_langchain` and `rewrite_ai_message`, the LangChain messages a run answers.
- `_binding`: `bind_gateway_tools`, `gateway_tools` (and their async forms) and `context_from_config`.
- `_text_calls`: `calls_from_text_hook`, and the AIMessage answered again with the calls its text held, which
  `_middleware`'s `CallsFromTextMiddleware` shares.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._binding import abind_gateway_tools, agateway_tools, bind_gateway_tools, context_from_config, gateway_tools
from ._node import GatewayToolNode
from ._review import INTERRUPT_TYPE as INTERRUPT_TYPE
from ._review import RESUME_ACTIONS as RESUME_ACTIONS
from ._text_calls import calls_from_text_hook
from ._transcript import ErrorHook as ErrorHook
from ._transcript import rewrite_ai_message as rewrite_ai_message
from ._transcript import to_langchain as to_langchain

if TYPE_CHECKING:
    from ._middleware import CallsFromTextMiddleware, ToolgateMiddleware


def toolgate_middleware(client: Any, **kwargs: Any) -> ToolgateMiddleware:
    """LangChain v1 middleware for `create_agent(model, tools=[], middleware=[toolgate_middleware(client)])`: every
    tool call goes to the gateway as the model wrote it, before the host's own schema check. It registers the
    gateway's tools with the agent (fetched now with a `Client`; pass `tools=await agateway_tools(client)` with an
    `AsyncClient`, or `tools=[]` when the agent's own tools already carry them). Keyword arguments: `tools`,
    `context`, `review`, `on_error`, `timeout`, as `GatewayToolNode` takes them."""
    return _middleware_module("toolgate_middleware").ToolgateMiddleware(client, **kwargs)


def calls_from_text_middleware(client: Any, **kwargs: Any) -> CallsFromTextMiddleware:
    """LangChain v1 middleware for `create_agent(model, middleware=[toolgate_middleware(client),
    calls_from_text_middleware(client)])`: an AIMessage without tool calls whose text holds calls (Hermes
    `<tool_call>`, pythonic, Llama, Mistral, harmony, ...) is answered again carrying them as tool calls, its content
    the text that is not a call, so the agent runs them instead of ending. The gateway reads the text; calls
    quoted, shown, offered, refused, supposed or remembered, and tools not offered give no call, and the AIMessage
    stays as it is (the turn ends as text). Keyword arguments: `tools` (the registered names of the tools the
    model was offered; default every tool the tenant sees), `context`, `timeout`, `format` (the model's output
    format; default: the format of the model the AIMessage's metadata names)."""
    return _middleware_module("calls_from_text_middleware").CallsFromTextMiddleware(client, **kwargs)


def _middleware_module(what: str) -> Any:
    try:
        from . import _middleware
    except ModuleNotFoundError as err:
        if err.name != "langchain" and not (err.name or "").startswith("langchain."):
            raise
        raise ModuleNotFoundError(
            f"{what} needs LangChain v1 ({err}): pip install 'toolgate[langchain]'", name=err.name
        ) from err
    return _middleware


__all__ = [
    "GatewayToolNode",
    "abind_gateway_tools",
    "agateway_tools",
    "bind_gateway_tools",
    "calls_from_text_hook",
    "calls_from_text_middleware",
    "context_from_config",
    "gateway_tools",
    "toolgate_middleware",
]

"""`Client` and `AsyncClient`: the gateway's API (ToolGateway, ToolRegistry, ToolReview) over one gRPC channel.

A tool that fails never raises: its failure is a `ToolMessage` with an error. Only a request the gateway refuses
as a whole (bad request, wrong token, gateway down) raises `GatewayError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import grpc
import grpc.aio

from . import _convert as convert
from ._pb import gateway_pb2_grpc, registry_pb2, registry_pb2_grpc, review_pb2, review_pb2_grpc
from .types import CallContext, CallsFromText, PendingReview, ToolMessage

DEFAULT_TARGET = "127.0.0.1:50051"
_DEFAULT_OPTIONS = {"grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1}

Context = CallContext | Mapping[str, Any] | None


class GatewayError(Exception):
    """The gateway refused a request as a whole, or could not be reached. `code` is the gRPC status code."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{method}: {code.name}: {details}")
        self.method = method
        self.code = code
        self.details = details

    @classmethod
    def of(cls, method: str, err: grpc.RpcError) -> GatewayError:
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        details = err.details() if hasattr(err, "details") else str(err)
        return cls(method, code or grpc.StatusCode.UNKNOWN, details or "")


def _endpoint(target: str) -> tuple[str, bool]:
    """`host:port`, also accepted with the `http://` (plaintext) or `https://` (TLS) the gateway's CLI uses; or a
    Unix socket, `unix:/path/to.sock`."""
    if target.startswith("https://"):
        return target.removeprefix("https://").rstrip("/"), True
    return target.removeprefix("http://").rstrip("/"), False


class _Base:
    """What both clients share: the channel's address, the bearer tokens and the default timeout."""

    #: The module whose `insecure_channel` / `secure_channel` open the channel: `grpc`, or `grpc.aio`.
    _grpc: Any = grpc

    def __init__(
        self,
        target: str = DEFAULT_TARGET,
        *,
        token: str | None = None,
        admin_token: str | None = None,
        review_token: str | None = None,
        timeout: float | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] | None = None,
    ) -> None:
        self._address, tls = _endpoint(target)
        self._credentials = credentials or (grpc.ssl_channel_credentials() if tls else None)
        # A batch answers up to 128 results of up to 4 MiB each (the gateway's defaults): lift grpc's 4 MB cap.
        defaults = dict(_DEFAULT_OPTIONS)
        if self._address.startswith("unix:"):
            # Over a Unix socket grpc would send the socket's path as :authority, which the gateway's HTTP/2
            # server refuses as malformed.
            defaults["grpc.default_authority"] = "localhost"
        self._options = list({**defaults, **dict(options or ())}.items())
        self.timeout = timeout
        # The data plane (ToolGateway), the admin plane (ToolRegistry) and ToolReview may each have their own
        # token: the gateway's review token opens ToolReview alone, and its admin token opens it too.
        self._data_metadata = _bearer(token)
        self._admin_metadata = _bearer(_first(admin_token, token))
        self._review_metadata = _bearer(_first(review_token, admin_token, token))
        if self._credentials is None:
            self._channel = self._grpc.insecure_channel(self._address, options=self._options)
        else:
            self._channel = self._grpc.secure_channel(self._address, self._credentials, options=self._options)
        self._stubs(self._channel)

    def _timeout(self, timeout: float | None) -> float | None:
        return self.timeout if timeout is None else timeout

    def _stubs(self, channel: Any) -> None:
        self._gateway = gateway_pb2_grpc.ToolGatewayStub(channel)
        self._registry = registry_pb2_grpc.ToolRegistryStub(channel)
        self._review = review_pb2_grpc.ToolReviewStub(channel)


def _bearer(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _first(*tokens: str | None) -> str | None:
    return next((t for t in tokens if t is not None), None)


class Client(_Base):
    """Synchronous client. Use it as a context manager, or call `close()`.

    `token` is sent as `authorization: Bearer ...` on every request; `admin_token`, when given, instead of it on
    the registry; and on review (`list_pending`, `decide`) `review_token` when given, else `admin_token`, else
    `token`. An agent that resumes reviews (`GatewayToolNode`) needs `token` and `review_token` only. `timeout`
    (seconds) is the default deadline of each request.
    """

    _grpc = grpc

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _call(self, method: str, rpc: Any, request: Any, metadata: Any, timeout: float | None) -> Any:
        try:
            return rpc(request, metadata=metadata, timeout=self._timeout(timeout))
        except grpc.RpcError as err:
            raise GatewayError.of(method, err) from None

    # ---- ToolGateway ----

    def execute(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        id: str | None = None,
        context: Context = None,
        review_mode: str | None = None,
        timeout: float | None = None,
    ) -> ToolMessage:
        """Runs one call. `arguments` as a dict, or as the raw JSON text the model wrote (repaired if broken).
        `review_mode="defer"` answers PENDING_REVIEW at once for a tool that needs review."""
        request = convert.execute_request(name, arguments, id=id, context=context, review_mode=review_mode)
        response = self._call("Execute", self._gateway.Execute, request, self._data_metadata, timeout)
        return convert.message_from_pb(response.message)

    def execute_batch(
        self,
        calls: Iterable[Mapping[str, Any]],
        *,
        context: Context = None,
        review_mode: str | None = None,
        timeout: float | None = None,
    ) -> list[ToolMessage]:
        """Runs the calls of one AI message concurrently; answers in call order. Each call is a dict with `name`,
        `id` and `args` (a dict, as in LangChain's tool calls) or `arguments` (a dict or JSON text)."""
        request = convert.batch_request(calls, context=context, review_mode=review_mode)
        response = self._call("ExecuteBatch", self._gateway.ExecuteBatch, request, self._data_metadata, timeout)
        return [convert.message_from_pb(m) for m in response.messages]

    def calls_from_text(
        self,
        text: str,
        *,
        context: Context = None,
        tools: Iterable[str] | None = None,
        run: bool = False,
        call_id_prefix: str | None = None,
        review_mode: str | None = None,
        format: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
    ) -> CallsFromText:
        """The tool calls a model wrote in its answer's text instead of making them (Hermes `<tool_call>`,
        pythonic `[f(a=1)]`, Llama, Mistral, harmony, Qwen3-Coder XML, ...), and the rest of the text. Calls are
        taken only when they are the answer's action: one quoted, in the model's reasoning, shown as an example,
        offered, refused, supposed or remembered, or of a tool not offered gives none, and `refusal` (with
        `refusal_reason`, one word to count) says why. `format` names the model's output format (hermes,
        qwen3_coder_xml, llama3_json, llama3_python_tag, mistral, harmony, pythonic, json, or auto); without it
        the gateway reads the format of `model`'s family when it knows it. `tools` narrows the offered tools to
        these registered names (default: every tool the context's tenant sees). With `run=True` the gateway also
        runs the calls as `execute_batch` does, call `i` under the id `<call_id_prefix>-<i>` (`call_id_prefix`
        is then required), and answers their outcomes in `messages`."""
        request = convert.calls_from_text_request(
            text,
            context=context,
            tools=tools,
            run=run,
            call_id_prefix=call_id_prefix,
            review_mode=review_mode,
            format=format,
            model=model,
        )
        response = self._call("CallsFromText", self._gateway.CallsFromText, request, self._data_metadata, timeout)
        return convert.calls_from_text_from_pb(response)

    def definitions(
        self, format: str = "openai", *, context: Context = None, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """The model-facing definitions of the tools the context's tenant may call, in `format` (openai,
        anthropic, mcp, json-schema): injected parameters are left out."""
        request = convert.definitions_request(format, context)
        response = self._call(
            "ListToolDefinitions", self._gateway.ListToolDefinitions, request, self._data_metadata, timeout
        )
        return convert.definitions_from_pb(response)

    # ---- ToolRegistry ----

    def register_tool(self, spec: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        """Registers (or replaces) a tool from a spec in the spec-file form; answers the spec as registered,
        with its `version` (1 when it was created)."""
        request = registry_pb2.RegisterToolRequest(spec=convert.spec_to_pb(spec))
        response = self._call("RegisterTool", self._registry.RegisterTool, request, self._admin_metadata, timeout)
        return convert.spec_from_pb(response.tool)

    def get_tool(self, name: str, *, tenant: str = "", timeout: float | None = None) -> dict[str, Any]:
        request = registry_pb2.GetToolRequest(name=name, tenant=tenant)
        response = self._call("GetTool", self._registry.GetTool, request, self._admin_metadata, timeout)
        return convert.spec_from_pb(response.tool)

    def list_tools(
        self, *, tenant: str = "", all_tenants: bool = False, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        request = registry_pb2.ListToolsRequest(tenant=tenant, all_tenants=all_tenants)
        response = self._call("ListTools", self._registry.ListTools, request, self._admin_metadata, timeout)
        return [convert.spec_from_pb(t) for t in response.tools]

    def delete_tool(self, name: str, *, tenant: str = "", timeout: float | None = None) -> None:
        request = registry_pb2.DeleteToolRequest(name=name, tenant=tenant)
        self._call("DeleteTool", self._registry.DeleteTool, request, self._admin_metadata, timeout)

    # ---- ToolReview ----

    def list_pending(
        self, tenant: str = "", *, all_tenants: bool = False, timeout: float | None = None
    ) -> list[PendingReview]:
        """Calls waiting for a decision, oldest first."""
        request = review_pb2.ListPendingRequest(tenant=tenant, all_tenants=all_tenants)
        response = self._call("ListPending", self._review.ListPending, request, self._review_metadata, timeout)
        return [convert.pending_from_pb(p) for p in response.pending]

    def decide(
        self,
        call_id: str,
        action: str,
        *,
        arguments: Mapping[str, Any] | str | None = None,
        feedback: str | None = None,
        tenant: str = "",
        reviewer: str | None = None,
        timeout: float | None = None,
    ) -> PendingReview:
        """Approves, edits (`arguments`: the new arguments) or rejects (`feedback`: what the model is told) one
        pending call, recorded under `reviewer`'s name. A call is decided once: deciding it again raises
        GatewayError(FAILED_PRECONDITION)."""
        request = convert.decide_request(
            call_id, action, arguments=arguments, feedback=feedback, tenant=tenant, reviewer=reviewer
        )
        response = self._call("Decide", self._review.Decide, request, self._review_metadata, timeout)
        return convert.pending_from_pb(response.decided)


class AsyncClient(_Base):
    """The same API as `Client` on `grpc.aio`: every method is a coroutine. Use `async with`, or
    `await close()`. Create it inside the event loop that uses it."""

    _grpc = grpc.aio

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def _call(self, method: str, rpc: Any, request: Any, metadata: Any, timeout: float | None) -> Any:
        try:
            return await rpc(request, metadata=metadata, timeout=self._timeout(timeout))
        except grpc.RpcError as err:
            raise GatewayError.of(method, err) from None

    async def execute(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        id: str | None = None,
        context: Context = None,
        review_mode: str | None = None,
        timeout: float | None = None,
    ) -> ToolMessage:
        request = convert.execute_request(name, arguments, id=id, context=context, review_mode=review_mode)
        response = await self._call("Execute", self._gateway.Execute, request, self._data_metadata, timeout)
        return convert.message_from_pb(response.message)

    async def execute_batch(
        self,
        calls: Iterable[Mapping[str, Any]],
        *,
        context: Context = None,
        review_mode: str | None = None,
        timeout: float | None = None,
    ) -> list[ToolMessage]:
        request = convert.batch_request(calls, context=context, review_mode=review_mode)
        response = await self._call("ExecuteBatch", self._gateway.ExecuteBatch, request, self._data_metadata, timeout)
        return [convert.message_from_pb(m) for m in response.messages]

    async def calls_from_text(
        self,
        text: str,
        *,
        context: Context = None,
        tools: Iterable[str] | None = None,
        run: bool = False,
        call_id_prefix: str | None = None,
        review_mode: str | None = None,
        format: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
    ) -> CallsFromText:
        request = convert.calls_from_text_request(
            text,
            context=context,
            tools=tools,
            run=run,
            call_id_prefix=call_id_prefix,
            review_mode=review_mode,
            format=format,
            model=model,
        )
        response = await self._call("CallsFromText", self._gateway.CallsFromText, request, self._data_metadata, timeout)
        return convert.calls_from_text_from_pb(response)

    async def definitions(
        self, format: str = "openai", *, context: Context = None, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        request = convert.definitions_request(format, context)
        response = await self._call(
            "ListToolDefinitions", self._gateway.ListToolDefinitions, request, self._data_metadata, timeout
        )
        return convert.definitions_from_pb(response)

    async def register_tool(self, spec: Mapping[str, Any], *, timeout: float | None = None) -> dict[str, Any]:
        request = registry_pb2.RegisterToolRequest(spec=convert.spec_to_pb(spec))
        response = await self._call("RegisterTool", self._registry.RegisterTool, request, self._admin_metadata, timeout)
        return convert.spec_from_pb(response.tool)

    async def get_tool(self, name: str, *, tenant: str = "", timeout: float | None = None) -> dict[str, Any]:
        request = registry_pb2.GetToolRequest(name=name, tenant=tenant)
        response = await self._call("GetTool", self._registry.GetTool, request, self._admin_metadata, timeout)
        return convert.spec_from_pb(response.tool)

    async def list_tools(
        self, *, tenant: str = "", all_tenants: bool = False, timeout: float | None = None
    ) -> list[dict[str, Any]]:
        request = registry_pb2.ListToolsRequest(tenant=tenant, all_tenants=all_tenants)
        response = await self._call("ListTools", self._registry.ListTools, request, self._admin_metadata, timeout)
        return [convert.spec_from_pb(t) for t in response.tools]

    async def delete_tool(self, name: str, *, tenant: str = "", timeout: float | None = None) -> None:
        request = registry_pb2.DeleteToolRequest(name=name, tenant=tenant)
        await self._call("DeleteTool", self._registry.DeleteTool, request, self._admin_metadata, timeout)

    async def list_pending(
        self, tenant: str = "", *, all_tenants: bool = False, timeout: float | None = None
    ) -> list[PendingReview]:
        request = review_pb2.ListPendingRequest(tenant=tenant, all_tenants=all_tenants)
        response = await self._call("ListPending", self._review.ListPending, request, self._review_metadata, timeout)
        return [convert.pending_from_pb(p) for p in response.pending]

    async def decide(
        self,
        call_id: str,
        action: str,
        *,
        arguments: Mapping[str, Any] | str | None = None,
        feedback: str | None = None,
        tenant: str = "",
        reviewer: str | None = None,
        timeout: float | None = None,
    ) -> PendingReview:
        request = convert.decide_request(
            call_id, action, arguments=arguments, feedback=feedback, tenant=tenant, reviewer=reviewer
        )
        response = await self._call("Decide", self._review.Decide, request, self._review_metadata, timeout)
        return convert.pending_from_pb(response.decided)

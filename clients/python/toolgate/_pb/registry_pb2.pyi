from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PolicyAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POLICY_ACTION_UNSPECIFIED: _ClassVar[PolicyAction]
    POLICY_ACTION_DENY: _ClassVar[PolicyAction]
    POLICY_ACTION_REVIEW: _ClassVar[PolicyAction]
    POLICY_ACTION_ALLOW: _ClassVar[PolicyAction]

class LimitKey(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LIMIT_KEY_UNSPECIFIED: _ClassVar[LimitKey]
    LIMIT_KEY_TOOL: _ClassVar[LimitKey]
    LIMIT_KEY_TENANT: _ClassVar[LimitKey]
    LIMIT_KEY_USER: _ClassVar[LimitKey]
    LIMIT_KEY_SESSION: _ClassVar[LimitKey]

class RateScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RATE_SCOPE_UNSPECIFIED: _ClassVar[RateScope]
    RATE_SCOPE_CLUSTER: _ClassVar[RateScope]
    RATE_SCOPE_GATEWAY: _ClassVar[RateScope]

class RedisDown(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REDIS_DOWN_UNSPECIFIED: _ClassVar[RedisDown]
    REDIS_DOWN_FAIL_OPEN: _ClassVar[RedisDown]
    REDIS_DOWN_FAIL_CLOSED: _ClassVar[RedisDown]
POLICY_ACTION_UNSPECIFIED: PolicyAction
POLICY_ACTION_DENY: PolicyAction
POLICY_ACTION_REVIEW: PolicyAction
POLICY_ACTION_ALLOW: PolicyAction
LIMIT_KEY_UNSPECIFIED: LimitKey
LIMIT_KEY_TOOL: LimitKey
LIMIT_KEY_TENANT: LimitKey
LIMIT_KEY_USER: LimitKey
LIMIT_KEY_SESSION: LimitKey
RATE_SCOPE_UNSPECIFIED: RateScope
RATE_SCOPE_CLUSTER: RateScope
RATE_SCOPE_GATEWAY: RateScope
REDIS_DOWN_UNSPECIFIED: RedisDown
REDIS_DOWN_FAIL_OPEN: RedisDown
REDIS_DOWN_FAIL_CLOSED: RedisDown

class ToolSpec(_message.Message):
    __slots__ = ("name", "description", "input_schema", "output_schema", "backend", "inject", "repair", "limits", "review", "tenant", "labels", "version", "budget", "policy")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    INJECT_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    REVIEW_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    input_schema: str
    output_schema: str
    backend: Backend
    inject: _containers.RepeatedCompositeFieldContainer[Injection]
    repair: RepairPolicy
    limits: Limits
    review: Review
    tenant: str
    labels: _containers.ScalarMap[str, str]
    version: int
    budget: Budget
    policy: _containers.RepeatedCompositeFieldContainer[PolicyRule]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., input_schema: _Optional[str] = ..., output_schema: _Optional[str] = ..., backend: _Optional[_Union[Backend, _Mapping]] = ..., inject: _Optional[_Iterable[_Union[Injection, _Mapping]]] = ..., repair: _Optional[_Union[RepairPolicy, _Mapping]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., review: _Optional[_Union[Review, _Mapping]] = ..., tenant: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., version: _Optional[int] = ..., budget: _Optional[_Union[Budget, _Mapping]] = ..., policy: _Optional[_Iterable[_Union[PolicyRule, _Mapping]]] = ...) -> None: ...

class PolicyRule(_message.Message):
    __slots__ = ("name", "when", "action", "message", "on_error", "model_fixable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WHEN_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ON_ERROR_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIXABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    when: str
    action: PolicyAction
    message: str
    on_error: PolicyAction
    model_fixable: bool
    def __init__(self, name: _Optional[str] = ..., when: _Optional[str] = ..., action: _Optional[_Union[PolicyAction, str]] = ..., message: _Optional[str] = ..., on_error: _Optional[_Union[PolicyAction, str]] = ..., model_fixable: _Optional[bool] = ...) -> None: ...

class Backend(_message.Message):
    __slots__ = ("grpc", "http", "mcp", "worker")
    GRPC_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    grpc: GrpcBackend
    http: HttpBackend
    mcp: McpBackend
    worker: WorkerBackend
    def __init__(self, grpc: _Optional[_Union[GrpcBackend, _Mapping]] = ..., http: _Optional[_Union[HttpBackend, _Mapping]] = ..., mcp: _Optional[_Union[McpBackend, _Mapping]] = ..., worker: _Optional[_Union[WorkerBackend, _Mapping]] = ...) -> None: ...

class GrpcBackend(_message.Message):
    __slots__ = ("target",)
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: str
    def __init__(self, target: _Optional[str] = ...) -> None: ...

class HttpBackend(_message.Message):
    __slots__ = ("url", "method", "headers")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    URL_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    url: str
    method: str
    headers: _containers.ScalarMap[str, str]
    def __init__(self, url: _Optional[str] = ..., method: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ...) -> None: ...

class McpBackend(_message.Message):
    __slots__ = ("server", "tool")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    server: str
    tool: str
    def __init__(self, server: _Optional[str] = ..., tool: _Optional[str] = ...) -> None: ...

class WorkerBackend(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Injection(_message.Message):
    __slots__ = ("param",)
    PARAM_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    param: str
    def __init__(self, param: _Optional[str] = ..., **kwargs) -> None: ...

class RepairPolicy(_message.Message):
    __slots__ = ("enabled", "aliases", "drop_unknown", "split_parallel")
    class AliasesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    DROP_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    SPLIT_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    aliases: _containers.ScalarMap[str, str]
    drop_unknown: bool
    split_parallel: bool
    def __init__(self, enabled: _Optional[bool] = ..., aliases: _Optional[_Mapping[str, str]] = ..., drop_unknown: _Optional[bool] = ..., split_parallel: _Optional[bool] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ("rate", "burst", "key", "max_concurrency", "timeout_ms", "retries", "idempotent", "scope", "when_redis_down")
    RATE_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RETRIES_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    WHEN_REDIS_DOWN_FIELD_NUMBER: _ClassVar[int]
    rate: str
    burst: int
    key: LimitKey
    max_concurrency: int
    timeout_ms: int
    retries: int
    idempotent: bool
    scope: RateScope
    when_redis_down: RedisDown
    def __init__(self, rate: _Optional[str] = ..., burst: _Optional[int] = ..., key: _Optional[_Union[LimitKey, str]] = ..., max_concurrency: _Optional[int] = ..., timeout_ms: _Optional[int] = ..., retries: _Optional[int] = ..., idempotent: _Optional[bool] = ..., scope: _Optional[_Union[RateScope, str]] = ..., when_redis_down: _Optional[_Union[RedisDown, str]] = ...) -> None: ...

class Review(_message.Message):
    __slots__ = ("required", "caller_may_confirm")
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    CALLER_MAY_CONFIRM_FIELD_NUMBER: _ClassVar[int]
    required: bool
    caller_may_confirm: bool
    def __init__(self, required: _Optional[bool] = ..., caller_may_confirm: _Optional[bool] = ...) -> None: ...

class Budget(_message.Message):
    __slots__ = ("max_calls", "max_consecutive_failures")
    MAX_CALLS_FIELD_NUMBER: _ClassVar[int]
    MAX_CONSECUTIVE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    max_calls: int
    max_consecutive_failures: int
    def __init__(self, max_calls: _Optional[int] = ..., max_consecutive_failures: _Optional[int] = ...) -> None: ...

class RegisterToolRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: ToolSpec
    def __init__(self, spec: _Optional[_Union[ToolSpec, _Mapping]] = ...) -> None: ...

class RegisterToolResponse(_message.Message):
    __slots__ = ("tool", "created")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    tool: ToolSpec
    created: bool
    def __init__(self, tool: _Optional[_Union[ToolSpec, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetToolRequest(_message.Message):
    __slots__ = ("name", "tenant")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    name: str
    tenant: str
    def __init__(self, name: _Optional[str] = ..., tenant: _Optional[str] = ...) -> None: ...

class GetToolResponse(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: ToolSpec
    def __init__(self, tool: _Optional[_Union[ToolSpec, _Mapping]] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("tenant", "all_tenants")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ALL_TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    all_tenants: bool
    def __init__(self, tenant: _Optional[str] = ..., all_tenants: _Optional[bool] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ...) -> None: ...

class DeleteToolRequest(_message.Message):
    __slots__ = ("name", "tenant")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    name: str
    tenant: str
    def __init__(self, name: _Optional[str] = ..., tenant: _Optional[str] = ...) -> None: ...

class DeleteToolResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

from . import registry_pb2 as _registry_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class McpServer(_message.Message):
    __slots__ = ("name", "stdio", "http", "prefix", "separator", "tenant", "refresh_interval_ms", "overlays", "pass_invalid_output")
    class OverlaysEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ToolOverlay
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ToolOverlay, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    STDIO_FIELD_NUMBER: _ClassVar[int]
    HTTP_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    SEPARATOR_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    REFRESH_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    OVERLAYS_FIELD_NUMBER: _ClassVar[int]
    PASS_INVALID_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    name: str
    stdio: McpStdio
    http: McpHttp
    prefix: str
    separator: str
    tenant: str
    refresh_interval_ms: int
    overlays: _containers.MessageMap[str, ToolOverlay]
    pass_invalid_output: bool
    def __init__(self, name: _Optional[str] = ..., stdio: _Optional[_Union[McpStdio, _Mapping]] = ..., http: _Optional[_Union[McpHttp, _Mapping]] = ..., prefix: _Optional[str] = ..., separator: _Optional[str] = ..., tenant: _Optional[str] = ..., refresh_interval_ms: _Optional[int] = ..., overlays: _Optional[_Mapping[str, ToolOverlay]] = ..., pass_invalid_output: _Optional[bool] = ...) -> None: ...

class McpStdio(_message.Message):
    __slots__ = ("command", "args", "env", "cwd")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cwd: str
    def __init__(self, command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cwd: _Optional[str] = ...) -> None: ...

class McpHttp(_message.Message):
    __slots__ = ("url", "headers")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    URL_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    url: str
    headers: _containers.ScalarMap[str, str]
    def __init__(self, url: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ToolOverlay(_message.Message):
    __slots__ = ("inject", "repair", "limits", "review", "budget", "labels", "policy")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INJECT_FIELD_NUMBER: _ClassVar[int]
    REPAIR_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    REVIEW_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    inject: _containers.RepeatedCompositeFieldContainer[_registry_pb2.Injection]
    repair: _registry_pb2.RepairPolicy
    limits: _registry_pb2.Limits
    review: _registry_pb2.Review
    budget: _registry_pb2.Budget
    labels: _containers.ScalarMap[str, str]
    policy: _containers.RepeatedCompositeFieldContainer[_registry_pb2.PolicyRule]
    def __init__(self, inject: _Optional[_Iterable[_Union[_registry_pb2.Injection, _Mapping]]] = ..., repair: _Optional[_Union[_registry_pb2.RepairPolicy, _Mapping]] = ..., limits: _Optional[_Union[_registry_pb2.Limits, _Mapping]] = ..., review: _Optional[_Union[_registry_pb2.Review, _Mapping]] = ..., budget: _Optional[_Union[_registry_pb2.Budget, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., policy: _Optional[_Iterable[_Union[_registry_pb2.PolicyRule, _Mapping]]] = ...) -> None: ...

class McpServerStatus(_message.Message):
    __slots__ = ("server", "connected", "tools", "problems", "last_error", "connects", "output_violations")
    SERVER_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    CONNECTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    server: McpServer
    connected: bool
    tools: _containers.RepeatedScalarFieldContainer[str]
    problems: _containers.RepeatedScalarFieldContainer[str]
    last_error: str
    connects: int
    output_violations: int
    def __init__(self, server: _Optional[_Union[McpServer, _Mapping]] = ..., connected: _Optional[bool] = ..., tools: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[str]] = ..., last_error: _Optional[str] = ..., connects: _Optional[int] = ..., output_violations: _Optional[int] = ...) -> None: ...

class AddMcpServerRequest(_message.Message):
    __slots__ = ("server",)
    SERVER_FIELD_NUMBER: _ClassVar[int]
    server: McpServer
    def __init__(self, server: _Optional[_Union[McpServer, _Mapping]] = ...) -> None: ...

class AddMcpServerResponse(_message.Message):
    __slots__ = ("status", "created")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    status: McpServerStatus
    created: bool
    def __init__(self, status: _Optional[_Union[McpServerStatus, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class RemoveMcpServerRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class RemoveMcpServerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMcpServersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListMcpServersResponse(_message.Message):
    __slots__ = ("servers",)
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[McpServerStatus]
    def __init__(self, servers: _Optional[_Iterable[_Union[McpServerStatus, _Mapping]]] = ...) -> None: ...

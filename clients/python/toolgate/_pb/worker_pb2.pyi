from . import registry_pb2 as _registry_pb2
from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WorkerMessage(_message.Message):
    __slots__ = ("hello", "result")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    hello: WorkerHello
    result: WorkerResult
    def __init__(self, hello: _Optional[_Union[WorkerHello, _Mapping]] = ..., result: _Optional[_Union[WorkerResult, _Mapping]] = ...) -> None: ...

class WorkerHello(_message.Message):
    __slots__ = ("worker_name", "tools")
    WORKER_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    worker_name: str
    tools: _containers.RepeatedCompositeFieldContainer[_registry_pb2.ToolSpec]
    def __init__(self, worker_name: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_registry_pb2.ToolSpec, _Mapping]]] = ...) -> None: ...

class WorkerResult(_message.Message):
    __slots__ = ("invocation_id", "content", "structured", "is_error", "error_message")
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    invocation_id: str
    content: str
    structured: str
    is_error: bool
    error_message: str
    def __init__(self, invocation_id: _Optional[str] = ..., content: _Optional[str] = ..., structured: _Optional[str] = ..., is_error: _Optional[bool] = ..., error_message: _Optional[str] = ...) -> None: ...

class GatewayMessage(_message.Message):
    __slots__ = ("welcome", "invocation")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    INVOCATION_FIELD_NUMBER: _ClassVar[int]
    welcome: WorkerWelcome
    invocation: WorkerInvocation
    def __init__(self, welcome: _Optional[_Union[WorkerWelcome, _Mapping]] = ..., invocation: _Optional[_Union[WorkerInvocation, _Mapping]] = ...) -> None: ...

class WorkerWelcome(_message.Message):
    __slots__ = ("worker_id", "tools")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    tools: _containers.RepeatedCompositeFieldContainer[_registry_pb2.ToolSpec]
    def __init__(self, worker_id: _Optional[str] = ..., tools: _Optional[_Iterable[_Union[_registry_pb2.ToolSpec, _Mapping]]] = ...) -> None: ...

class WorkerInvocation(_message.Message):
    __slots__ = ("invocation_id", "call_id", "tool", "arguments", "context", "deadline_ms", "trace")
    class TraceEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INVOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    invocation_id: str
    call_id: str
    tool: str
    arguments: str
    context: _types_pb2.CallContext
    deadline_ms: int
    trace: _containers.ScalarMap[str, str]
    def __init__(self, invocation_id: _Optional[str] = ..., call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[str] = ..., context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ..., deadline_ms: _Optional[int] = ..., trace: _Optional[_Mapping[str, str]] = ...) -> None: ...

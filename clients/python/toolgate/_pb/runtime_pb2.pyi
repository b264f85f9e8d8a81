from . import types_pb2 as _types_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InvokeRequest(_message.Message):
    __slots__ = ("call_id", "tool", "arguments", "context")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool: str
    arguments: str
    context: _types_pb2.CallContext
    def __init__(self, call_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[str] = ..., context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ...) -> None: ...

class InvokeResponse(_message.Message):
    __slots__ = ("content", "structured", "is_error", "error_message")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    content: str
    structured: str
    is_error: bool
    error_message: str
    def __init__(self, content: _Optional[str] = ..., structured: _Optional[str] = ..., is_error: _Optional[bool] = ..., error_message: _Optional[str] = ...) -> None: ...

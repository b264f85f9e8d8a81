from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReviewMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVIEW_MODE_UNSPECIFIED: _ClassVar[ReviewMode]
    REVIEW_MODE_WAIT: _ClassVar[ReviewMode]
    REVIEW_MODE_DEFER: _ClassVar[ReviewMode]

class DefinitionFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEFINITION_FORMAT_UNSPECIFIED: _ClassVar[DefinitionFormat]
    DEFINITION_FORMAT_OPENAI: _ClassVar[DefinitionFormat]
    DEFINITION_FORMAT_ANTHROPIC: _ClassVar[DefinitionFormat]
    DEFINITION_FORMAT_MCP: _ClassVar[DefinitionFormat]
    DEFINITION_FORMAT_JSON_SCHEMA: _ClassVar[DefinitionFormat]
REVIEW_MODE_UNSPECIFIED: ReviewMode
REVIEW_MODE_WAIT: ReviewMode
REVIEW_MODE_DEFER: ReviewMode
DEFINITION_FORMAT_UNSPECIFIED: DefinitionFormat
DEFINITION_FORMAT_OPENAI: DefinitionFormat
DEFINITION_FORMAT_ANTHROPIC: DefinitionFormat
DEFINITION_FORMAT_MCP: DefinitionFormat
DEFINITION_FORMAT_JSON_SCHEMA: DefinitionFormat

class ExecuteRequest(_message.Message):
    __slots__ = ("call", "context", "review_mode")
    CALL_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    REVIEW_MODE_FIELD_NUMBER: _ClassVar[int]
    call: _types_pb2.ToolCall
    context: _types_pb2.CallContext
    review_mode: ReviewMode
    def __init__(self, call: _Optional[_Union[_types_pb2.ToolCall, _Mapping]] = ..., context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ..., review_mode: _Optional[_Union[ReviewMode, str]] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _types_pb2.ToolMessage
    def __init__(self, message: _Optional[_Union[_types_pb2.ToolMessage, _Mapping]] = ...) -> None: ...

class ExecuteBatchRequest(_message.Message):
    __slots__ = ("calls", "context", "review_mode")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    REVIEW_MODE_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[_types_pb2.ToolCall]
    context: _types_pb2.CallContext
    review_mode: ReviewMode
    def __init__(self, calls: _Optional[_Iterable[_Union[_types_pb2.ToolCall, _Mapping]]] = ..., context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ..., review_mode: _Optional[_Union[ReviewMode, str]] = ...) -> None: ...

class ExecuteBatchResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.ToolMessage]
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.ToolMessage, _Mapping]]] = ...) -> None: ...

class CallsFromTextRequest(_message.Message):
    __slots__ = ("text", "context", "tools", "run", "review_mode", "call_id_prefix", "format", "model")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    REVIEW_MODE_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_PREFIX_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    text: str
    context: _types_pb2.CallContext
    tools: _containers.RepeatedScalarFieldContainer[str]
    run: bool
    review_mode: ReviewMode
    call_id_prefix: str
    format: str
    model: str
    def __init__(self, text: _Optional[str] = ..., context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ..., tools: _Optional[_Iterable[str]] = ..., run: _Optional[bool] = ..., review_mode: _Optional[_Union[ReviewMode, str]] = ..., call_id_prefix: _Optional[str] = ..., format: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class CallsFromTextResponse(_message.Message):
    __slots__ = ("calls", "envelope", "wrappers", "rest", "refusal", "messages", "refusal_reason", "format")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    WRAPPERS_FIELD_NUMBER: _ClassVar[int]
    REST_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_REASON_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[_types_pb2.ToolCall]
    envelope: str
    wrappers: _containers.RepeatedScalarFieldContainer[str]
    rest: str
    refusal: str
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.ToolMessage]
    refusal_reason: str
    format: str
    def __init__(self, calls: _Optional[_Iterable[_Union[_types_pb2.ToolCall, _Mapping]]] = ..., envelope: _Optional[str] = ..., wrappers: _Optional[_Iterable[str]] = ..., rest: _Optional[str] = ..., refusal: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[_types_pb2.ToolMessage, _Mapping]]] = ..., refusal_reason: _Optional[str] = ..., format: _Optional[str] = ...) -> None: ...

class ListToolDefinitionsRequest(_message.Message):
    __slots__ = ("context", "format")
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    context: _types_pb2.CallContext
    format: DefinitionFormat
    def __init__(self, context: _Optional[_Union[_types_pb2.CallContext, _Mapping]] = ..., format: _Optional[_Union[DefinitionFormat, str]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("name", "tool", "definition")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    tool: str
    definition: str
    def __init__(self, name: _Optional[str] = ..., tool: _Optional[str] = ..., definition: _Optional[str] = ...) -> None: ...

class ListToolDefinitionsResponse(_message.Message):
    __slots__ = ("definitions",)
    DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    definitions: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    def __init__(self, definitions: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ...) -> None: ...

from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_STATUS_UNSPECIFIED: _ClassVar[ToolStatus]
    TOOL_STATUS_SUCCESS: _ClassVar[ToolStatus]
    TOOL_STATUS_ERROR: _ClassVar[ToolStatus]
    TOOL_STATUS_PENDING_REVIEW: _ClassVar[ToolStatus]

class ErrorKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ERROR_KIND_UNSPECIFIED: _ClassVar[ErrorKind]
    ERROR_KIND_TOOL_NOT_FOUND: _ClassVar[ErrorKind]
    ERROR_KIND_MALFORMED_ARGUMENTS: _ClassVar[ErrorKind]
    ERROR_KIND_INVALID_ARGUMENTS: _ClassVar[ErrorKind]
    ERROR_KIND_TOOL_ERROR: _ClassVar[ErrorKind]
    ERROR_KIND_TIMEOUT: _ClassVar[ErrorKind]
    ERROR_KIND_RATE_LIMITED: _ClassVar[ErrorKind]
    ERROR_KIND_UNAVAILABLE: _ClassVar[ErrorKind]
    ERROR_KIND_REJECTED: _ClassVar[ErrorKind]
    ERROR_KIND_PERMISSION_DENIED: _ClassVar[ErrorKind]
    ERROR_KIND_BUDGET_EXCEEDED: _ClassVar[ErrorKind]
    ERROR_KIND_INTERNAL: _ClassVar[ErrorKind]
    ERROR_KIND_POLICY_DENIED: _ClassVar[ErrorKind]
TOOL_STATUS_UNSPECIFIED: ToolStatus
TOOL_STATUS_SUCCESS: ToolStatus
TOOL_STATUS_ERROR: ToolStatus
TOOL_STATUS_PENDING_REVIEW: ToolStatus
ERROR_KIND_UNSPECIFIED: ErrorKind
ERROR_KIND_TOOL_NOT_FOUND: ErrorKind
ERROR_KIND_MALFORMED_ARGUMENTS: ErrorKind
ERROR_KIND_INVALID_ARGUMENTS: ErrorKind
ERROR_KIND_TOOL_ERROR: ErrorKind
ERROR_KIND_TIMEOUT: ErrorKind
ERROR_KIND_RATE_LIMITED: ErrorKind
ERROR_KIND_UNAVAILABLE: ErrorKind
ERROR_KIND_REJECTED: ErrorKind
ERROR_KIND_PERMISSION_DENIED: ErrorKind
ERROR_KIND_BUDGET_EXCEEDED: ErrorKind
ERROR_KIND_INTERNAL: ErrorKind
ERROR_KIND_POLICY_DENIED: ErrorKind

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "arguments")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    arguments: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class CallContext(_message.Message):
    __slots__ = ("tenant", "user_id", "session_id", "values")
    class ValuesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TENANT_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    user_id: str
    session_id: str
    values: _containers.ScalarMap[str, str]
    def __init__(self, tenant: _Optional[str] = ..., user_id: _Optional[str] = ..., session_id: _Optional[str] = ..., values: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Violation(_message.Message):
    __slots__ = ("instance_path", "schema_path", "message")
    INSTANCE_PATH_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_PATH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    instance_path: str
    schema_path: str
    message: str
    def __init__(self, instance_path: _Optional[str] = ..., schema_path: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("kind", "message", "model_fixable", "retryable", "retry_after_ms", "violations", "suggestions", "original_arguments")
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIXABLE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    SUGGESTIONS_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    kind: ErrorKind
    message: str
    model_fixable: bool
    retryable: bool
    retry_after_ms: int
    violations: _containers.RepeatedCompositeFieldContainer[Violation]
    suggestions: _containers.RepeatedScalarFieldContainer[str]
    original_arguments: str
    def __init__(self, kind: _Optional[_Union[ErrorKind, str]] = ..., message: _Optional[str] = ..., model_fixable: _Optional[bool] = ..., retryable: _Optional[bool] = ..., retry_after_ms: _Optional[int] = ..., violations: _Optional[_Iterable[_Union[Violation, _Mapping]]] = ..., suggestions: _Optional[_Iterable[str]] = ..., original_arguments: _Optional[str] = ...) -> None: ...

class Repair(_message.Message):
    __slots__ = ("rule", "path", "before", "after")
    RULE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    rule: str
    path: str
    before: str
    after: str
    def __init__(self, rule: _Optional[str] = ..., path: _Optional[str] = ..., before: _Optional[str] = ..., after: _Optional[str] = ...) -> None: ...

class ToolMessage(_message.Message):
    __slots__ = ("tool_call_id", "name", "status", "content", "structured", "error", "repairs", "effective_arguments", "attempts", "duration_us", "parts", "blocks")
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    PARTS_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    tool_call_id: str
    name: str
    status: ToolStatus
    content: str
    structured: str
    error: ToolError
    repairs: _containers.RepeatedCompositeFieldContainer[Repair]
    effective_arguments: str
    attempts: int
    duration_us: int
    parts: _containers.RepeatedCompositeFieldContainer[ToolMessagePart]
    blocks: _containers.RepeatedCompositeFieldContainer[ResultBlock]
    def __init__(self, tool_call_id: _Optional[str] = ..., name: _Optional[str] = ..., status: _Optional[_Union[ToolStatus, str]] = ..., content: _Optional[str] = ..., structured: _Optional[str] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., repairs: _Optional[_Iterable[_Union[Repair, _Mapping]]] = ..., effective_arguments: _Optional[str] = ..., attempts: _Optional[int] = ..., duration_us: _Optional[int] = ..., parts: _Optional[_Iterable[_Union[ToolMessagePart, _Mapping]]] = ..., blocks: _Optional[_Iterable[_Union[ResultBlock, _Mapping]]] = ...) -> None: ...

class ResultBlock(_message.Message):
    __slots__ = ("text", "image", "audio", "resource_link", "resource")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_LINK_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    text: TextBlock
    image: MediaBlock
    audio: MediaBlock
    resource_link: ResourceLinkBlock
    resource: ResourceBlock
    def __init__(self, text: _Optional[_Union[TextBlock, _Mapping]] = ..., image: _Optional[_Union[MediaBlock, _Mapping]] = ..., audio: _Optional[_Union[MediaBlock, _Mapping]] = ..., resource_link: _Optional[_Union[ResourceLinkBlock, _Mapping]] = ..., resource: _Optional[_Union[ResourceBlock, _Mapping]] = ...) -> None: ...

class TextBlock(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class MediaBlock(_message.Message):
    __slots__ = ("data", "mime_type")
    DATA_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    data: str
    mime_type: str
    def __init__(self, data: _Optional[str] = ..., mime_type: _Optional[str] = ...) -> None: ...

class ResourceLinkBlock(_message.Message):
    __slots__ = ("uri", "name", "mime_type", "description")
    URI_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    uri: str
    name: str
    mime_type: str
    description: str
    def __init__(self, uri: _Optional[str] = ..., name: _Optional[str] = ..., mime_type: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class ResourceBlock(_message.Message):
    __slots__ = ("uri", "mime_type", "text", "blob")
    URI_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    BLOB_FIELD_NUMBER: _ClassVar[int]
    uri: str
    mime_type: str
    text: str
    blob: str
    def __init__(self, uri: _Optional[str] = ..., mime_type: _Optional[str] = ..., text: _Optional[str] = ..., blob: _Optional[str] = ...) -> None: ...

class ToolMessagePart(_message.Message):
    __slots__ = ("status", "content", "structured", "error", "effective_arguments", "repairs", "attempts")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STRUCTURED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    status: ToolStatus
    content: str
    structured: str
    error: ToolError
    effective_arguments: str
    repairs: _containers.RepeatedCompositeFieldContainer[Repair]
    attempts: int
    def __init__(self, status: _Optional[_Union[ToolStatus, str]] = ..., content: _Optional[str] = ..., structured: _Optional[str] = ..., error: _Optional[_Union[ToolError, _Mapping]] = ..., effective_arguments: _Optional[str] = ..., repairs: _Optional[_Iterable[_Union[Repair, _Mapping]]] = ..., attempts: _Optional[int] = ...) -> None: ...

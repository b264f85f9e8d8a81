from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReviewAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REVIEW_ACTION_UNSPECIFIED: _ClassVar[ReviewAction]
    REVIEW_ACTION_APPROVE: _ClassVar[ReviewAction]
    REVIEW_ACTION_EDIT: _ClassVar[ReviewAction]
    REVIEW_ACTION_REJECT: _ClassVar[ReviewAction]
REVIEW_ACTION_UNSPECIFIED: ReviewAction
REVIEW_ACTION_APPROVE: ReviewAction
REVIEW_ACTION_EDIT: ReviewAction
REVIEW_ACTION_REJECT: ReviewAction

class PendingReview(_message.Message):
    __slots__ = ("call_id", "tenant", "session_id", "user_id", "tool", "arguments", "repairs", "created_ms", "decided_by", "decided_ms", "rule", "rule_message")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    REPAIRS_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    DECIDED_MS_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    RULE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tenant: str
    session_id: str
    user_id: str
    tool: str
    arguments: str
    repairs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Repair]
    created_ms: int
    decided_by: str
    decided_ms: int
    rule: str
    rule_message: str
    def __init__(self, call_id: _Optional[str] = ..., tenant: _Optional[str] = ..., session_id: _Optional[str] = ..., user_id: _Optional[str] = ..., tool: _Optional[str] = ..., arguments: _Optional[str] = ..., repairs: _Optional[_Iterable[_Union[_types_pb2.Repair, _Mapping]]] = ..., created_ms: _Optional[int] = ..., decided_by: _Optional[str] = ..., decided_ms: _Optional[int] = ..., rule: _Optional[str] = ..., rule_message: _Optional[str] = ...) -> None: ...

class ListPendingRequest(_message.Message):
    __slots__ = ("tenant", "all_tenants")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ALL_TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    all_tenants: bool
    def __init__(self, tenant: _Optional[str] = ..., all_tenants: _Optional[bool] = ...) -> None: ...

class ListPendingResponse(_message.Message):
    __slots__ = ("pending",)
    PENDING_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.RepeatedCompositeFieldContainer[PendingReview]
    def __init__(self, pending: _Optional[_Iterable[_Union[PendingReview, _Mapping]]] = ...) -> None: ...

class DecideRequest(_message.Message):
    __slots__ = ("call_id", "tenant", "action", "arguments", "feedback", "reviewer")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    REVIEWER_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tenant: str
    action: ReviewAction
    arguments: str
    feedback: str
    reviewer: str
    def __init__(self, call_id: _Optional[str] = ..., tenant: _Optional[str] = ..., action: _Optional[_Union[ReviewAction, str]] = ..., arguments: _Optional[str] = ..., feedback: _Optional[str] = ..., reviewer: _Optional[str] = ...) -> None: ...

class DecideResponse(_message.Message):
    __slots__ = ("decided",)
    DECIDED_FIELD_NUMBER: _ClassVar[int]
    decided: PendingReview
    def __init__(self, decided: _Optional[_Union[PendingReview, _Mapping]] = ...) -> None: ...

class WatchPendingRequest(_message.Message):
    __slots__ = ("tenant", "all_tenants")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    ALL_TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    all_tenants: bool
    def __init__(self, tenant: _Optional[str] = ..., all_tenants: _Optional[bool] = ...) -> None: ...

class ReviewEvent(_message.Message):
    __slots__ = ("kind", "review")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[ReviewEvent.Kind]
        KIND_PENDING: _ClassVar[ReviewEvent.Kind]
        KIND_DECIDED: _ClassVar[ReviewEvent.Kind]
    KIND_UNSPECIFIED: ReviewEvent.Kind
    KIND_PENDING: ReviewEvent.Kind
    KIND_DECIDED: ReviewEvent.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    REVIEW_FIELD_NUMBER: _ClassVar[int]
    kind: ReviewEvent.Kind
    review: PendingReview
    def __init__(self, kind: _Optional[_Union[ReviewEvent.Kind, str]] = ..., review: _Optional[_Union[PendingReview, _Mapping]] = ...) -> None: ...

"""Unit tests that need no gateway: the Python enums against the generated stubs, answers with enum values these
stubs or enums do not know, and which answers `on_error` sees."""

from __future__ import annotations

from toolgate import ErrorKind, ToolMessage, ToolStatus
from toolgate import _convert as convert
from toolgate._pb import types_pb2
from toolgate.langgraph import GatewayToolNode


def test_the_python_enums_cover_exactly_the_proto_enums():
    for python, proto, prefix in [
        (ErrorKind, types_pb2.ErrorKind, "ERROR_KIND_"),
        (ToolStatus, types_pb2.ToolStatus, "TOOL_STATUS_"),
    ]:
        assert {m.value for m in python} == {v.name.removeprefix(prefix) for v in proto.DESCRIPTOR.values}, python


def test_an_unknown_enum_value_is_unspecified_and_keeps_the_rest_of_the_answer():
    # A gateway newer than these stubs: values they have no name for.
    newer = types_pb2.ToolMessage(tool_call_id="c1", name="t", status=99, content="hm")
    newer.error.kind = 42
    newer.error.message = "new kind"
    message = convert.message_from_pb(newer)
    assert (message.status, message.error.kind, message.error.message) == (
        ToolStatus.UNSPECIFIED,
        ErrorKind.UNSPECIFIED,
        "new kind",
    )
    # Stubs regenerated with a value the Python enum does not have yet.
    assert convert.enum_of(ErrorKind, types_pb2.ErrorKind, "ERROR_KIND_", types_pb2.ERROR_KIND_TIMEOUT) is (
        ErrorKind.TIMEOUT
    )

    class Stubs:
        @staticmethod
        def Name(value: int) -> str:
            return "ERROR_KIND_BRAND_NEW"

    assert convert.enum_of(ErrorKind, Stubs, "ERROR_KIND_", 12) is ErrorKind.UNSPECIFIED


def test_on_error_sees_only_answers_with_an_error():
    seen = []
    node = GatewayToolNode.__new__(GatewayToolNode)
    node.on_error = lambda call, message: seen.append(message.tool_call_id)
    call = {"name": "t", "args": {}, "id": "c"}
    for status, error in [
        (ToolStatus.SUCCESS, None),
        (ToolStatus.PENDING_REVIEW, None),
        (ToolStatus.UNSPECIFIED, None),
        (ToolStatus.ERROR, convert.error_from_pb(types_pb2.ToolError(kind=types_pb2.ERROR_KIND_TIMEOUT))),
    ]:
        node._tool_message({**call, "id": status.value}, ToolMessage(status.value, "t", status, "", error=error))
    assert seen == ["ERROR"]

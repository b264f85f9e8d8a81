"""The transcript side: a typed `toolgate.ToolMessage` as a LangChain ToolMessage, and the AIMessage rewritten
with the calls as they ran (arguments repaired, injected parameters removed, edited by a reviewer)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages import ToolMessage as LCToolMessage

from ..types import ToolMessage, ToolPart, ToolStatus
from ._blocks import content_of

#: Called for each call that answered an error, with the LangChain tool call and the typed `toolgate.ToolMessage`;
#: answers a replacement content, a whole LangChain ToolMessage, or None to keep the default.
ErrorHook = Callable[[dict[str, Any], ToolMessage], "str | LCToolMessage | None"]

_TOOL_NAME_RULES = {"tool_name_normalized", "tool_name_prefix", "tool_name_residue"}
_PROVIDER_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def to_langchain(m: ToolMessage, call: Mapping[str, Any] | None = None) -> LCToolMessage:
    """A typed `toolgate.ToolMessage` as a LangChain ToolMessage: `status="error"` unless it succeeded, the typed
    error in `additional_kwargs["error"]`, the repairs in `additional_kwargs["repairs"]`, the structured result
    as `artifact`, a result of more than text as LangChain content blocks, and the attempts, duration and
    effective arguments in `response_metadata["toolgate"]`."""
    additional: dict[str, Any] = {}
    if m.error is not None:
        additional["error"] = m.error.to_dict()
    if m.repairs:
        additional["repairs"] = [r.to_dict() for r in m.repairs]
    return LCToolMessage(
        content=content_of(m),
        tool_call_id=m.tool_call_id or (call or {}).get("id", ""),
        name=m.name or (call or {}).get("name"),
        status="success" if m.status is ToolStatus.SUCCESS else "error",
        artifact=m.structured,
        additional_kwargs=additional,
        response_metadata={
            "toolgate": {
                "status": m.status.value,
                "attempts": m.attempts,
                "duration_us": m.duration_us,
                "effective_arguments": m.arguments,
            }
        },
    )


def answer(m: ToolMessage, call: dict[str, Any], on_error: ErrorHook | None) -> LCToolMessage:
    """`to_langchain(m, call)`, or what `on_error` makes of it when the call answered an error."""
    out = to_langchain(m, call)
    if m.error is not None and on_error is not None:
        replaced = on_error(dict(call), m)
        if isinstance(replaced, LCToolMessage):
            return replaced
        if replaced is not None:
            out.content = str(replaced)
    return out


def part_id(call_id: str, index: int) -> str:
    """The id of a split call's `index`-th part, as the gateway names it: the call's own id for the first,
    `<id>_2`, `<id>_3`, ... for the others."""
    return call_id if index == 0 or not call_id else f"{call_id}_{index + 1}"


def split_answers(call: Mapping[str, Any], m: ToolMessage) -> list[tuple[dict[str, Any], ToolMessage]]:
    """A split call's parts as the calls the model should have made, each with its own answer. Each answer
    carries the whole call's repairs (the `parallel_split` record among them) and then the part's own."""

    def answer(i: int, part: ToolPart) -> ToolMessage:
        return ToolMessage(
            tool_call_id=part_id(m.tool_call_id or call.get("id", ""), i),
            name=m.name,
            status=part.status,
            content=part.content,
            structured=part.structured,
            error=part.error,
            repairs=(*m.repairs, *part.repairs),
            effective_arguments=part.effective_arguments,
            attempts=part.attempts,
        )

    out = []
    for i, part in enumerate(m.parts):
        sub = {k: v for k, v in call.items() if k != "invalid"}
        sub.update(id=part_id(call.get("id", ""), i), name=_ran_name(call, m), args=part.arguments)
        out.append((sub, answer(i, part)))
    return out


def _ran_name(call: Mapping[str, Any], m: ToolMessage) -> str:
    """The tool name that ran: the repaired one when the gateway repaired the name into one a provider takes."""
    if any(r.rule in _TOOL_NAME_RULES for r in m.repairs) and _PROVIDER_SAFE.match(m.name or ""):
        return m.name
    return call["name"]


def rewrite_ai_message(
    ai: AIMessage, calls: list[dict[str, Any]], messages: list[ToolMessage], *, splits_only: bool = False
) -> AIMessage | None:
    """The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, and each split call
    as the calls it was split into (with `splits_only`, only those), or None when nothing changes. Same id, so
    LangGraph's `add_messages` replaces the original in the state."""
    ran: dict[str, list[tuple[str, str, Any]]] = {}
    for call, m in zip(calls, messages, strict=True):
        if m.parts:
            ran[call["id"]] = [(sub["id"], sub["name"], sub["args"]) for sub, _ in split_answers(call, m)]
            continue
        args = m.arguments
        if splits_only or not isinstance(args, dict):
            continue  # not asked for, or never ran (or not as an object): nothing to show instead
        name = _ran_name(call, m)
        if call.get("invalid") or args != call.get("args") or name != call["name"]:
            ran[call["id"]] = [(call["id"], name, args)]
    if not ran or ai.id is None:
        return None
    tool_calls = []
    for tc in ai.tool_calls:
        for call_id, name, args in ran.get(tc.get("id"), [(tc.get("id"), None, None)]):
            tool_calls.append(tc if name is None else {**tc, "id": call_id, "name": name, "args": args})
    invalid = []
    for tc in ai.invalid_tool_calls:
        if tc.get("id") in ran:
            for call_id, name, args in ran[tc["id"]]:
                tool_calls.append({"name": name, "args": args, "id": call_id, "type": "tool_call"})
        else:
            invalid.append(tc)
    additional = dict(ai.additional_kwargs)
    if isinstance(additional.get("tool_calls"), list):
        # The provider's raw form (OpenAI's), kept in step so a provider that resends it shows the same.
        raw_calls = []
        for raw in additional["tool_calls"]:
            if isinstance(raw, Mapping) and raw.get("id") in ran and isinstance(raw.get("function"), Mapping):
                for call_id, name, args in ran[raw["id"]]:
                    function = {**raw["function"], "name": name, "arguments": json.dumps(args)}
                    raw_calls.append({**raw, "id": call_id, "function": function})
            else:
                raw_calls.append(raw)
        additional["tool_calls"] = raw_calls
    return ai.model_copy(
        update={"tool_calls": tool_calls, "invalid_tool_calls": invalid, "additional_kwargs": additional}
    )

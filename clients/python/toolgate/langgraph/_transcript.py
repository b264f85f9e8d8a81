"""The transcript side: a typed `toolgate.ToolMessage` as a LangChain ToolMessage, and the AIMessage rewritten
with the calls as they ran (arguments repaired, injected parameters removed, edited by a reviewer)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages import ToolMessage as LCToolMessage

from ..types import ToolMessage, ToolStatus

_TOOL_NAME_RULES = {"tool_name_normalized", "tool_name_prefix", "tool_name_residue"}
_PROVIDER_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def to_langchain(m: ToolMessage, call: Mapping[str, Any] | None = None) -> LCToolMessage:
    """A typed `toolgate.ToolMessage` as a LangChain ToolMessage: `status="error"` unless it succeeded, the typed
    error in `additional_kwargs["error"]`, the repairs in `additional_kwargs["repairs"]`, the structured result
    as `artifact`, and the attempts, duration and effective arguments in `response_metadata["toolgate"]`."""
    additional: dict[str, Any] = {}
    if m.error is not None:
        additional["error"] = m.error.to_dict()
    if m.repairs:
        additional["repairs"] = [r.to_dict() for r in m.repairs]
    return LCToolMessage(
        content=m.content,
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


def rewrite_ai_message(ai: AIMessage, calls: list[dict[str, Any]], messages: list[ToolMessage]) -> AIMessage | None:
    """The AIMessage with each tool call's arguments (and a repaired tool name) as they ran, or None when all
    ran as written. Same id, so LangGraph's `add_messages` replaces the original in the state."""
    ran: dict[str, tuple[str, Any]] = {}
    for call, m in zip(calls, messages, strict=True):
        args = m.arguments
        if not isinstance(args, dict):
            continue  # never got as far as running (or not as an object): nothing to show instead
        name = call["name"]
        if any(r.rule in _TOOL_NAME_RULES for r in m.repairs) and _PROVIDER_SAFE.match(m.name or ""):
            name = m.name
        if call.get("invalid") or args != call.get("args") or name != call["name"]:
            ran[call["id"]] = (name, args)
    if not ran or ai.id is None:
        return None
    tool_calls = []
    for tc in ai.tool_calls:
        if tc.get("id") in ran:
            name, args = ran[tc["id"]]
            tc = {**tc, "name": name, "args": args}
        tool_calls.append(tc)
    invalid = []
    for tc in ai.invalid_tool_calls:
        if tc.get("id") in ran:
            name, args = ran[tc["id"]]
            tool_calls.append({"name": name, "args": args, "id": tc["id"], "type": "tool_call"})
        else:
            invalid.append(tc)
    additional = dict(ai.additional_kwargs)
    if isinstance(additional.get("tool_calls"), list):
        # The provider's raw form (OpenAI's), kept in step so a provider that resends it shows the same.
        raw_calls = []
        for raw in additional["tool_calls"]:
            if isinstance(raw, Mapping) and raw.get("id") in ran and isinstance(raw.get("function"), Mapping):
                name, args = ran[raw["id"]]
                raw = {**raw, "function": {**raw["function"], "name": name, "arguments": json.dumps(args)}}
            raw_calls.append(raw)
        additional["tool_calls"] = raw_calls
    return ai.model_copy(
        update={"tool_calls": tool_calls, "invalid_tool_calls": invalid, "additional_kwargs": additional}
    )

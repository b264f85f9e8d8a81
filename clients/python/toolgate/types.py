"""The gateway's answers and inputs as plain Python values: frozen dataclasses, JSON already parsed.

Nothing here knows protobuf; `toolgate._convert` is the one place that turns messages into these and back.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ToolStatus(str, enum.Enum):
    """How a call ended. A str, so `message.status == "SUCCESS"` holds too."""

    UNSPECIFIED = "UNSPECIFIED"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    PENDING_REVIEW = "PENDING_REVIEW"


class ErrorKind(str, enum.Enum):
    """Why a call failed; see `ToolError.model_fixable` and `ToolError.retryable` for what to do about it."""

    UNSPECIFIED = "UNSPECIFIED"
    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    MALFORMED_ARGUMENTS = "MALFORMED_ARGUMENTS"
    INVALID_ARGUMENTS = "INVALID_ARGUMENTS"
    TOOL_ERROR = "TOOL_ERROR"
    TIMEOUT = "TIMEOUT"
    RATE_LIMITED = "RATE_LIMITED"
    UNAVAILABLE = "UNAVAILABLE"
    REJECTED = "REJECTED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    INTERNAL = "INTERNAL"
    #: A policy rule denied the call; `content` is the rule's message.
    POLICY_DENIED = "POLICY_DENIED"


@dataclass(frozen=True)
class Violation:
    """One schema violation. Paths are JSON pointers: `instance_path` into the arguments, `schema_path` into the
    tool's input schema."""

    instance_path: str
    schema_path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"instance_path": self.instance_path, "schema_path": self.schema_path, "message": self.message}


@dataclass(frozen=True)
class Repair:
    """One change the gateway made to a call. `before` and `after` are JSON text."""

    rule: str
    path: str
    before: str
    after: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "path": self.path, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class ToolError:
    """Why a call failed, typed."""

    kind: ErrorKind
    message: str
    #: The model should change its call.
    model_fixable: bool = False
    #: The same call may succeed later.
    retryable: bool = False
    retry_after_ms: int = 0
    violations: tuple[Violation, ...] = ()
    #: Tool names the model may have meant (TOOL_NOT_FOUND).
    suggestions: tuple[str, ...] = ()
    #: The arguments exactly as received, before any repair: the input that caused the error.
    original_arguments: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values, as `GatewayToolNode` puts them in `additional_kwargs["error"]`."""
        return {
            "kind": self.kind.value,
            "message": self.message,
            "model_fixable": self.model_fixable,
            "retryable": self.retryable,
            "retry_after_ms": self.retry_after_ms,
            "violations": [v.to_dict() for v in self.violations],
            "suggestions": list(self.suggestions),
            "original_arguments": self.original_arguments,
        }


@dataclass(frozen=True)
class ResultBlock:
    """One block of a result of more than text, as MCP gives it: `type` is `text`, `image`, `audio`,
    `resource_link` or `resource`. Binary data (`data`, `blob`) is base64."""

    type: str
    text: str | None = None
    data: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    name: str | None = None
    description: str | None = None
    blob: str | None = None


@dataclass(frozen=True)
class ToolPart:
    """One of the calls a packed parallel call was split into (the repair `parallel_split`), and how it went."""

    status: ToolStatus
    #: This call's own result or, for an error, its model-facing explanation.
    content: str
    structured: Any = None
    error: ToolError | None = None
    #: JSON text of the model-controlled arguments this call ran with.
    effective_arguments: str = ""
    #: Repairs of this call's own arguments, after the split.
    repairs: tuple[Repair, ...] = ()
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.SUCCESS

    @property
    def arguments(self) -> Any:
        """`effective_arguments` parsed; None when there are none."""
        return _parse_json(self.effective_arguments)


@dataclass(frozen=True)
class ToolMessage:
    """The one answer to a tool call, success or error, ready to hand back to the model."""

    tool_call_id: str
    #: The resolved registry name (or the name as called when it did not resolve).
    name: str
    status: ToolStatus
    #: Text for the model; for an error, the model-facing explanation.
    content: str
    #: The tool's structured result, parsed from JSON; None when it gave none.
    structured: Any = None
    error: ToolError | None = None
    repairs: tuple[Repair, ...] = ()
    #: JSON text of the model-controlled arguments the tool received (injected values left out).
    effective_arguments: str = ""
    attempts: int = 0
    duration_us: int = 0
    #: A packed parallel call split into the calls the model meant: one part per call, in order. `content`
    #: gives every part's result, and the status is ERROR if any part failed.
    parts: tuple[ToolPart, ...] = ()
    #: The result's blocks, in order, when it holds more than text (an image, audio, a resource); `content` is
    #: then the text a model that reads only text gets. Empty for a result of text alone.
    blocks: tuple[ResultBlock, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.SUCCESS

    @property
    def pending_review(self) -> bool:
        return self.status is ToolStatus.PENDING_REVIEW

    @property
    def arguments(self) -> Any:
        """`effective_arguments` parsed; None when there are none (a call that never got that far)."""
        return _parse_json(self.effective_arguments)


@dataclass(frozen=True)
class ToolCall:
    """One call found in a model's text (`Client.calls_from_text`): the name as the model wrote it (the gateway
    resolves it when the call runs) and the arguments as read, JSON text."""

    name: str
    arguments: str
    #: The id the call ran with (`run=True`: `<call_id_prefix>-<index>`); empty when it did not run.
    id: str = ""

    @property
    def args(self) -> Any:
        """`arguments` parsed; None when there are none."""
        return _parse_json(self.arguments)


@dataclass(frozen=True)
class CallsFromText:
    """What the gateway read in a model's answer: the calls it wrote as text instead of making them, and the rest.

    Calls are taken only when they are the answer's action. A text that only shows, quotes, offers, refuses,
    supposes or remembers a call gives none: `calls` is then empty, and `refusal` says why (`refusal_reason` in
    one word, to log and count)."""

    calls: tuple[ToolCall, ...] = ()
    #: The format the calls were written in (hermes, qwen3_coder_xml, llama3_json, llama3_python_tag, mistral,
    #: harmony, pythonic, json); empty when none was found.
    envelope: str = ""
    #: What was around them: code_fence, string_list, print, arguments_dict, text_parts.
    wrappers: tuple[str, ...] = ()
    #: The text with the calls taken out: what the model said besides them.
    rest: str = ""
    #: Why a text that showed a call gave none; empty otherwise.
    refusal: str = ""
    #: The refusal's reason, one of: disabled, too_long, too_many_calls, over_budget, not_offered, other_format,
    #: quoted, reasoning, example, negated, question, options, past, hypothetical, other_speaker, not_an_action,
    #: mention, not_whole, ambiguous; empty when `refusal` is.
    refusal_reason: str = ""
    #: The format the text was read in: the one asked for, the model's, or auto.
    format: str = ""
    #: With `run=True`: each call's outcome, in call order (its repairs start with `calls_from_text`).
    messages: tuple[ToolMessage, ...] = ()


@dataclass(frozen=True)
class CallContext:
    """Who is calling. Tenancy, injection and policy read it; the model never writes it."""

    tenant: str = ""
    user_id: str = ""
    session_id: str = ""
    values: Mapping[str, str] = field(default_factory=dict, hash=False)

    @classmethod
    def of(cls, context: CallContext | Mapping[str, Any] | None) -> CallContext:
        """Accepts a CallContext, a dict with the same keys, or None (an empty context)."""
        if context is None:
            return cls()
        if isinstance(context, CallContext):
            return context
        unknown = set(context) - {"tenant", "user_id", "session_id", "values"}
        if unknown:
            raise ValueError(f"unknown CallContext keys: {sorted(unknown)}")
        values = {str(k): str(v) for k, v in dict(context.get("values") or {}).items()}
        return cls(
            tenant=str(context.get("tenant") or ""),
            user_id=str(context.get("user_id") or ""),
            session_id=str(context.get("session_id") or ""),
            values=values,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "user_id": self.user_id,
            "session_id": self.session_id,
            "values": dict(self.values),
        }


@dataclass(frozen=True)
class PendingReview:
    """A call waiting for a person (or, from `decide`, the call just decided)."""

    call_id: str
    tenant: str
    session_id: str
    user_id: str
    #: The registry name of the tool.
    tool: str
    #: What the model wrote (after repair), as JSON text, without injected values.
    arguments: str
    repairs: tuple[Repair, ...] = ()
    #: Unix time in milliseconds.
    created_ms: int = 0
    #: Once decided: who decided (empty for a decision that named no reviewer) and when, in Unix milliseconds.
    decided_by: str = ""
    decided_ms: int = 0
    #: The policy rule that sent the call to review, and its message; empty when the tool requires review.
    rule: str = ""
    rule_message: str = ""

    @property
    def args(self) -> Any:
        """`arguments` parsed."""
        return _parse_json(self.arguments)

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "tenant": self.tenant,
            "session_id": self.session_id,
            "user_id": self.user_id,
            "tool": self.tool,
            "arguments": self.args,
            "repairs": [r.to_dict() for r in self.repairs],
            "created_ms": self.created_ms,
        }


def _parse_json(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text

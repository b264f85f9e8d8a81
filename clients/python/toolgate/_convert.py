"""The edge where protobuf stops: every conversion between the generated messages and `toolgate.types`, and
between spec dicts (the snake_case form of spec files) and `ToolSpec`, lives here and nowhere else."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from ._pb import gateway_pb2, registry_pb2, review_pb2, types_pb2
from .types import (
    CallContext,
    CallsFromText,
    ErrorKind,
    PendingReview,
    Repair,
    ResultBlock,
    ToolCall,
    ToolError,
    ToolMessage,
    ToolPart,
    ToolStatus,
    Violation,
)

# ---- answers -------------------------------------------------------------------------------------------------


def _enum_name(enum_type: Any, prefix: str, value: int) -> str:
    try:
        return enum_type.Name(value).removeprefix(prefix)
    except ValueError:  # a value newer than these stubs
        return "UNSPECIFIED"


E = TypeVar("E", ErrorKind, ToolStatus)


def enum_of(cls: type[E], enum_type: Any, prefix: str, value: int) -> E:
    """The Python enum member of a protobuf enum value; UNSPECIFIED for a value newer than the stubs or than the
    Python enum, so one unknown kind never loses the answers of a whole batch."""
    try:
        return cls(_enum_name(enum_type, prefix, value))
    except ValueError:
        return cls.UNSPECIFIED


def repair_from_pb(r: types_pb2.Repair) -> Repair:
    return Repair(rule=r.rule, path=r.path, before=r.before, after=r.after)


def error_from_pb(e: types_pb2.ToolError) -> ToolError:
    return ToolError(
        kind=enum_of(ErrorKind, types_pb2.ErrorKind, "ERROR_KIND_", e.kind),
        message=e.message,
        model_fixable=e.model_fixable,
        retryable=e.retryable,
        retry_after_ms=e.retry_after_ms,
        violations=tuple(
            Violation(instance_path=v.instance_path, schema_path=v.schema_path, message=v.message) for v in e.violations
        ),
        suggestions=tuple(e.suggestions),
        original_arguments=e.original_arguments,
    )


def _structured(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def part_from_pb(p: types_pb2.ToolMessagePart) -> ToolPart:
    return ToolPart(
        status=enum_of(ToolStatus, types_pb2.ToolStatus, "TOOL_STATUS_", p.status),
        content=p.content,
        structured=_structured(p.structured),
        error=error_from_pb(p.error) if p.HasField("error") else None,
        effective_arguments=p.effective_arguments,
        repairs=tuple(repair_from_pb(r) for r in p.repairs),
        attempts=p.attempts,
    )


def message_from_pb(m: types_pb2.ToolMessage) -> ToolMessage:
    structured = _structured(m.structured)
    return ToolMessage(
        tool_call_id=m.tool_call_id,
        name=m.name,
        status=enum_of(ToolStatus, types_pb2.ToolStatus, "TOOL_STATUS_", m.status),
        content=m.content,
        structured=structured,
        error=error_from_pb(m.error) if m.HasField("error") else None,
        repairs=tuple(repair_from_pb(r) for r in m.repairs),
        effective_arguments=m.effective_arguments,
        attempts=m.attempts,
        duration_us=m.duration_us,
        parts=tuple(part_from_pb(p) for p in m.parts),
        blocks=tuple(b for b in map(block_from_pb, m.blocks) if b is not None),
    )


def block_from_pb(b: types_pb2.ResultBlock) -> ResultBlock | None:
    """A result's block; None for a kind newer than this client (its text is in `content`)."""
    kind = b.WhichOneof("block")
    if kind == "text":
        return ResultBlock(type="text", text=b.text.text)
    if kind in ("image", "audio"):
        media = getattr(b, kind)
        return ResultBlock(type=kind, data=media.data, mime_type=media.mime_type)
    if kind == "resource_link":
        link = b.resource_link
        return ResultBlock(
            type="resource_link",
            uri=link.uri,
            name=link.name,
            mime_type=link.mime_type if link.HasField("mime_type") else None,
            description=link.description if link.HasField("description") else None,
        )
    if kind == "resource":
        r = b.resource
        contents = r.WhichOneof("contents")
        return ResultBlock(
            type="resource",
            uri=r.uri,
            mime_type=r.mime_type if r.HasField("mime_type") else None,
            text=r.text if contents == "text" else None,
            blob=r.blob if contents == "blob" else None,
        )
    return None


def calls_from_text_from_pb(r: gateway_pb2.CallsFromTextResponse) -> CallsFromText:
    return CallsFromText(
        calls=tuple(ToolCall(name=c.name, arguments=c.arguments, id=c.id) for c in r.calls),
        envelope=r.envelope,
        wrappers=tuple(r.wrappers),
        rest=r.rest,
        refusal=r.refusal,
        refusal_reason=r.refusal_reason,
        format=r.format,
        messages=tuple(message_from_pb(m) for m in r.messages),
    )


def pending_from_pb(p: review_pb2.PendingReview) -> PendingReview:
    return PendingReview(
        call_id=p.call_id,
        tenant=p.tenant,
        session_id=p.session_id,
        user_id=p.user_id,
        tool=p.tool,
        arguments=p.arguments,
        repairs=tuple(repair_from_pb(r) for r in p.repairs),
        created_ms=p.created_ms,
        decided_by=p.decided_by,
        decided_ms=p.decided_ms,
        rule=p.rule,
        rule_message=p.rule_message,
    )


# ---- requests ------------------------------------------------------------------------------------------------


def context_to_pb(context: CallContext | Mapping[str, Any] | None) -> types_pb2.CallContext:
    ctx = CallContext.of(context)
    return types_pb2.CallContext(
        tenant=ctx.tenant, user_id=ctx.user_id, session_id=ctx.session_id, values=dict(ctx.values)
    )


def arguments_text(arguments: Any) -> str:
    """A string is sent as is (raw model output, possibly broken: the gateway repairs it); anything else as JSON."""
    if isinstance(arguments, str):
        return arguments
    if arguments is None:
        return "{}"
    return json.dumps(arguments, ensure_ascii=False)


def call_to_pb(call: Mapping[str, Any]) -> types_pb2.ToolCall:
    """One call as a dict: `name`, optional `id`, and `args` (LangChain's key) or `arguments`."""
    if "name" not in call:
        raise ValueError(f"a tool call needs a name: {dict(call)!r}")
    if "args" in call and "arguments" in call:
        raise ValueError("a tool call has args or arguments, not both")
    arguments = call["args"] if "args" in call else call.get("arguments")
    return types_pb2.ToolCall(id=str(call.get("id") or ""), name=str(call["name"]), arguments=arguments_text(arguments))


_REVIEW_MODES = {
    None: gateway_pb2.REVIEW_MODE_UNSPECIFIED,
    "wait": gateway_pb2.REVIEW_MODE_WAIT,
    "defer": gateway_pb2.REVIEW_MODE_DEFER,
}


def review_mode_to_pb(mode: str | None) -> int:
    key = mode.lower() if isinstance(mode, str) else mode
    if key not in _REVIEW_MODES:
        raise ValueError(f"review_mode is 'wait', 'defer' or None, not {mode!r}")
    return _REVIEW_MODES[key]


def execute_request(name: str, arguments: Any, *, id: str | None, context: Any, review_mode: str | None):
    call = types_pb2.ToolCall(id=id or "", name=name, arguments=arguments_text(arguments))
    return gateway_pb2.ExecuteRequest(
        call=call, context=context_to_pb(context), review_mode=review_mode_to_pb(review_mode)
    )


def batch_request(calls: Iterable[Mapping[str, Any]], *, context: Any, review_mode: str | None):
    return gateway_pb2.ExecuteBatchRequest(
        calls=[call_to_pb(c) for c in calls],
        context=context_to_pb(context),
        review_mode=review_mode_to_pb(review_mode),
    )


def calls_from_text_request(
    text: str,
    *,
    context: Any,
    tools: Iterable[str] | None,
    run: bool,
    call_id_prefix: str | None,
    review_mode: str | None,
    format: str | None = None,
    model: str | None = None,
) -> gateway_pb2.CallsFromTextRequest:
    if not isinstance(text, str):
        raise TypeError(f"text is the model's answer as a str, not {type(text).__name__}")
    if isinstance(tools, str):
        raise TypeError("tools is a list of tool names, not one str")
    return gateway_pb2.CallsFromTextRequest(
        text=text,
        context=context_to_pb(context),
        tools=[str(t) for t in tools or ()],
        run=run,
        review_mode=review_mode_to_pb(review_mode),
        call_id_prefix=call_id_prefix or "",
        format=format or "",
        model=model or "",
    )


_FORMATS = {
    "openai": gateway_pb2.DEFINITION_FORMAT_OPENAI,
    "anthropic": gateway_pb2.DEFINITION_FORMAT_ANTHROPIC,
    "mcp": gateway_pb2.DEFINITION_FORMAT_MCP,
    "json-schema": gateway_pb2.DEFINITION_FORMAT_JSON_SCHEMA,
    "json_schema": gateway_pb2.DEFINITION_FORMAT_JSON_SCHEMA,
}


def definitions_request(format: str, context: Any) -> gateway_pb2.ListToolDefinitionsRequest:
    key = format.lower()
    if key not in _FORMATS:
        raise ValueError(f"format is one of openai, anthropic, mcp, json-schema, not {format!r}")
    return gateway_pb2.ListToolDefinitionsRequest(context=context_to_pb(context), format=_FORMATS[key])


def definitions_from_pb(response: gateway_pb2.ListToolDefinitionsResponse) -> list[dict[str, Any]]:
    return [json.loads(d.definition) for d in response.definitions]


_ACTIONS = {
    "approve": review_pb2.REVIEW_ACTION_APPROVE,
    "edit": review_pb2.REVIEW_ACTION_EDIT,
    "reject": review_pb2.REVIEW_ACTION_REJECT,
}


def decide_request(
    call_id: str, action: str, *, arguments: Any, feedback: str | None, tenant: str, reviewer: str | None = None
) -> review_pb2.DecideRequest:
    key = action.lower() if isinstance(action, str) else action
    if key not in _ACTIONS:
        raise ValueError(f"action is 'approve', 'edit' or 'reject', not {action!r}")
    if key == "edit" and arguments is None:
        raise ValueError("an edit needs the new arguments")
    return review_pb2.DecideRequest(
        call_id=call_id,
        tenant=tenant,
        action=_ACTIONS[key],
        arguments=arguments_text(arguments) if key == "edit" else "",
        feedback=feedback or "",
        reviewer=reviewer or "",
    )


# ---- tool specs ----------------------------------------------------------------------------------------------

_SPEC_KEYS = {
    "name",
    "description",
    "input_schema",
    "output_schema",
    "backend",
    "inject",
    "repair",
    "limits",
    "review",
    "budget",
    "tenant",
    "labels",
    "policy",
    "version",
}
_RULE_KEYS = ("name", "when", "action", "message", "on_error", "model_fixable")
_LIMIT_KEYS = ("TOOL", "TENANT", "USER", "SESSION")


def _only(section: str, given: Mapping[str, Any], allowed: Iterable[str]) -> Mapping[str, Any]:
    if not isinstance(given, Mapping):
        raise ValueError(f"{section} must be an object, got {given!r}")
    unknown = set(given) - set(allowed)
    if unknown:
        raise ValueError(f"unknown {section} fields: {sorted(unknown)}")
    return given


def _schema_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _backend_to_pb(backend: Mapping[str, Any]) -> registry_pb2.Backend:
    _only("backend", backend, ("grpc", "http", "mcp", "worker"))
    if len(backend) != 1:
        raise ValueError(f"backend names exactly one of grpc, http, mcp, worker: {dict(backend)!r}")
    ((kind, body),) = backend.items()
    if kind == "grpc":
        return registry_pb2.Backend(grpc=registry_pb2.GrpcBackend(**_only("backend.grpc", body, ("target",))))
    if kind == "http":
        http = _only("backend.http", body, ("url", "method", "headers"))
        return registry_pb2.Backend(
            http=registry_pb2.HttpBackend(
                url=http.get("url", ""), method=http.get("method", ""), headers=dict(http.get("headers") or {})
            )
        )
    if kind == "mcp":
        return registry_pb2.Backend(mcp=registry_pb2.McpBackend(**_only("backend.mcp", body, ("server", "tool"))))
    _only("backend.worker", body or {}, ())
    return registry_pb2.Backend(worker=registry_pb2.WorkerBackend())


def _limit_key(key: str | None) -> int:
    name = str(key or "").upper().removeprefix("LIMIT_KEY_")
    if name in ("", "UNSPECIFIED"):
        return registry_pb2.LIMIT_KEY_UNSPECIFIED  # the gateway's default, TOOL
    if name not in _LIMIT_KEYS:
        raise ValueError(f"limits.key is one of {', '.join(_LIMIT_KEYS)}, not {key!r}")
    return registry_pb2.LimitKey.Value(f"LIMIT_KEY_{name}")


def _policy_action(field: str, value: Any, allowed: tuple[str, ...]) -> int:
    name = str(value or "").upper().removeprefix("POLICY_ACTION_")
    if name not in allowed:
        raise ValueError(f"policy rule {field} is one of {', '.join(a.lower() for a in allowed)}, not {value!r}")
    return registry_pb2.PolicyAction.Value(f"POLICY_ACTION_{name}")


def _rule_to_pb(rule: Mapping[str, Any]) -> registry_pb2.PolicyRule:
    _only("policy rule", rule, _RULE_KEYS)
    if not rule.get("name") or not rule.get("when") or not rule.get("action"):
        raise ValueError(f"a policy rule needs name, when and action: {dict(rule)!r}")
    return registry_pb2.PolicyRule(
        name=rule["name"],
        when=rule["when"],
        action=_policy_action("action", rule["action"], ("DENY", "REVIEW")),
        message=rule.get("message", ""),
        on_error=_policy_action("on_error", rule.get("on_error") or "deny", ("DENY", "REVIEW", "ALLOW")),
        model_fixable=bool(rule.get("model_fixable", False)),
    )


def _rule_from_pb(rule: registry_pb2.PolicyRule) -> dict[str, Any]:
    on_error = _enum_name(registry_pb2.PolicyAction, "POLICY_ACTION_", rule.on_error)
    return {
        "name": rule.name,
        "when": rule.when,
        "action": _enum_name(registry_pb2.PolicyAction, "POLICY_ACTION_", rule.action).lower(),
        "message": rule.message,
        "on_error": "deny" if on_error == "UNSPECIFIED" else on_error.lower(),
        "model_fixable": rule.model_fixable,
    }


def spec_to_pb(spec: Mapping[str, Any]) -> registry_pb2.ToolSpec:
    """A spec in the spec-file form (README: `name`, `input_schema` as an object or JSON text, `backend`,
    `inject`, `repair`, `limits`, ...). Unknown fields are refused, as the gateway's own spec reader does."""
    _only("spec", spec, _SPEC_KEYS)
    if "name" not in spec or "input_schema" not in spec:
        raise ValueError("a tool spec needs at least name and input_schema")
    out = registry_pb2.ToolSpec(
        name=spec["name"],
        description=spec.get("description", ""),
        input_schema=_schema_text(spec["input_schema"]),
        output_schema=_schema_text(spec.get("output_schema")),
        tenant=spec.get("tenant", ""),
        labels=dict(spec.get("labels") or {}),
    )
    if spec.get("backend") is not None:
        out.backend.CopyFrom(_backend_to_pb(spec["backend"]))
    for injection in spec.get("inject") or ():
        _only("inject", injection, ("param", "from"))
        out.inject.add(param=injection["param"], **{"from": injection["from"]})
    if "repair" in spec:
        repair = _only("repair", spec["repair"], ("enabled", "aliases", "drop_unknown", "split_parallel"))
        out.repair.aliases.update(dict(repair.get("aliases") or {}))
        out.repair.drop_unknown = bool(repair.get("drop_unknown", False))
        if repair.get("enabled") is not None:
            out.repair.enabled = bool(repair["enabled"])
        if repair.get("split_parallel") is not None:
            out.repair.split_parallel = bool(repair["split_parallel"])
    if "limits" in spec:
        limits = _only(
            "limits", spec["limits"], ("rate", "burst", "key", "max_concurrency", "timeout_ms", "retries", "idempotent")
        )
        out.limits.CopyFrom(
            registry_pb2.Limits(
                rate=limits.get("rate", ""),
                burst=limits.get("burst", 0),
                key=_limit_key(limits.get("key")),
                max_concurrency=limits.get("max_concurrency", 0),
                timeout_ms=limits.get("timeout_ms", 0),
                retries=limits.get("retries", 0),
                idempotent=bool(limits.get("idempotent", False)),
            )
        )
    if "review" in spec:
        out.review.required = bool(_only("review", spec["review"], ("required",)).get("required", False))
    if "budget" in spec:
        budget = _only("budget", spec["budget"], ("max_calls", "max_consecutive_failures"))
        out.budget.CopyFrom(
            registry_pb2.Budget(
                max_calls=budget.get("max_calls", 0),
                max_consecutive_failures=budget.get("max_consecutive_failures", 0),
            )
        )
    for rule in spec.get("policy") or ():
        out.policy.append(_rule_to_pb(rule))
    return out


def spec_from_pb(spec: registry_pb2.ToolSpec) -> dict[str, Any]:
    """The registered spec in the spec-file form, schemas parsed, with the registry's `version`."""
    out: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "input_schema": json.loads(spec.input_schema) if spec.input_schema else None,
    }
    if spec.output_schema:
        out["output_schema"] = json.loads(spec.output_schema)
    kind = spec.backend.WhichOneof("kind")
    if kind == "grpc":
        out["backend"] = {"grpc": {"target": spec.backend.grpc.target}}
    elif kind == "http":
        h = spec.backend.http
        out["backend"] = {"http": {"url": h.url, "method": h.method, "headers": dict(h.headers)}}
    elif kind == "mcp":
        out["backend"] = {"mcp": {"server": spec.backend.mcp.server, "tool": spec.backend.mcp.tool}}
    elif kind == "worker":
        out["backend"] = {"worker": {}}
    out["inject"] = [{"param": i.param, "from": getattr(i, "from")} for i in spec.inject]
    out["repair"] = {"aliases": dict(spec.repair.aliases), "drop_unknown": spec.repair.drop_unknown}
    if spec.repair.HasField("enabled"):
        out["repair"]["enabled"] = spec.repair.enabled
    if spec.repair.HasField("split_parallel"):
        out["repair"]["split_parallel"] = spec.repair.split_parallel
    lim = spec.limits
    out["limits"] = {
        "rate": lim.rate,
        "burst": lim.burst,
        "max_concurrency": lim.max_concurrency,
        "timeout_ms": lim.timeout_ms,
        "retries": lim.retries,
        "idempotent": lim.idempotent,
    }
    key = _enum_name(registry_pb2.LimitKey, "LIMIT_KEY_", lim.key)
    if key != "UNSPECIFIED":  # left out, as in a spec file: the gateway's default (TOOL)
        out["limits"]["key"] = key
    out["review"] = {"required": spec.review.required}
    out["budget"] = {
        "max_calls": spec.budget.max_calls,
        "max_consecutive_failures": spec.budget.max_consecutive_failures,
    }
    out["policy"] = [_rule_from_pb(rule) for rule in spec.policy]
    out["tenant"] = spec.tenant
    out["labels"] = dict(spec.labels)
    out["version"] = spec.version
    return out

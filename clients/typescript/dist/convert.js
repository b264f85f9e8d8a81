/**
 * The edge where protobuf stops: every conversion between the generated messages and `types.ts`, and between
 * spec objects (the snake_case form of spec files) and the proto `ToolSpec`, lives here and nowhere else.
 * @module
 */
import { create } from "@bufbuild/protobuf";
import { DefinitionFormat as PbFormat, ReviewMode as PbReviewMode, } from "./gen/toolgate/v1/gateway_pb.js";
import { BackendSchema, LimitKey, PolicyAction, RateScope, RedisDown, ToolSpecSchema, } from "./gen/toolgate/v1/registry_pb.js";
import { ReviewAction as PbReviewAction, ReviewEvent_Kind, } from "./gen/toolgate/v1/review_pb.js";
import { ErrorKind as PbErrorKind, ToolStatus as PbToolStatus, } from "./gen/toolgate/v1/types_pb.js";
import { parseJson, } from "./types.js";
// ---- answers ------------------------------------------------------------------------------------------------
/** The name of a proto enum value; UNSPECIFIED for a value newer than these stubs, so one unknown kind never
 * loses the answers of a whole batch. */
function enumName(names, value) {
    return (names[value] ?? "UNSPECIFIED");
}
function repairFromPb(r) {
    return { rule: r.rule, path: r.path, before: r.before, after: r.after };
}
function errorFromPb(e) {
    return {
        kind: enumName(PbErrorKind, e.kind),
        message: e.message,
        modelFixable: e.modelFixable,
        retryable: e.retryable,
        retryAfterMs: Number(e.retryAfterMs),
        violations: e.violations.map((v) => ({ instancePath: v.instancePath, schemaPath: v.schemaPath, message: v.message })),
        suggestions: [...e.suggestions],
        originalArguments: e.originalArguments,
    };
}
function partFromPb(p) {
    const status = enumName(PbToolStatus, p.status);
    return {
        status,
        content: p.content,
        structured: parseJson(p.structured),
        error: p.error === undefined ? undefined : errorFromPb(p.error),
        effectiveArguments: p.effectiveArguments,
        arguments: parseJson(p.effectiveArguments),
        repairs: p.repairs.map(repairFromPb),
        attempts: p.attempts,
        ok: status === "SUCCESS",
    };
}
export function messageFromPb(m) {
    if (m === undefined)
        throw new Error("the gateway answered without a ToolMessage");
    const status = enumName(PbToolStatus, m.status);
    return {
        toolCallId: m.toolCallId,
        name: m.name,
        status,
        content: m.content,
        structured: parseJson(m.structured),
        error: m.error === undefined ? undefined : errorFromPb(m.error),
        repairs: m.repairs.map(repairFromPb),
        effectiveArguments: m.effectiveArguments,
        arguments: parseJson(m.effectiveArguments),
        attempts: m.attempts,
        durationUs: Number(m.durationUs),
        ok: status === "SUCCESS",
        pendingReview: status === "PENDING_REVIEW",
        parts: m.parts.map(partFromPb),
        blocks: m.blocks.flatMap(blockFromPb),
    };
}
/** A result's block; one of a kind newer than this client is left out (its text is in `content`). */
export function blockFromPb(b) {
    const block = b.block;
    switch (block.case) {
        case "text":
            return [{ type: "text", text: block.value.text }];
        case "image":
        case "audio":
            return [{ type: block.case, data: block.value.data, mimeType: block.value.mimeType }];
        case "resourceLink": {
            const { uri, name, mimeType, description } = block.value;
            return [{ type: "resource_link", uri, name, mimeType, description }];
        }
        case "resource": {
            const { uri, mimeType, contents } = block.value;
            const text = contents.case === "text" ? contents.value : undefined;
            const blob = contents.case === "blob" ? contents.value : undefined;
            return [{ type: "resource", uri, mimeType, text, blob }];
        }
        default:
            return [];
    }
}
export function pendingFromPb(p) {
    if (p === undefined)
        throw new Error("the gateway answered without the review");
    return {
        callId: p.callId,
        tenant: p.tenant,
        sessionId: p.sessionId,
        userId: p.userId,
        tool: p.tool,
        arguments: p.arguments,
        args: parseJson(p.arguments),
        repairs: p.repairs.map(repairFromPb),
        createdMs: Number(p.createdMs),
        decidedBy: p.decidedBy,
        decidedMs: Number(p.decidedMs),
        rule: p.rule,
        ruleMessage: p.ruleMessage,
    };
}
export function eventFromPb(e) {
    return { kind: enumName(ReviewEvent_Kind, e.kind), review: pendingFromPb(e.review) };
}
export function definitionsFromPb(response) {
    return response.definitions.map((d) => ({ name: d.name, tool: d.tool, definition: JSON.parse(d.definition) }));
}
export function textCallsFromPb(r) {
    return {
        calls: r.calls.map((c) => ({ name: c.name, arguments: c.arguments, args: parseJson(c.arguments), id: c.id })),
        envelope: r.envelope,
        wrappers: [...r.wrappers],
        rest: r.rest,
        refusal: r.refusal,
        refusalReason: r.refusalReason,
        format: r.format,
        messages: r.messages.map(messageFromPb),
    };
}
const CONTEXT_KEYS = new Set(["tenant", "userId", "sessionId", "values"]);
export function contextToPb(context) {
    const ctx = context ?? {};
    refuseUnknown("CallContext", ctx, CONTEXT_KEYS);
    const values = {};
    for (const [k, v] of Object.entries(ctx.values ?? {}))
        values[k] = String(v);
    return { tenant: ctx.tenant ?? "", userId: ctx.userId ?? "", sessionId: ctx.sessionId ?? "", values };
}
/** A string is sent as is (raw model output, possibly broken: the gateway repairs it); anything else as JSON. */
export function argumentsText(args) {
    if (typeof args === "string")
        return args;
    if (args === undefined || args === null)
        return "{}";
    return JSON.stringify(args);
}
export function callToPb(call) {
    if (typeof call?.name !== "string")
        throw new TypeError(`a tool call needs a name: ${JSON.stringify(call)}`);
    if ("args" in call && "arguments" in call && call.args !== undefined && call.arguments !== undefined) {
        throw new TypeError("a tool call has args or arguments, not both");
    }
    const args = call.args !== undefined ? call.args : call.arguments;
    return { id: call.id ?? "", name: call.name, arguments: argumentsText(args) };
}
export function reviewModeToPb(mode) {
    if (mode === undefined)
        return PbReviewMode.UNSPECIFIED;
    if (mode === "wait")
        return PbReviewMode.WAIT;
    if (mode === "defer")
        return PbReviewMode.DEFER;
    throw new TypeError(`reviewMode is "wait", "defer" or undefined, not ${JSON.stringify(mode)}`);
}
export function executeRequest(call, context, mode) {
    return { call: callToPb(call), context: contextToPb(context), reviewMode: reviewModeToPb(mode) };
}
export function batchRequest(calls, context, mode) {
    return { calls: calls.map(callToPb), context: contextToPb(context), reviewMode: reviewModeToPb(mode) };
}
export function textCallsRequest(text, options) {
    if (typeof text !== "string")
        throw new TypeError(`callsFromText reads a string, not ${JSON.stringify(text)}`);
    return {
        text,
        context: contextToPb(options.context),
        tools: [...(options.tools ?? [])],
        run: options.run ?? false,
        reviewMode: reviewModeToPb(options.reviewMode),
        callIdPrefix: options.callIdPrefix ?? "",
        format: options.format ?? "",
        model: options.model ?? "",
    };
}
const FORMATS = {
    openai: PbFormat.OPENAI,
    anthropic: PbFormat.ANTHROPIC,
    mcp: PbFormat.MCP,
    "json-schema": PbFormat.JSON_SCHEMA,
    json_schema: PbFormat.JSON_SCHEMA,
};
export function formatToPb(format) {
    const value = FORMATS[String(format).toLowerCase()];
    if (value === undefined)
        throw new TypeError(`format is openai, anthropic, mcp or json-schema, not ${format}`);
    return value;
}
const ACTIONS = {
    approve: PbReviewAction.APPROVE,
    edit: PbReviewAction.EDIT,
    reject: PbReviewAction.REJECT,
};
export function decideRequest(callId, action, options) {
    const pb = ACTIONS[String(action).toLowerCase()];
    if (pb === undefined)
        throw new TypeError(`action is "approve", "edit" or "reject", not ${JSON.stringify(action)}`);
    if (pb === PbReviewAction.EDIT && options.arguments === undefined)
        throw new TypeError("an edit needs the new arguments");
    return {
        callId,
        tenant: options.tenant ?? "",
        action: pb,
        arguments: pb === PbReviewAction.EDIT ? argumentsText(options.arguments) : "",
        feedback: options.feedback ?? "",
        reviewer: options.reviewer ?? "",
    };
}
// ---- tool specs ---------------------------------------------------------------------------------------------
function refuseUnknown(section, given, allowed) {
    if (given === null || typeof given !== "object" || Array.isArray(given)) {
        throw new TypeError(`${section} must be an object, got ${JSON.stringify(given)}`);
    }
    const unknown = Object.keys(given).filter((k) => !allowed.has(k));
    if (unknown.length > 0)
        throw new TypeError(`unknown ${section} fields: ${unknown.sort().join(", ")}`);
}
const SPEC_KEYS = new Set([
    "name", "description", "input_schema", "output_schema", "backend", "inject", "repair", "limits", "review",
    "budget", "tenant", "labels", "policy", "version",
]);
const RULE_KEYS = new Set(["name", "when", "action", "message", "on_error", "model_fixable"]);
const LIMIT_KEYS = new Set([
    "rate", "burst", "key", "scope", "when_redis_down", "max_concurrency", "timeout_ms", "retries", "idempotent",
]);
function schemaText(value) {
    if (value === undefined || value === null)
        return "";
    return typeof value === "string" ? value : JSON.stringify(value);
}
function backendToPb(backend) {
    refuseUnknown("backend", backend, new Set(["grpc", "http", "mcp", "worker"]));
    const entries = Object.entries(backend);
    if (entries.length !== 1)
        throw new TypeError(`backend names exactly one of grpc, http, mcp, worker`);
    const [kind, body] = entries[0];
    const only = (keys) => refuseUnknown(`backend.${kind}`, body ?? {}, new Set(keys));
    const b = (body ?? {});
    switch (kind) {
        case "grpc":
            only(["target"]);
            return { kind: { case: "grpc", value: { target: String(b.target ?? "") } } };
        case "http":
            only(["url", "method", "headers"]);
            return {
                kind: {
                    case: "http",
                    value: {
                        url: String(b.url ?? ""),
                        method: String(b.method ?? ""),
                        headers: (b.headers ?? {}),
                    },
                },
            };
        case "mcp":
            only(["server", "tool"]);
            return { kind: { case: "mcp", value: { server: String(b.server ?? ""), tool: String(b.tool ?? "") } } };
        default:
            only([]);
            return { kind: { case: "worker", value: {} } };
    }
}
/** A proto enum value by its short name (`"USER"` or `"LIMIT_KEY_USER"`); 0 (the gateway's default) when absent. */
function enumValue(section, names, prefix, given) {
    if (given === undefined || given === null || given === "")
        return 0;
    const name = String(given).toUpperCase().replace(prefix, "");
    const value = names[name];
    if (typeof value !== "number" || value === 0) {
        const allowed = Object.keys(names).filter((k) => isNaN(Number(k)) && k !== "UNSPECIFIED");
        throw new TypeError(`${section} is one of ${allowed.join(", ")}, not ${JSON.stringify(given)}`);
    }
    return value;
}
function limitsToPb(limits) {
    refuseUnknown("limits", limits, LIMIT_KEYS);
    const l = limits;
    return {
        rate: String(l.rate ?? ""),
        burst: Number(l.burst ?? 0),
        key: enumValue("limits.key", LimitKey, "LIMIT_KEY_", l.key),
        scope: enumValue("limits.scope", RateScope, "RATE_SCOPE_", l.scope),
        whenRedisDown: enumValue("limits.when_redis_down", RedisDown, "REDIS_DOWN_", l.when_redis_down),
        maxConcurrency: Number(l.max_concurrency ?? 0),
        timeoutMs: BigInt(Number(l.timeout_ms ?? 0)),
        retries: Number(l.retries ?? 0),
        idempotent: Boolean(l.idempotent ?? false),
    };
}
/** A spec in the spec-file form. Unknown fields are refused, as the gateway's own spec reader does. */
export function specToPb(spec) {
    refuseUnknown("spec", spec, SPEC_KEYS);
    if (typeof spec.name !== "string" || spec.input_schema === undefined) {
        throw new TypeError("a tool spec needs at least name and input_schema");
    }
    const out = create(ToolSpecSchema, {
        name: spec.name,
        description: spec.description ?? "",
        inputSchema: schemaText(spec.input_schema),
        outputSchema: schemaText(spec.output_schema),
        tenant: spec.tenant ?? "",
        labels: spec.labels ?? {},
    });
    if (spec.backend !== undefined && spec.backend !== null)
        out.backend = create(BackendSchema, backendToPb(spec.backend));
    out.inject = (spec.inject ?? []).map((i) => {
        refuseUnknown("inject", i, new Set(["param", "from"]));
        return { $typeName: "toolgate.v1.Injection", param: i.param, from: i.from };
    });
    if (spec.repair !== undefined) {
        refuseUnknown("repair", spec.repair, new Set(["enabled", "aliases", "drop_unknown", "split_parallel"]));
        out.repair = {
            $typeName: "toolgate.v1.RepairPolicy",
            aliases: spec.repair.aliases ?? {},
            dropUnknown: Boolean(spec.repair.drop_unknown),
            ...(spec.repair.enabled === undefined ? {} : { enabled: Boolean(spec.repair.enabled) }),
            ...(spec.repair.split_parallel === undefined ? {} : { splitParallel: Boolean(spec.repair.split_parallel) }),
        };
    }
    if (spec.limits !== undefined)
        out.limits = { $typeName: "toolgate.v1.Limits", ...limitsToPb(spec.limits) };
    if (spec.review !== undefined) {
        refuseUnknown("review", spec.review, new Set(["required", "caller_may_confirm"]));
        out.review = {
            $typeName: "toolgate.v1.Review",
            required: Boolean(spec.review.required),
            callerMayConfirm: Boolean(spec.review.caller_may_confirm),
        };
    }
    if (spec.budget !== undefined) {
        refuseUnknown("budget", spec.budget, new Set(["max_calls", "max_consecutive_failures"]));
        out.budget = {
            $typeName: "toolgate.v1.Budget",
            maxCalls: Number(spec.budget.max_calls ?? 0),
            maxConsecutiveFailures: Number(spec.budget.max_consecutive_failures ?? 0),
        };
    }
    out.policy = (spec.policy ?? []).map(ruleToPb);
    return out;
}
function ruleToPb(rule) {
    refuseUnknown("policy rule", rule, RULE_KEYS);
    if (!rule.name || !rule.when || !rule.action)
        throw new TypeError(`a policy rule needs name, when and action: ${JSON.stringify(rule)}`);
    const action = enumValue("policy rule action", PolicyAction, "POLICY_ACTION_", rule.action);
    if (action === PolicyAction.ALLOW)
        throw new TypeError(`policy rule action is deny or review, not ${JSON.stringify(rule.action)}`);
    return {
        $typeName: "toolgate.v1.PolicyRule",
        name: rule.name,
        when: rule.when,
        action,
        message: rule.message ?? "",
        onError: enumValue("policy rule on_error", PolicyAction, "POLICY_ACTION_", rule.on_error ?? "deny"),
        modelFixable: Boolean(rule.model_fixable ?? false),
    };
}
function ruleFromPb(rule) {
    const name = (value) => (PolicyAction[value] ?? "DENY").toLowerCase();
    return {
        name: rule.name,
        when: rule.when,
        action: name(rule.action),
        message: rule.message,
        on_error: (rule.onError === PolicyAction.UNSPECIFIED ? "deny" : name(rule.onError)),
        model_fixable: rule.modelFixable,
    };
}
function backendFromPb(b) {
    switch (b?.kind.case) {
        case "grpc":
            return { grpc: { target: b.kind.value.target } };
        case "http":
            return { http: { url: b.kind.value.url, method: b.kind.value.method, headers: { ...b.kind.value.headers } } };
        case "mcp":
            return { mcp: { server: b.kind.value.server, tool: b.kind.value.tool } };
        case "worker":
            return { worker: {} };
        default:
            return undefined;
    }
}
/** The registered spec in the spec-file form, schemas parsed, with the registry's `version`. Enums left at the
 * gateway's default are left out, as in a spec file. */
export function specFromPb(spec) {
    if (spec === undefined)
        throw new Error("the gateway answered without the tool");
    const lim = spec.limits;
    const limits = {
        rate: lim?.rate ?? "",
        burst: lim?.burst ?? 0,
        max_concurrency: lim?.maxConcurrency ?? 0,
        timeout_ms: Number(lim?.timeoutMs ?? 0),
        retries: lim?.retries ?? 0,
        idempotent: lim?.idempotent ?? false,
    };
    if (lim?.key)
        limits.key = LimitKey[lim.key];
    if (lim?.scope)
        limits.scope = RateScope[lim.scope];
    if (lim?.whenRedisDown)
        limits.when_redis_down = RedisDown[lim.whenRedisDown];
    const out = {
        name: spec.name,
        description: spec.description,
        input_schema: spec.inputSchema ? JSON.parse(spec.inputSchema) : {},
        inject: spec.inject.map((i) => ({ param: i.param, from: i.from })),
        repair: {
            aliases: { ...spec.repair?.aliases },
            drop_unknown: spec.repair?.dropUnknown ?? false,
            ...(spec.repair?.splitParallel === undefined ? {} : { split_parallel: spec.repair.splitParallel }),
        },
        limits,
        review: { required: spec.review?.required ?? false, caller_may_confirm: spec.review?.callerMayConfirm ?? false },
        budget: {
            max_calls: spec.budget?.maxCalls ?? 0,
            max_consecutive_failures: spec.budget?.maxConsecutiveFailures ?? 0,
        },
        policy: spec.policy.map(ruleFromPb),
        tenant: spec.tenant,
        labels: { ...spec.labels },
        version: Number(spec.version),
    };
    if (spec.outputSchema)
        out.output_schema = JSON.parse(spec.outputSchema);
    const backend = backendFromPb(spec.backend);
    if (backend !== undefined)
        out.backend = backend;
    if (spec.repair?.enabled !== undefined)
        out.repair.enabled = spec.repair.enabled;
    return out;
}

/**
 * The gateway's answers and inputs as plain TypeScript values, JSON already parsed. Nothing here knows protobuf:
 * `convert.ts` is the one place that turns messages into these and back.
 * @module
 */
/** How a call ended. */
export type ToolStatus = "UNSPECIFIED" | "SUCCESS" | "ERROR" | "PENDING_REVIEW";
/** Why a call failed; see `ToolError.modelFixable` and `ToolError.retryable` for what to do about it. */
export type ErrorKind = "UNSPECIFIED" | "TOOL_NOT_FOUND" | "MALFORMED_ARGUMENTS" | "INVALID_ARGUMENTS" | "TOOL_ERROR" | "TIMEOUT" | "RATE_LIMITED" | "UNAVAILABLE" | "REJECTED" | "PERMISSION_DENIED" | "BUDGET_EXCEEDED" | "INTERNAL" | "POLICY_DENIED";
/** One schema violation. Paths are JSON pointers: `instancePath` into the arguments, `schemaPath` into the schema. */
export interface Violation {
    readonly instancePath: string;
    readonly schemaPath: string;
    readonly message: string;
}
/** One change the gateway made to a call. `before` and `after` are JSON text. */
export interface Repair {
    readonly rule: string;
    readonly path: string;
    readonly before: string;
    readonly after: string;
}
/** Why a call failed, typed. A plain object: it goes into a LangChain message's `additional_kwargs` as it is. */
export interface ToolError {
    readonly kind: ErrorKind;
    readonly message: string;
    /** The model should change its call. */
    readonly modelFixable: boolean;
    /** The same call may succeed later. */
    readonly retryable: boolean;
    readonly retryAfterMs: number;
    readonly violations: readonly Violation[];
    /** Tool names the model may have meant (TOOL_NOT_FOUND). */
    readonly suggestions: readonly string[];
    /** The arguments exactly as received, before any repair: the input that caused the error. */
    readonly originalArguments: string;
}
/** The one answer to a tool call, success or error, ready to hand back to the model. */
export interface ToolMessage {
    readonly toolCallId: string;
    /** The resolved registry name (or the name as called when it did not resolve). */
    readonly name: string;
    readonly status: ToolStatus;
    /** Text for the model; for an error, the model-facing explanation. */
    readonly content: string;
    /** The tool's structured result, parsed from JSON; undefined when it gave none. */
    readonly structured: unknown;
    /** Set exactly when the call failed (status ERROR). */
    readonly error: ToolError | undefined;
    readonly repairs: readonly Repair[];
    /** JSON text of the model-controlled arguments the tool received (injected values left out). */
    readonly effectiveArguments: string;
    /** `effectiveArguments` parsed; undefined when there are none (a call that never got that far). */
    readonly arguments: unknown;
    readonly attempts: number;
    readonly durationUs: number;
    /** status is SUCCESS. */
    readonly ok: boolean;
    /** status is PENDING_REVIEW. */
    readonly pendingReview: boolean;
    /**
     * A packed parallel call split into the calls the model meant (the repair `parallel_split`): one part per call,
     * in order. `content` gives every part's result, and the status is ERROR if any part failed. Empty otherwise.
     */
    readonly parts: readonly ToolPart[];
    /**
     * The result's blocks, in order, when it holds more than text (an image, audio, a resource); `content` is then
     * the text a model that reads only text gets. Empty for a result of text alone.
     */
    readonly blocks: readonly ResultBlock[];
}
/**
 * One block of a result of more than text, as MCP gives it. Binary data (`data`, `blob`) is base64.
 */
export type ResultBlock = {
    readonly type: "text";
    readonly text: string;
} | {
    readonly type: "image" | "audio";
    readonly data: string;
    readonly mimeType: string;
} | {
    readonly type: "resource_link";
    readonly uri: string;
    readonly name: string;
    readonly mimeType?: string;
    readonly description?: string;
} | {
    readonly type: "resource";
    readonly uri: string;
    readonly mimeType?: string;
    readonly text?: string;
    readonly blob?: string;
};
/** One of the calls a packed parallel call was split into, and how it went. */
export interface ToolPart {
    readonly status: ToolStatus;
    /** This call's own result or, for an error, its model-facing explanation. */
    readonly content: string;
    readonly structured: unknown;
    readonly error: ToolError | undefined;
    /** JSON text of the model-controlled arguments this call ran with. */
    readonly effectiveArguments: string;
    /** `effectiveArguments` parsed. */
    readonly arguments: unknown;
    /** Repairs of this call's own arguments, after the split. */
    readonly repairs: readonly Repair[];
    readonly attempts: number;
    readonly ok: boolean;
}
/** Who is calling. Tenancy, injection and policy read it; the model never writes it. */
export interface CallContext {
    tenant?: string;
    userId?: string;
    sessionId?: string;
    values?: Record<string, string>;
}
/** One call as the model wrote it: LangChain's `{name, args, id}`, or `arguments` as an object or raw JSON text. */
export interface ToolCallInput {
    name: string;
    id?: string;
    args?: unknown;
    arguments?: unknown;
}
/** One call a model wrote in its text, as the gateway read it (`Client.callsFromText`). */
export interface TextCall {
    /** The name as the model wrote it (`functions.get_weather`, say): the gateway resolves it when the call runs. */
    readonly name: string;
    /** The arguments as read, JSON text. They still go through repair and validation when the call runs. */
    readonly arguments: string;
    /** `arguments` parsed. */
    readonly args: unknown;
    /** With `run`: the id the call ran with, `<callIdPrefix>-<i>`; empty otherwise. */
    readonly id: string;
}
/** The calls a model wrote in its text instead of making them, and what it said besides them. */
export interface TextCalls {
    /** In the order written; empty when none was found. */
    readonly calls: readonly TextCall[];
    /** The format they were written in: `hermes`, `qwen3_coder_xml`, `llama3_json`, `llama3_python_tag`, `mistral`,
     * `harmony`, `pythonic` or `json`; empty when none was found. */
    readonly envelope: string;
    /** What was around them: `code_fence`, `string_list`, `print`, `arguments_dict`, `text_parts`. */
    readonly wrappers: readonly string[];
    /** The text with the calls taken out: what the model said besides them. */
    readonly rest: string;
    /** Why a text that showed a call gave none (a call quoted, in the model's reasoning, shown as an example,
     * offered, refused, supposed or remembered, a tool not offered, an ambiguous text); empty otherwise. */
    readonly refusal: string;
    /** The refusal's reason in one word, to log and count: `disabled`, `too_long`, `too_many_calls`, `over_budget`,
     * `not_offered`, `other_format`, `quoted`, `reasoning`, `example`, `negated`, `question`, `options`, `past`,
     * `hypothetical`, `other_speaker`, `not_an_action`, `mention`, `not_whole`, `ambiguous`; empty when `refusal` is. */
    readonly refusalReason: string;
    /** The format the text was read in: the one asked for, the model's, or `auto`. */
    readonly format: string;
    /** With `run`: each call's outcome, in call order, its repairs led by `calls_from_text`. Empty otherwise. */
    readonly messages: readonly ToolMessage[];
}
/** A call waiting for a person (or, from `decide`, the call just decided). */
export interface PendingReview {
    readonly callId: string;
    readonly tenant: string;
    readonly sessionId: string;
    readonly userId: string;
    /** The registry name of the tool. */
    readonly tool: string;
    /** What the model wrote (after repair), as JSON text, without injected values. */
    readonly arguments: string;
    /** `arguments` parsed. */
    readonly args: unknown;
    readonly repairs: readonly Repair[];
    /** Unix time in milliseconds. */
    readonly createdMs: number;
    /** Once decided: who decided (empty for a decision that named no reviewer) and when, in Unix milliseconds. */
    readonly decidedBy: string;
    readonly decidedMs: number;
    /** The policy rule that sent the call to review, and its message; empty when the tool requires review. */
    readonly rule: string;
    readonly ruleMessage: string;
}
/** One change in the review queue, from `Client.watchPending`. */
export interface ReviewEvent {
    /** PENDING: the call waits for a decision (every pending call is sent first); DECIDED: it no longer waits. */
    readonly kind: "PENDING" | "DECIDED" | "UNSPECIFIED";
    readonly review: PendingReview;
}
/** A decision on a pending call, in the gateway's words. */
export type ReviewAction = "approve" | "edit" | "reject";
/** What `Execute` does with a call to a tool that needs review: wait for the decision, or answer PENDING_REVIEW. */
export type ReviewMode = "wait" | "defer";
/** The forms `listToolDefinitions` answers in. */
export type DefinitionFormat = "openai" | "anthropic" | "mcp" | "json-schema";
/** A model-facing definition of one tool. */
export interface ToolDefinition {
    /** The name the model sees; provider-safe for provider formats. */
    readonly name: string;
    /** The registry name it resolves to. */
    readonly tool: string;
    /** The definition in the requested format, parsed. */
    readonly definition: Record<string, unknown>;
}
/**
 * A tool spec in the spec-file form (snake_case, as in `docs/tool-spec.md`), so a spec file's JSON registers as
 * it is. Schemas are objects or JSON text.
 */
export interface ToolSpec {
    name: string;
    description?: string;
    input_schema: Record<string, unknown> | string;
    output_schema?: Record<string, unknown> | string;
    backend?: Backend;
    inject?: {
        param: string;
        from: string;
    }[];
    repair?: {
        enabled?: boolean;
        aliases?: Record<string, string>;
        drop_unknown?: boolean;
        split_parallel?: boolean;
    };
    limits?: Limits;
    review?: {
        required?: boolean;
        caller_may_confirm?: boolean;
    };
    budget?: {
        max_calls?: number;
        max_consecutive_failures?: number;
    };
    tenant?: string;
    labels?: Record<string, string>;
    /** Rules on what a call says, in order: CEL conditions that deny the call or send it to review. */
    policy?: PolicyRule[];
    /** Owned by the registry: ignored on input. */
    version?: number;
}
/** A policy rule: when `when` (CEL, over `args`, `context`, `tool` and `now`) holds, the call is denied
 * (POLICY_DENIED, with `message` for the model) or sent to review. */
export interface PolicyRule {
    name: string;
    when: string;
    action: "deny" | "review";
    message?: string;
    /** When the condition cannot be evaluated on a call; `deny` by default. */
    on_error?: "deny" | "review" | "allow";
    model_fixable?: boolean;
}
/** Where a tool runs: exactly one key. */
export type Backend = {
    grpc: {
        target: string;
    };
} | {
    http: {
        url: string;
        method?: string;
        headers?: Record<string, string>;
    };
} | {
    mcp: {
        server: string;
        tool: string;
    };
} | {
    worker: Record<string, never>;
};
export interface Limits {
    rate?: string;
    burst?: number;
    key?: "TOOL" | "TENANT" | "USER" | "SESSION";
    scope?: "CLUSTER" | "GATEWAY";
    when_redis_down?: "FAIL_OPEN" | "FAIL_CLOSED";
    max_concurrency?: number;
    timeout_ms?: number;
    retries?: number;
    idempotent?: boolean;
}
/** A spec as the registry holds it: every section present, schemas parsed, with its `version`. */
export interface RegisteredTool extends ToolSpec {
    description: string;
    input_schema: Record<string, unknown>;
    tenant: string;
    labels: Record<string, string>;
    version: number;
}
/** `text` parsed as JSON; the text itself when it is not JSON; undefined when empty. */
export declare function parseJson(text: string): unknown;

/**
 * `Client`: the gateway's API (ToolGateway, ToolRegistry, ToolReview) over one HTTP/2 connection, with Connect-ES's
 * gRPC transport.
 *
 * A tool that fails never throws: its failure is a `ToolMessage` with an `error`. Only a request the gateway
 * refuses as a whole (bad request, wrong token, gateway down) throws a `GatewayError`.
 * @module
 */
import type { SecureClientSessionOptions } from "node:http2";
import type { CallContext, DefinitionFormat, PendingReview, RegisteredTool, ReviewAction, ReviewEvent, ReviewMode, TextCalls, ToolCallInput, ToolDefinition, ToolMessage, ToolSpec } from "./types.js";
export declare const DEFAULT_TARGET = "127.0.0.1:50051";
/** The gateway refused a request as a whole, or could not be reached. `code` is the gRPC status code's name. */
export declare class GatewayError extends Error {
    readonly method: string;
    /** The gRPC status code, as in the gRPC spec: `"UNAUTHENTICATED"`, `"FAILED_PRECONDITION"`, ... */
    readonly code: string;
    /** The gateway's own words. */
    readonly details: string;
    constructor(method: string, code: string, details: string);
    static of(method: string, err: unknown): GatewayError;
}
export interface ClientOptions {
    /** Sent as `authorization: Bearer ...` on every request (the gateway's data token). */
    token?: string;
    /** Used instead of `token` on the registry. */
    adminToken?: string;
    /** Used on review (listPending, decide, watchPending); else `adminToken`, else `token`. */
    reviewToken?: string;
    /** The default deadline of each request, in milliseconds. */
    timeoutMs?: number;
    /** TLS settings for an `https://` target (`ca`, `cert`, `key`, `servername`, ...). */
    tls?: SecureClientSessionOptions;
}
/** Per request: a deadline (milliseconds; over the client's default) and an AbortSignal. */
export interface CallOptions {
    timeoutMs?: number;
    signal?: AbortSignal;
}
export interface ExecuteOptions extends CallOptions {
    /** The call's id: sent again with the same id, a call answers the first outcome (the gateway's call-id record). */
    id?: string;
    context?: CallContext;
    /** `"defer"` answers PENDING_REVIEW at once for a tool that needs review. */
    reviewMode?: ReviewMode;
}
export interface BatchOptions extends CallOptions {
    context?: CallContext;
    reviewMode?: ReviewMode;
}
export interface CallsFromTextOptions extends CallOptions {
    context?: CallContext;
    /** The registered names of the tools the model was offered: calls of other tools are not read. By default every
     * tool the context's tenant sees. */
    tools?: readonly string[];
    /** Also run the calls found, as `executeBatch` does: `messages` holds their outcomes. Needs `callIdPrefix`. */
    run?: boolean;
    /** With `run`: call `i` runs with the id `<callIdPrefix>-<i>`, so the same text sent again runs nothing twice.
     * Use the assistant message's id. */
    callIdPrefix?: string;
    reviewMode?: ReviewMode;
    /** The model's output format: `hermes`, `qwen3_coder_xml`, `llama3_json`, `llama3_python_tag`, `mistral`,
     * `harmony`, `pythonic`, `json` or `auto`. A named format is the only one read. */
    format?: string;
    /** The chat model that wrote the text (e.g. `Qwen/Qwen3-8B`): without `format`, the gateway reads the format of
     * the model's family when it knows it, else every format. */
    model?: string;
}
export interface ScopeOptions extends CallOptions {
    /** Only this tenant's; every tenant's when empty and `allTenants` is set. */
    tenant?: string;
    allTenants?: boolean;
}
export interface DecideOptions extends CallOptions {
    /** For `edit`: the new arguments (an object or JSON text). */
    arguments?: unknown;
    /** For `reject`: what the model is told. */
    feedback?: string;
    tenant?: string;
    /** Who decides, kept in the review record (one line, at most 64 characters). */
    reviewer?: string;
}
/**
 * The gateway's API. Close it with `close()` (or `await using`) to end its HTTP/2 connection.
 *
 * ```ts
 * const client = new Client("127.0.0.1:50051", { token });
 * const message = await client.execute("get_weather", { city: "Oslo" }, { context: { userId: "u1" } });
 * ```
 */
export declare class Client {
    readonly timeoutMs: number | undefined;
    private readonly sessions;
    private readonly gateway;
    private readonly registry;
    private readonly review;
    private readonly dataHeaders;
    private readonly adminHeaders;
    private readonly reviewHeaders;
    constructor(target?: string, options?: ClientOptions);
    /** Ends the connection; requests still running fail. */
    close(): void;
    [Symbol.dispose](): void;
    private options;
    private call;
    /** Runs one call. `args` as an object, or as the raw JSON text the model wrote (repaired if broken). */
    execute(name: string, args?: unknown, options?: ExecuteOptions): Promise<ToolMessage>;
    /** Runs the calls of one AI message concurrently; answers in call order. Each call is `{name, id, args}` (as
     * in LangChain's tool calls) or `{name, id, arguments}` (an object or JSON text). */
    executeBatch(calls: readonly ToolCallInput[], options?: BatchOptions): Promise<ToolMessage[]>;
    /** The tool calls a model wrote in its text instead of making them (Hermes `<tool_call>`, pythonic `[f(a=1)]`,
     * Llama, Mistral, gpt-oss harmony, Qwen3-Coder XML, ...), as the gateway reads them: a call only mentioned, shown
     * as an example, under a condition or of a tool not offered gives none, and `refusal` says why. `rest` is the
     * text without the calls. With `run` (and `callIdPrefix`), the gateway also runs them. */
    callsFromText(text: string, options?: CallsFromTextOptions): Promise<TextCalls>;
    /** The model-facing definitions of the tools the context's tenant may call, in `format` (openai, anthropic,
     * mcp, json-schema): injected parameters are left out. */
    listToolDefinitions(format?: DefinitionFormat, options?: CallOptions & {
        context?: CallContext;
    }): Promise<ToolDefinition[]>;
    /** Registers (or replaces) a tool from a spec in the spec-file form; answers the spec as registered, with its
     * `version` (1 when it was created). */
    registerTool(spec: ToolSpec, options?: CallOptions): Promise<RegisteredTool>;
    getTool(name: string, options?: CallOptions & {
        tenant?: string;
    }): Promise<RegisteredTool>;
    listTools(options?: ScopeOptions): Promise<RegisteredTool[]>;
    deleteTool(name: string, options?: CallOptions & {
        tenant?: string;
    }): Promise<void>;
    /** Calls waiting for a decision, oldest first. */
    listPending(options?: ScopeOptions): Promise<PendingReview[]>;
    /** Approves, edits (`arguments`: the new arguments) or rejects (`feedback`: what the model is told) one pending
     * call, recorded under `reviewer`'s name. A call is decided once: deciding it again throws
     * GatewayError(FAILED_PRECONDITION). */
    decide(callId: string, action: ReviewAction, options?: DecideOptions): Promise<PendingReview>;
    /** Every pending call now, then each change as it happens, until `signal` aborts (or the deadline passes: by
     * default a watch has none, whatever the client's `timeoutMs`). */
    watchPending(options?: ScopeOptions): AsyncGenerator<ReviewEvent, void, undefined>;
}

/**
 * `Client`: the gateway's API (ToolGateway, ToolRegistry, ToolReview) over one HTTP/2 connection, with Connect-ES's
 * gRPC transport.
 *
 * A tool that fails never throws: its failure is a `ToolMessage` with an `error`. Only a request the gateway
 * refuses as a whole (bad request, wrong token, gateway down) throws a `GatewayError`.
 * @module
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { connect } from "node:net";
import { batchRequest, contextToPb, decideRequest, definitionsFromPb, eventFromPb, executeRequest, formatToPb, messageFromPb, pendingFromPb, specFromPb, specToPb, textCallsFromPb, textCallsRequest, } from "./convert.js";
import { ToolGateway } from "./gen/toolgate/v1/gateway_pb.js";
import { ToolRegistry } from "./gen/toolgate/v1/registry_pb.js";
import { ToolReview } from "./gen/toolgate/v1/review_pb.js";
export const DEFAULT_TARGET = "127.0.0.1:50051";
/** The gateway refused a request as a whole, or could not be reached. `code` is the gRPC status code's name. */
export class GatewayError extends Error {
    method;
    /** The gRPC status code, as in the gRPC spec: `"UNAUTHENTICATED"`, `"FAILED_PRECONDITION"`, ... */
    code;
    /** The gateway's own words. */
    details;
    constructor(method, code, details) {
        super(`${method}: ${code}: ${details}`);
        this.name = "GatewayError";
        this.method = method;
        this.code = code;
        this.details = details;
    }
    static of(method, err) {
        if (err instanceof GatewayError)
            return err;
        const connect = ConnectError.from(err);
        // Connect spells the codes in camel case, and one of them in American English: gRPC's names are these.
        const camel = (Code[connect.code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
        const name = camel === "CANCELED" ? "CANCELLED" : camel;
        return new GatewayError(method, name, connect.rawMessage);
    }
}
/** `host:port` (plaintext), an `http://` or `https://` URL, or a Unix socket (`unix:/path/to.sock`): the base URL,
 * and for a socket the HTTP/2 session option that opens it. */
function endpoint(target) {
    const path = /^unix:(?:\/\/)?(\/.+)$/.exec(target)?.[1];
    if (path !== undefined)
        return { url: "http://localhost", socket: { createConnection: () => connect(path) } };
    const trimmed = target.replace(/\/+$/, "");
    return { url: /^https?:\/\//.test(trimmed) ? trimmed : `http://${trimmed}` };
}
function bearer(token) {
    return token ? { authorization: `Bearer ${token}` } : {};
}
/**
 * The gateway's API. Close it with `close()` (or `await using`) to end its HTTP/2 connection.
 *
 * ```ts
 * const client = new Client("127.0.0.1:50051", { token });
 * const message = await client.execute("get_weather", { city: "Oslo" }, { context: { userId: "u1" } });
 * ```
 */
export class Client {
    timeoutMs;
    sessions;
    gateway;
    registry;
    review;
    dataHeaders;
    adminHeaders;
    reviewHeaders;
    constructor(target = DEFAULT_TARGET, options = {}) {
        const { url, socket } = endpoint(target);
        this.timeoutMs = options.timeoutMs;
        this.sessions = new Http2SessionManager(url, {}, socket === undefined ? options.tls : { ...options.tls, ...socket });
        const transport = createGrpcTransport({ baseUrl: url, sessionManager: this.sessions });
        this.gateway = createClient(ToolGateway, transport);
        this.registry = createClient(ToolRegistry, transport);
        this.review = createClient(ToolReview, transport);
        // The data plane, the admin plane and ToolReview may each have their own token: the gateway's review token
        // opens ToolReview alone, and its admin token opens it too.
        this.dataHeaders = bearer(options.token);
        this.adminHeaders = bearer(options.adminToken ?? options.token);
        this.reviewHeaders = bearer(options.reviewToken ?? options.adminToken ?? options.token);
    }
    /** Ends the connection; requests still running fail. */
    close() {
        this.sessions.abort();
    }
    [Symbol.dispose]() {
        this.close();
    }
    options(headers, options) {
        const timeoutMs = options?.timeoutMs ?? this.timeoutMs;
        return { headers, ...(timeoutMs === undefined ? {} : { timeoutMs }), signal: options?.signal };
    }
    async call(method, request) {
        try {
            return await request();
        }
        catch (err) {
            throw GatewayError.of(method, err);
        }
    }
    // ---- ToolGateway ----
    /** Runs one call. `args` as an object, or as the raw JSON text the model wrote (repaired if broken). */
    async execute(name, args, options = {}) {
        const request = executeRequest({ name, id: options.id, arguments: args }, options.context, options.reviewMode);
        const response = await this.call("Execute", () => this.gateway.execute(request, this.options(this.dataHeaders, options)));
        return messageFromPb(response.message);
    }
    /** Runs the calls of one AI message concurrently; answers in call order. Each call is `{name, id, args}` (as
     * in LangChain's tool calls) or `{name, id, arguments}` (an object or JSON text). */
    async executeBatch(calls, options = {}) {
        const request = batchRequest(calls, options.context, options.reviewMode);
        const response = await this.call("ExecuteBatch", () => this.gateway.executeBatch(request, this.options(this.dataHeaders, options)));
        return response.messages.map(messageFromPb);
    }
    /** The tool calls a model wrote in its text instead of making them (Hermes `<tool_call>`, pythonic `[f(a=1)]`,
     * Llama, Mistral, gpt-oss harmony, Qwen3-Coder XML, ...), as the gateway reads them: a call only mentioned, shown
     * as an example, under a condition or of a tool not offered gives none, and `refusal` says why. `rest` is the
     * text without the calls. With `run` (and `callIdPrefix`), the gateway also runs them. */
    async callsFromText(text, options = {}) {
        const request = textCallsRequest(text, options);
        const response = await this.call("CallsFromText", () => this.gateway.callsFromText(request, this.options(this.dataHeaders, options)));
        return textCallsFromPb(response);
    }
    /** The model-facing definitions of the tools the context's tenant may call, in `format` (openai, anthropic,
     * mcp, json-schema): injected parameters are left out. */
    async listToolDefinitions(format = "openai", options = {}) {
        const request = { context: contextToPb(options.context), format: formatToPb(format) };
        const response = await this.call("ListToolDefinitions", () => this.gateway.listToolDefinitions(request, this.options(this.dataHeaders, options)));
        return definitionsFromPb(response);
    }
    // ---- ToolRegistry ----
    /** Registers (or replaces) a tool from a spec in the spec-file form; answers the spec as registered, with its
     * `version` (1 when it was created). */
    async registerTool(spec, options = {}) {
        const request = { spec: specToPb(spec) };
        const response = await this.call("RegisterTool", () => this.registry.registerTool(request, this.options(this.adminHeaders, options)));
        return specFromPb(response.tool);
    }
    async getTool(name, options = {}) {
        const request = { name, tenant: options.tenant ?? "" };
        const response = await this.call("GetTool", () => this.registry.getTool(request, this.options(this.adminHeaders, options)));
        return specFromPb(response.tool);
    }
    async listTools(options = {}) {
        const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
        const response = await this.call("ListTools", () => this.registry.listTools(request, this.options(this.adminHeaders, options)));
        return response.tools.map(specFromPb);
    }
    async deleteTool(name, options = {}) {
        const request = { name, tenant: options.tenant ?? "" };
        await this.call("DeleteTool", () => this.registry.deleteTool(request, this.options(this.adminHeaders, options)));
    }
    // ---- ToolReview ----
    /** Calls waiting for a decision, oldest first. */
    async listPending(options = {}) {
        const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
        const response = await this.call("ListPending", () => this.review.listPending(request, this.options(this.reviewHeaders, options)));
        return response.pending.map(pendingFromPb);
    }
    /** Approves, edits (`arguments`: the new arguments) or rejects (`feedback`: what the model is told) one pending
     * call, recorded under `reviewer`'s name. A call is decided once: deciding it again throws
     * GatewayError(FAILED_PRECONDITION). */
    async decide(callId, action, options = {}) {
        const request = decideRequest(callId, action, options);
        const response = await this.call("Decide", () => this.review.decide(request, this.options(this.reviewHeaders, options)));
        return pendingFromPb(response.decided);
    }
    /** Every pending call now, then each change as it happens, until `signal` aborts (or the deadline passes: by
     * default a watch has none, whatever the client's `timeoutMs`). */
    async *watchPending(options = {}) {
        const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
        const callOptions = { headers: this.reviewHeaders, signal: options.signal, timeoutMs: options.timeoutMs };
        try {
            for await (const event of this.review.watchPending(request, callOptions))
                yield eventFromPb(event);
        }
        catch (err) {
            if (options.signal?.aborted)
                return;
            throw GatewayError.of("WatchPending", err);
        }
    }
}

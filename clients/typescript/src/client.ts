/**
 * `Client`: the gateway's API (ToolGateway, ToolRegistry, ToolReview) over one HTTP/2 connection, with Connect-ES's
 * gRPC transport.
 *
 * A tool that fails never throws: its failure is a `ToolMessage` with an `error`. Only a request the gateway
 * refuses as a whole (bad request, wrong token, gateway down) throws a `GatewayError`.
 * @module
 */

import { Code, ConnectError, createClient, type Client as RpcClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import type { SecureClientSessionOptions } from "node:http2";
import { connect } from "node:net";
import {
  batchRequest,
  contextToPb,
  decideRequest,
  definitionsFromPb,
  eventFromPb,
  executeRequest,
  formatToPb,
  messageFromPb,
  pendingFromPb,
  specFromPb,
  specToPb,
  textCallsFromPb,
  textCallsRequest,
} from "./convert.js";
import { ToolGateway } from "./gen/toolgate/v1/gateway_pb.js";
import { ToolRegistry } from "./gen/toolgate/v1/registry_pb.js";
import { ToolReview } from "./gen/toolgate/v1/review_pb.js";
import type {
  CallContext,
  DefinitionFormat,
  PendingReview,
  RegisteredTool,
  ReviewAction,
  ReviewEvent,
  ReviewMode,
  TextCalls,
  ToolCallInput,
  ToolDefinition,
  ToolMessage,
  ToolSpec,
} from "./types.js";

export const DEFAULT_TARGET = "127.0.0.1:50051";

/** The gateway refused a request as a whole, or could not be reached. `code` is the gRPC status code's name. */
export class GatewayError extends Error {
  readonly method: string;
  /** The gRPC status code, as in the gRPC spec: `"UNAUTHENTICATED"`, `"FAILED_PRECONDITION"`, ... */
  readonly code: string;
  /** The gateway's own words. */
  readonly details: string;

  constructor(method: string, code: string, details: string) {
    super(`${method}: ${code}: ${details}`);
    this.name = "GatewayError";
    this.method = method;
    this.code = code;
    this.details = details;
  }

  static of(method: string, err: unknown): GatewayError {
    if (err instanceof GatewayError) return err;
    const connect = ConnectError.from(err);
    // Connect spells the codes in camel case, and one of them in American English: gRPC's names are these.
    const camel = (Code[connect.code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
    const name = camel === "CANCELED" ? "CANCELLED" : camel;
    return new GatewayError(method, name, connect.rawMessage);
  }
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

/** `host:port` (plaintext), an `http://` or `https://` URL, or a Unix socket (`unix:/path/to.sock`): the base URL,
 * and for a socket the HTTP/2 session option that opens it. */
function endpoint(target: string): { url: string; socket?: SecureClientSessionOptions } {
  const path = /^unix:(?:\/\/)?(\/.+)$/.exec(target)?.[1];
  if (path !== undefined) return { url: "http://localhost", socket: { createConnection: () => connect(path) } };
  const trimmed = target.replace(/\/+$/, "");
  return { url: /^https?:\/\//.test(trimmed) ? trimmed : `http://${trimmed}` };
}

function bearer(token: string | undefined): Record<string, string> {
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
  readonly timeoutMs: number | undefined;
  private readonly sessions: Http2SessionManager;
  private readonly gateway: RpcClient<typeof ToolGateway>;
  private readonly registry: RpcClient<typeof ToolRegistry>;
  private readonly review: RpcClient<typeof ToolReview>;
  private readonly dataHeaders: Record<string, string>;
  private readonly adminHeaders: Record<string, string>;
  private readonly reviewHeaders: Record<string, string>;

  constructor(target: string = DEFAULT_TARGET, options: ClientOptions = {}) {
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
  close(): void {
    this.sessions.abort();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  private options(headers: Record<string, string>, options: CallOptions | undefined) {
    const timeoutMs = options?.timeoutMs ?? this.timeoutMs;
    return { headers, ...(timeoutMs === undefined ? {} : { timeoutMs }), signal: options?.signal };
  }

  private async call<T>(method: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw GatewayError.of(method, err);
    }
  }

  // ---- ToolGateway ----

  /** Runs one call. `args` as an object, or as the raw JSON text the model wrote (repaired if broken). */
  async execute(name: string, args?: unknown, options: ExecuteOptions = {}): Promise<ToolMessage> {
    const request = executeRequest({ name, id: options.id, arguments: args }, options.context, options.reviewMode);
    const response = await this.call("Execute", () => this.gateway.execute(request, this.options(this.dataHeaders, options)));
    return messageFromPb(response.message);
  }

  /** Runs the calls of one AI message concurrently; answers in call order. Each call is `{name, id, args}` (as
   * in LangChain's tool calls) or `{name, id, arguments}` (an object or JSON text). */
  async executeBatch(calls: readonly ToolCallInput[], options: BatchOptions = {}): Promise<ToolMessage[]> {
    const request = batchRequest(calls, options.context, options.reviewMode);
    const response = await this.call("ExecuteBatch", () =>
      this.gateway.executeBatch(request, this.options(this.dataHeaders, options)),
    );
    return response.messages.map(messageFromPb);
  }

  /** The tool calls a model wrote in its text instead of making them (Hermes `<tool_call>`, pythonic `[f(a=1)]`,
   * Llama, Mistral, gpt-oss harmony, Qwen3-Coder XML, ...), as the gateway reads them: a call only mentioned, shown
   * as an example, under a condition or of a tool not offered gives none, and `refusal` says why. `rest` is the
   * text without the calls. With `run` (and `callIdPrefix`), the gateway also runs them. */
  async callsFromText(text: string, options: CallsFromTextOptions = {}): Promise<TextCalls> {
    const request = textCallsRequest(text, options);
    const response = await this.call("CallsFromText", () =>
      this.gateway.callsFromText(request, this.options(this.dataHeaders, options)),
    );
    return textCallsFromPb(response);
  }

  /** The model-facing definitions of the tools the context's tenant may call, in `format` (openai, anthropic,
   * mcp, json-schema): injected parameters are left out. */
  async listToolDefinitions(
    format: DefinitionFormat = "openai",
    options: CallOptions & { context?: CallContext } = {},
  ): Promise<ToolDefinition[]> {
    const request = { context: contextToPb(options.context), format: formatToPb(format) };
    const response = await this.call("ListToolDefinitions", () =>
      this.gateway.listToolDefinitions(request, this.options(this.dataHeaders, options)),
    );
    return definitionsFromPb(response);
  }

  // ---- ToolRegistry ----

  /** Registers (or replaces) a tool from a spec in the spec-file form; answers the spec as registered, with its
   * `version` (1 when it was created). */
  async registerTool(spec: ToolSpec, options: CallOptions = {}): Promise<RegisteredTool> {
    const request = { spec: specToPb(spec) };
    const response = await this.call("RegisterTool", () =>
      this.registry.registerTool(request, this.options(this.adminHeaders, options)),
    );
    return specFromPb(response.tool);
  }

  async getTool(name: string, options: CallOptions & { tenant?: string } = {}): Promise<RegisteredTool> {
    const request = { name, tenant: options.tenant ?? "" };
    const response = await this.call("GetTool", () => this.registry.getTool(request, this.options(this.adminHeaders, options)));
    return specFromPb(response.tool);
  }

  async listTools(options: ScopeOptions = {}): Promise<RegisteredTool[]> {
    const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
    const response = await this.call("ListTools", () =>
      this.registry.listTools(request, this.options(this.adminHeaders, options)),
    );
    return response.tools.map(specFromPb);
  }

  async deleteTool(name: string, options: CallOptions & { tenant?: string } = {}): Promise<void> {
    const request = { name, tenant: options.tenant ?? "" };
    await this.call("DeleteTool", () => this.registry.deleteTool(request, this.options(this.adminHeaders, options)));
  }

  // ---- ToolReview ----

  /** Calls waiting for a decision, oldest first. */
  async listPending(options: ScopeOptions = {}): Promise<PendingReview[]> {
    const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
    const response = await this.call("ListPending", () =>
      this.review.listPending(request, this.options(this.reviewHeaders, options)),
    );
    return response.pending.map(pendingFromPb);
  }

  /** Approves, edits (`arguments`: the new arguments) or rejects (`feedback`: what the model is told) one pending
   * call, recorded under `reviewer`'s name. A call is decided once: deciding it again throws
   * GatewayError(FAILED_PRECONDITION). */
  async decide(callId: string, action: ReviewAction, options: DecideOptions = {}): Promise<PendingReview> {
    const request = decideRequest(callId, action, options);
    const response = await this.call("Decide", () => this.review.decide(request, this.options(this.reviewHeaders, options)));
    return pendingFromPb(response.decided);
  }

  /** Every pending call now, then each change as it happens, until `signal` aborts (or the deadline passes: by
   * default a watch has none, whatever the client's `timeoutMs`). */
  async *watchPending(options: ScopeOptions = {}): AsyncGenerator<ReviewEvent, void, undefined> {
    const request = { tenant: options.tenant ?? "", allTenants: options.allTenants ?? false };
    const callOptions = { headers: this.reviewHeaders, signal: options.signal, timeoutMs: options.timeoutMs };
    try {
      for await (const event of this.review.watchPending(request, callOptions)) yield eventFromPb(event);
    } catch (err) {
      if (options.signal?.aborted) return;
      throw GatewayError.of("WatchPending", err);
    }
  }
}

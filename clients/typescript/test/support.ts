/**
 * Test support: a real `toolgate serve` process with its planes closed by tokens, a real HTTP tool server it calls,
 * and the examples' scripted chat model (built on @langchain/core's testing helpers).
 *
 * The gateway binary is `$TOOLGATE_BIN`, or `<repo>/target/debug/toolgate` (which `cargo build` makes).
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { accessSync, constants, mkdtempSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { after, before } from "node:test";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Client, type ClientOptions } from "toolgate";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const ADMIN_TOKEN = "admin-secret";
export const DATA_TOKEN = "data-secret";
export const REVIEW_TOKEN = "review-secret";

const CONFIG = `
[limits]
batch_concurrency = 16
default_timeout_ms = 10000

[review]
keep_decided_s = 3600
`;

/** A tool name no other test uses: every test registers its own tools on the shared gateway. */
export function unique(name: string): string {
  return `${name}_${randomUUID().slice(0, 8)}`;
}

export function gatewayBinary(): string {
  const configured = process.env.TOOLGATE_BIN;
  const path = configured ? resolve(configured) : join(REPO, "target", "debug", "toolgate");
  try {
    accessSync(path, constants.X_OK);
  } catch {
    const source = configured ? "TOOLGATE_BIN" : "the default <repo>/target/debug/toolgate";
    throw new Error(
      `the toolgate gateway binary is missing: ${path} (${source}) is not an executable file. Build it with ` +
        "`cargo build` in the repository root, or point TOOLGATE_BIN at a toolgate binary.",
    );
  }
  return path;
}

/** The address in `toolgate serving addr=...`, the line a gateway logs once it has bound: a TCP gateway binds
 * 127.0.0.1:0, since a port picked here and released could go to another socket before the gateway binds it. */
async function boundAddress(child: ChildProcess, logPath: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const log = readFileSync(logPath, "utf8");
    const line = log.split("\n").find((l) => l.includes("toolgate serving") && l.includes("addr="));
    if (line) return line.split("addr=")[1].split(/\s/)[0];
    if (child.exitCode !== null) throw new Error(`toolgate serve exited with ${child.exitCode}:\n${log}`);
    if (Date.now() > deadline) throw new Error(`toolgate serve not listening after 30 s:\n${log}`);
    await new Promise((ok) => setTimeout(ok, 50));
  }
}

/** A running `toolgate serve`: its address, its log, and clients holding its tokens. */
export class Gateway {
  private constructor(
    readonly target: string,
    private readonly process: ChildProcess,
    private readonly logPath: string,
  ) {}

  /** A gateway with the test config, and `extraConfig` (TOML) after it; on a Unix socket in its directory if
   * `unixSocket`. */
  static async start(extraConfig = "", unixSocket = false): Promise<Gateway> {
    const binary = gatewayBinary();
    const dir = mkdtempSync(join(tmpdir(), "toolgate-ts-"));
    const listen = unixSocket ? `unix:${join(dir, "gw.sock")}` : "127.0.0.1:0";
    writeFileSync(join(dir, "toolgate.toml"), CONFIG + extraConfig);
    const logPath = join(dir, "gateway.log");
    const log = openSync(logPath, "w");
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      TOOLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOOLGATE_DATA_TOKEN: DATA_TOKEN,
      TOOLGATE_REVIEW_TOKEN: REVIEW_TOKEN,
      RUST_LOG: process.env.RUST_LOG ?? "info",
    };
    for (const inherited of ["TOOLGATE_LISTEN", "TOOLGATE_DATA_DIR", "TOOLGATE_CONFIG", "OTEL_EXPORTER_OTLP_ENDPOINT"]) {
      delete env[inherited];
    }
    const args = ["serve", "--listen", listen, "--data-dir", join(dir, "data"), "--config", join(dir, "toolgate.toml")];
    const child = spawn(binary, args, { env, stdio: ["ignore", log, log] });
    const target = unixSocket ? listen : await boundAddress(child, logPath);
    const gateway = new Gateway(target, child, logPath);
    await gateway.waitReady();
    return gateway;
  }

  /** Until the data plane answers (with its token). */
  private async waitReady(): Promise<void> {
    const client = this.client();
    const deadline = Date.now() + 30_000;
    try {
      for (;;) {
        if (this.process.exitCode !== null) {
          throw new Error(`toolgate serve exited with ${this.process.exitCode}:\n${this.logTail()}`);
        }
        try {
          await client.listToolDefinitions("openai", { timeoutMs: 1000 });
          return;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`toolgate serve not ready after 30 s (${err}):\n${this.logTail()}`);
        }
        await new Promise((ok) => setTimeout(ok, 50));
      }
    } finally {
      client.close();
    }
  }

  /** A client with the data and admin tokens (and so review, which the admin token opens too). */
  client(options: ClientOptions = {}): Client {
    return new Client(this.target, { token: DATA_TOKEN, adminToken: ADMIN_TOKEN, ...options });
  }

  /** What an agent holds: the data token, and the review token to resume reviews. */
  agentClient(): Client {
    return new Client(this.target, { token: DATA_TOKEN, reviewToken: REVIEW_TOKEN });
  }

  logTail(lines = 40): string {
    return readFileSync(this.logPath, "utf8").split("\n").slice(-lines).join("\n");
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return;
    const exited = new Promise((ok) => this.process.once("exit", ok));
    this.process.kill("SIGTERM");
    await exited;
  }
}

/** One request a tool server got: the arguments as the tool saw them, and the headers. */
export interface Received {
  args: any;
  headers: IncomingHttpHeaders;
}

/** Answers the arguments with [HTTP status, body], or [HTTP status, bytes, content type]. */
export type Handler = (
  args: any,
) => [number, unknown] | [number, Buffer, string] | Promise<[number, unknown] | [number, Buffer, string]>;

/** An HTTP tool server on 127.0.0.1: each tool is a path with a handler; every request is recorded. */
export class HttpTools {
  private readonly handlers = new Map<string, Handler>();
  private readonly requests = new Map<string, Received[]>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<HttpTools> {
    const tools: HttpTools = new HttpTools(createServer((req, res) => void tools.serve(req, res)));
    await new Promise<void>((ok) => tools.server.listen(0, "127.0.0.1", ok));
    return tools;
  }

  private async serve(req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = (req.url ?? "/").replace(/^\//, "");
    const body = Buffer.concat(chunks).toString("utf8");
    const args = body ? JSON.parse(body) : undefined;
    if (!this.requests.has(path)) this.requests.set(path, []);
    this.requests.get(path)!.push({ args, headers: req.headers });
    const handler = this.handlers.get(path);
    const [status, answer, media] = handler ? await handler(args) : [404, { error: "no such tool" }];
    if (Buffer.isBuffer(answer)) {
      res.writeHead(status, { "content-type": media ?? "application/octet-stream" });
      res.end(answer);
      return;
    }
    const text = typeof answer === "string" ? answer : JSON.stringify(answer);
    res.writeHead(status, { "content-type": typeof answer === "string" ? "text/plain" : "application/json" });
    res.end(text);
  }

  /** Serves `path`; answers the backend section of a tool spec that calls it. */
  route(path: string, handler: Handler): { http: { url: string } } {
    this.handlers.set(path, handler);
    const { port } = this.server.address() as { port: number };
    return { http: { url: `http://127.0.0.1:${port}/${path}` } };
  }

  received(path: string): Received[] {
    return [...(this.requests.get(path) ?? [])];
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((ok) => this.server.close(ok));
  }
}

// The scripted chat model is the examples' own: tests drive graphs the way the examples do.
export { aiCalls, ScriptedChatModel } from "../examples/support.js";

/** What a test file runs against: one gateway (its config plus `extraConfig`), one tool server, and the clients. */
export interface Harness {
  gateway: Gateway;
  tools: HttpTools;
  /** Data and admin tokens: registers tools. */
  admin: Client;
  /** What an agent holds: data and review tokens. */
  agent: Client;
}

/** Starts the harness before the file's tests and stops it after them; its fields are set once they run. */
export function useHarness(extraConfig = ""): Harness {
  const h = {} as Harness;
  before(async () => {
    h.gateway = await Gateway.start(extraConfig);
    h.tools = await HttpTools.start();
    h.admin = h.gateway.client();
    h.agent = h.gateway.agentClient();
  });
  after(async () => {
    h.admin?.close();
    h.agent?.close();
    await h.tools?.stop();
    await h.gateway?.stop();
  });
  return h;
}

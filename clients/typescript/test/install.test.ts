// The package as a new user gets it: installed from the repository into an empty project (`npm install
// --install-links`, with its pinned LangGraph.js peers), its types checked from there, and the README's ten-line
// agent run against a real gateway, with a scripted model standing in for ChatOpenAI.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DATA_TOKEN, Gateway, HttpTools } from "./support.js";

const execFileAsync = promisify(execFile);

/** Runs a command; a failure says what it printed. */
async function run(file: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  try {
    return await execFileAsync(file, args, options);
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(" ")} failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
}
const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const LOCK = JSON.parse(readFileSync(join(PACKAGE, "package-lock.json"), "utf8"));
let gateway: Gateway;
let tools: HttpTools;
let project: string;

/** The version the lockfile pins, so the install reads npm's cache that `npm ci` filled. */
function pinned(name: string): string {
  return `${name}@${LOCK.packages[`node_modules/${name}`].version}`;
}

/** The README's agent: its one JavaScript block. */
function readmeAgent(): string {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const block = /## A ten-line agent\s+```js\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "the README has no ten-line agent");
  return block[1]!;
}

// Stands in for ChatOpenAI: calls the first tool it is bound to with a string for an integer, then answers.
const SCRIPTED = `
import { AIMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
export class ChatOpenAI extends FakeListChatModel {
  constructor() { super({ responses: [] }); this.turn = 0; this.bound = []; }
  bindTools(tools) { this.bound = tools; return this; }
  async _generate() {
    const message = this.turn++ === 0
      ? new AIMessage({ id: "ai-1", content: "", tool_calls: [{ id: "c-1", name: this.bound[0].name, args: { city: "Oslo", days: "2" }, type: "tool_call" }] })
      : new AIMessage({ id: "ai-2", content: "Clear in Oslo." });
    return { generations: [{ text: String(message.content), message }] };
  }
}
`;

const TYPES = `
import { Client, type TextCalls, type ToolMessage, type ToolError } from "toolgate";
import { GatewayToolNode, toolgateMiddleware, bindGatewayTools, textCallsHook, textCallsMiddleware } from "toolgate/langgraph";
const client: Client = new Client("127.0.0.1:1");
const answer: Promise<ToolMessage> = client.execute("x", { a: 1 }, { id: "1", context: { userId: "u" } });
const found: Promise<TextCalls> = client.callsFromText("<tool_call>{}</tool_call>", { tools: ["x"] });
const kind = (e: ToolError): string => e.kind;
void [answer, found, kind, GatewayToolNode, toolgateMiddleware, bindGatewayTools, textCallsHook, textCallsMiddleware];
`;

before(async () => {
  gateway = await Gateway.start();
  tools = await HttpTools.start();
  project = mkdtempSync(join(tmpdir(), "toolgate-user-"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "my-agent", private: true, type: "module" }));
});

after(async () => {
  await tools?.stop();
  await gateway?.stop();
});

describe("install", () => {
  it("installs into an empty project, type-checks there, and runs the README's agent", async () => {
    const peers = ["@langchain/core", "@langchain/langgraph"].map(pinned);
    const npm = ["install", "--install-links", "--prefer-offline", "--no-audit", "--no-fund", PACKAGE, ...peers];
    await run("npm", npm, { cwd: project });
    const installed = JSON.parse(readFileSync(join(project, "node_modules", "toolgate", "package.json"), "utf8"));
    assert.equal(installed.name, "toolgate");

    writeFileSync(join(project, "check.ts"), TYPES);
    const tsc = join(PACKAGE, "node_modules", "typescript", "bin", "tsc");
    const flags = ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022"];
    await run(process.execPath, [tsc, ...flags, "--skipLibCheck", "check.ts"], { cwd: project });

    const admin = gateway.client();
    await admin.registerTool({
      name: "get_weather",
      input_schema: { type: "object", properties: { city: { type: "string" }, days: { type: "integer" } }, required: ["city"] },
      backend: tools.route("weather", (args) => [200, { city: args.city, days: args.days, sky: "clear" }]),
    });
    admin.close();
    writeFileSync(join(project, "scripted.mjs"), SCRIPTED);
    const agent = readmeAgent()
      .replace('import { ChatOpenAI } from "@langchain/openai";', 'import { ChatOpenAI } from "./scripted.mjs";')
      .replace('"127.0.0.1:50051"', JSON.stringify(gateway.target));
    assert.ok(agent.includes("./scripted.mjs"), "the README's agent no longer imports ChatOpenAI as the test expects");
    writeFileSync(join(project, "agent.mjs"), agent);
    const env = { ...process.env, TOOLGATE_TOKEN: DATA_TOKEN };
    const { stdout } = await run(process.execPath, ["agent.mjs"], { cwd: project, env });
    assert.equal(stdout.trim(), "Clear in Oslo.");
    assert.deepEqual(tools.received("weather").map((r) => r.args), [{ city: "Oslo", days: 2 }]);
  });
});

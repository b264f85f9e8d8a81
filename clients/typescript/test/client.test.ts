// The client against a real `toolgate serve` and a real HTTP tool server: calls, errors, the registry, review,
// tokens and deadlines.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Client, GatewayError, type ToolSpec } from "toolgate";
import { DATA_TOKEN, Gateway, REVIEW_TOKEN, unique, useHarness } from "./support.js";

const h = useHarness();

function countSpec(name: string, extra: Partial<ToolSpec> = {}): ToolSpec {
  return {
    name,
    description: "Counts to n for the user.",
    input_schema: {
      type: "object",
      properties: { n: { type: "integer" }, user_id: { type: "string" } },
      required: ["n", "user_id"],
      additionalProperties: false,
    },
    inject: [{ param: "user_id", from: "user_id" }],
    backend: h.tools.route(name, (args) => [200, { counted: args.n, user: args.user_id }]),
    ...extra,
  };
}

describe("execute", () => {
  it("repairs a prefixed name and a string for an integer, and says so", async () => {
    const name = unique("count");
    await h.admin.registerTool(countSpec(name));
    const m = await h.admin.execute(`functions.${name}`, '{"n": "3"}', { id: "c1", context: { userId: "u-1" } });
    assert.equal(m.status, "SUCCESS", m.content);
    assert.equal(m.ok, true);
    assert.equal(m.name, name);
    assert.equal(m.toolCallId, "c1");
    assert.deepEqual(m.arguments, { n: 3 });
    assert.deepEqual(m.structured, { counted: 3, user: "u-1" });
    assert.deepEqual(m.repairs.map((r) => r.rule).sort(), ["string_to_integer", "tool_name_prefix"].sort());
    assert.equal(m.error, undefined);
    assert.deepEqual(h.tools.received(name).at(-1)?.args, { n: 3, user_id: "u-1" });
  });

  it("answers failures as typed messages, never by throwing", async () => {
    const name = unique("count");
    await h.admin.registerTool(countSpec(name));
    const missing = await h.admin.execute(unique("nothing"), {}, { id: "m1" });
    assert.equal(missing.status, "ERROR");
    assert.equal(missing.error?.kind, "TOOL_NOT_FOUND");
    assert.equal(missing.error?.modelFixable, true);

    const invalid = await h.admin.execute(name, { n: "three" }, { id: "m2", context: { userId: "u" } });
    assert.equal(invalid.error?.kind, "INVALID_ARGUMENTS");
    assert.equal(invalid.error?.originalArguments, '{"n":"three"}');
    assert.equal(invalid.error?.violations[0]?.instancePath, "/n");
    assert.match(invalid.content, /n/);

    const broken = unique("broken");
    await h.admin.registerTool({ ...countSpec(broken), backend: h.tools.route(broken, () => [500, "the tool fell over"]) });
    const failed = await h.admin.execute(broken, { n: 1 }, { id: "m3", context: { userId: "u" } });
    assert.equal(failed.error?.kind, "TOOL_ERROR");
    assert.equal(failed.ok, false);
  });

  it("runs a batch in call order, each call with its own id", async () => {
    const name = unique("count");
    await h.admin.registerTool(countSpec(name));
    const answers = await h.admin.executeBatch(
      [
        { id: "b1", name, args: { n: 1 } },
        { id: "b2", name: unique("absent"), args: {} },
        { id: "b3", name, arguments: "{'n': 2,}" },
      ],
      { context: { userId: "u-2" } },
    );
    assert.deepEqual(
      answers.map((m) => [m.toolCallId, m.status]),
      [
        ["b1", "SUCCESS"],
        ["b2", "ERROR"],
        ["b3", "SUCCESS"],
      ],
    );
    assert.deepEqual(answers[2]!.arguments, { n: 2 });
  });

  it("never lets the model set an injected parameter, and hides it from the definitions", async () => {
    const name = unique("count");
    await h.admin.registerTool(countSpec(name));
    const m = await h.admin.execute(name, { n: 1, user_id: "attacker" }, { id: "i1", context: { userId: "u-real" } });
    assert.equal(m.ok, true, m.content);
    assert.equal(h.tools.received(name).at(-1)?.args.user_id, "u-real");
    const definitions = await h.admin.listToolDefinitions("openai");
    const mine = definitions.find((d) => d.tool === name);
    const parameters = (mine?.definition as any).function.parameters;
    assert.deepEqual(Object.keys(parameters.properties), ["n"]);
  });

  it("keeps a per-call deadline", async () => {
    const name = unique("slow");
    // Without the call's 300 ms deadline it would wait a minute, for the tool or for the tool's own timeout: far
    // past the 15 s bound below, itself far past any scheduling delay. (The tool's timer does not keep the test
    // process alive once the tests are done.)
    const spec = countSpec(name, { limits: { timeout_ms: 60_000 } });
    spec.backend = h.tools.route(name, async () => {
      await new Promise((ok) => setTimeout(ok, 60_000).unref());
      return [200, "late"];
    });
    await h.admin.registerTool(spec);
    const started = Date.now();
    const outcome = await h.admin.execute(name, { n: 1 }, { id: "d1", context: { userId: "u" }, timeoutMs: 300 }).then(
      (m) => m.error?.kind,
      (err: GatewayError) => err.code,
    );
    const took = Date.now() - started;
    assert.ok(took < 15_000, `the call took ${took} ms, not its deadline's 300`);
    assert.ok(["TIMEOUT", "DEADLINE_EXCEEDED"].includes(String(outcome)), String(outcome));
  });
});

describe("registry", () => {
  it("registers, replaces, gets, lists and deletes a tool", async () => {
    const name = unique("reg");
    const limits = { rate: "5/s", key: "USER", scope: "GATEWAY", when_redis_down: "FAIL_CLOSED" } as const;
    const review = { required: true, caller_may_confirm: true };
    const spec = countSpec(name, { labels: { team: "ts" }, limits, review });
    const created = await h.admin.registerTool(spec);
    assert.equal(created.version, 1);
    assert.deepEqual(
      [created.limits?.rate, created.limits?.key, created.limits?.scope, created.limits?.when_redis_down],
      ["5/s", "USER", "GATEWAY", "FAIL_CLOSED"],
    );
    assert.deepEqual(created.review, review);
    assert.deepEqual(created.labels, { team: "ts" });
    assert.deepEqual(created.backend, { http: { ...(spec.backend as { http: { url: string } }).http, method: "", headers: {} } });
    const replaced = await h.admin.registerTool(countSpec(name, { description: "v2" }));
    assert.equal(replaced.version, 2);
    const got = await h.admin.getTool(name);
    assert.equal(got.description, "v2");
    assert.deepEqual(got.inject, [{ param: "user_id", from: "user_id" }]);
    assert.ok((await h.admin.listTools()).some((t) => t.name === name));
    await h.admin.deleteTool(name);
    await assert.rejects(h.admin.getTool(name), (err: GatewayError) => err.code === "NOT_FOUND");
  });

  it("refuses a spec with an unknown field before sending it", async () => {
    const spec = { ...countSpec(unique("x")), colour: "red" } as ToolSpec;
    await assert.rejects(h.admin.registerTool(spec), /unknown spec fields: colour/);
  });
});

describe("tokens", () => {
  it("sends each plane its own token", async () => {
    const anonymous = new Client(h.gateway.target);
    const dataOnly = new Client(h.gateway.target, { token: DATA_TOKEN });
    const reviewer = new Client(h.gateway.target, { reviewToken: REVIEW_TOKEN });
    try {
      await assert.rejects(anonymous.execute("x", {}), (err: GatewayError) => err.code === "UNAUTHENTICATED");
      await assert.rejects(dataOnly.listTools(), (err: GatewayError) => ["UNAUTHENTICATED", "PERMISSION_DENIED"].includes(err.code));
      // The review token opens ToolReview alone.
      assert.ok(Array.isArray(await reviewer.listPending()));
      await assert.rejects(reviewer.listTools(), (err: GatewayError) => ["UNAUTHENTICATED", "PERMISSION_DENIED"].includes(err.code));
    } finally {
      anonymous.close();
      dataOnly.close();
      reviewer.close();
    }
  });
});

describe("transports", () => {
  it("reaches a gateway listening on a Unix socket", async () => {
    const gateway = await Gateway.start("", true);
    assert.match(gateway.target, /^unix:\//);
    const client = gateway.client();
    try {
      const name = unique("uds");
      await client.registerTool(countSpec(name));
      assert.ok((await client.listTools()).some((t) => t.name === name));
      assert.equal((await client.execute(name, { n: 2 }, { context: { userId: "u-s" } })).status, "SUCCESS");
    } finally {
      client.close();
      await gateway.stop();
    }
  });
});

describe("policy rules", () => {
  it("deny or send to review by what the call says, and read back as written", async () => {
    const name = unique("ruled");
    const policy = [
      { name: "big", when: "args.n > 100", action: "review", message: "Counting past 100 needs a person." },
      { name: "no-13", when: "args.n == 13", action: "deny", message: "Not 13: pick another number.", model_fixable: true },
    ] as const;
    const created = await h.admin.registerTool(countSpec(name, { policy: [...policy] }));
    assert.deepEqual(created.policy?.map((r) => [r.name, r.action, r.on_error, r.model_fixable]), [
      ["big", "review", "deny", false],
      ["no-13", "deny", "deny", true],
    ]);
    const context = { userId: "u-p", tenant: "" };
    assert.equal((await h.admin.execute(name, { n: 3 }, { context })).status, "SUCCESS");
    const denied = await h.admin.execute(name, { n: 13 }, { context });
    assert.deepEqual([denied.error?.kind, denied.content, denied.error?.modelFixable], ["POLICY_DENIED", policy[1].message, true]);
    const waiting = await h.admin.execute(name, { n: 500 }, { id: "p-500", context, reviewMode: "defer" });
    assert.equal(waiting.status, "PENDING_REVIEW");
    const pending = (await h.admin.listPending()).find((p) => p.callId === "p-500");
    assert.deepEqual([pending?.rule, pending?.ruleMessage], ["big", policy[0].message]);
    await assert.rejects(
      h.admin.registerTool(countSpec(unique("bad"), { policy: [{ name: "r", when: "args.n >", action: "deny" }] })),
      (err: GatewayError) => err.code === "INVALID_ARGUMENT" && /line 1/.test(err.message),
    );
    await assert.rejects(
      h.admin.registerTool(countSpec(unique("bad"), { policy: [{ name: "r", when: "true", action: "allow" as "deny" }] })),
      /action is deny or review/,
    );
  });
});

describe("review", () => {
  it("lists, watches and decides a pending call; the tool runs once", async () => {
    const name = unique("guarded");
    await h.admin.registerTool(countSpec(name, { review: { required: true } }));
    const context = { userId: "u-r", tenant: "" };
    const controller = new AbortController();
    const events: string[] = [];
    const watching = (async () => {
      for await (const e of h.admin.watchPending({ signal: controller.signal })) {
        if (e.review.tool === name) events.push(e.kind);
        if (events.includes("DECIDED")) controller.abort();
      }
    })();
    const first = await h.admin.execute(name, { n: 7 }, { id: "r1", context, reviewMode: "defer" });
    assert.equal(first.status, "PENDING_REVIEW");
    assert.equal(first.pendingReview, true);
    const pending = (await h.admin.listPending()).find((p) => p.callId === "r1");
    assert.deepEqual(pending?.args, { n: 7 });
    assert.equal(pending?.userId, "u-r");
    assert.deepEqual([pending?.decidedBy, pending?.decidedMs], ["", 0], "pending: nobody decided yet");
    const decided = await h.admin.decide("r1", "edit", { arguments: { n: 8 }, reviewer: "Ana Reviewer" });
    assert.equal(decided.callId, "r1");
    assert.equal(decided.decidedBy, "Ana Reviewer");
    assert.ok(decided.decidedMs >= decided.createdMs && decided.createdMs > 0);
    await assert.rejects(h.admin.decide("r1", "approve"), (err: GatewayError) => err.code === "FAILED_PRECONDITION");
    const outcome = await h.admin.execute(name, { n: 7 }, { id: "r1", context, reviewMode: "defer" });
    assert.equal(outcome.status, "SUCCESS", outcome.content);
    assert.deepEqual(outcome.structured, { counted: 8, user: "u-r" });
    await watching;
    assert.deepEqual(events, ["PENDING", "DECIDED"]);
    assert.equal(h.tools.received(name).length, 1);
  });
});

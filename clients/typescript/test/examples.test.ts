// Each example, run as a user runs it (`tsx examples/<name>.ts`), against a real gateway whose planes are closed by
// tokens: it must finish, and print what its scenario is about.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { ADMIN_TOKEN, DATA_TOKEN, Gateway, REVIEW_TOKEN } from "./support.js";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
let gateway: Gateway;

before(async () => {
  gateway = await Gateway.start();
});

after(async () => {
  await gateway?.stop();
});

async function runExample(name: string): Promise<string> {
  const env = {
    ...process.env,
    TOOLGATE_TARGET: gateway.target,
    TOOLGATE_TOKEN: DATA_TOKEN,
    TOOLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    TOOLGATE_REVIEW_TOKEN: REVIEW_TOKEN,
  };
  const script = join(PACKAGE, "examples", `${name}.ts`);
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], { cwd: PACKAGE, env });
  return stdout;
}

describe("examples", () => {
  it("error-fallback: the error routes to the better model, whose call runs", async () => {
    const out = await runExample("error-fallback");
    assert.match(out, /routing to the better model: INVALID_ARGUMENTS for input \{"city":"Oslo","days":"next week"\}/);
    assert.match(out, /tool {2}\[success\] \{"city":"Oslo","days":7,"sky":"clear"\}/);
  });

  it("review: continue, update and feedback; two emails sent, each once", async () => {
    const out = await runExample("review");
    for (const choice of ["continue", "update", "feedback"]) assert.match(out, new RegExp(`${choice}: the graph waits for review`));
    assert.match(out, /send_email\(\{"to":"team@example.com"/);
    assert.match(out, /tool {2}\[error\] Don't email the whole company/);
    assert.match(out, /emails sent: 2/);
  });

  it("auto-fix: the state shows the repaired call, and the error handler sees the original input", async () => {
    const out = await runExample("auto-fix");
    assert.match(out, /error handler: lookup_order failed with INVALID_ARGUMENTS; the input was \{"order":"forty-two"\}/);
    assert.match(out, /ai {4}lookup_order\(\{"order":42\}\), lookup_order\(\{"order":"forty-two"\}\)/);
    assert.match(out, /\(order numbers are digits, such as 42\)/);
  });
});

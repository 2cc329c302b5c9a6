// The README's TypeScript example (examples/quickstart.ts; tests/sdk/test_typescript.py checks
// the README shows exactly this file) runs against the live API and prints what it stored.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { it } from "node:test";

import { live, skipLive } from "./support.js";

it("the README example runs and finds what it stored", { skip: skipLive }, async () => {
  const example = fileURLToPath(new URL("../examples/quickstart.js", import.meta.url));
  const { stdout } = await promisify(execFile)(process.execPath, [example], {
    env: { ...process.env, CONTINUUM_URL: live.url, CONTINUUM_TOKEN: live.token },
    timeout: 60_000,
  });
  assert.match(stdout, /^fact Garden contractor: Hoffmann does the garden\.$/m); // the search
  assert.match(stdout, /^# Memory context/m); // the context block
  assert.match(stdout.slice(stdout.indexOf("# Memory context")), /Hoffmann does the garden/);
});

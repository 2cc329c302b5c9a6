// Retries on 429 and 503 with backoff, honouring Retry-After, against a scripted local HTTP
// server (the live API cannot be made to answer 429 or 503 on cue).

import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import { Continuum, ContinuumError, retryAfterSeconds } from "@continuum/client";

type Answer = { status: number; headers?: Record<string, string>; body?: unknown };

describe("retries", () => {
  let server: Server;
  let script: Answer[] = [];
  let arrivals: number[] = [];
  let baseUrl = "";

  before(async () => {
    server = createServer((request, response) => {
      arrivals.push(Date.now());
      const answer = script.shift() ?? { status: 500, body: { detail: "script ran out" } };
      response.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      response.end(JSON.stringify(answer.body ?? {}));
      request.resume();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function run(answers: Answer[]): Continuum {
    script = answers;
    arrivals = [];
    return new Continuum({ baseUrl, token: "ctm_test", retryBaseMs: 40 });
  }

  const me = { token_id: 1, name: "t", namespaces: ["a"] };

  it("waits as long as Retry-After says after a 503, then succeeds", async () => {
    const api = run([{ status: 503, headers: { "retry-after": "1" } }, { status: 200, body: me }]);
    assert.deepEqual(await api.me(), me);
    assert.equal(arrivals.length, 2);
    const waited = arrivals[1]! - arrivals[0]!;
    assert.ok(waited >= 950 && waited < 2000, `waited ${waited} ms`);
  });

  it("backs off exponentially after a 429 without Retry-After", async () => {
    const api = run([{ status: 429 }, { status: 429 }, { status: 200, body: me }]);
    assert.deepEqual(await api.me(), me);
    const [first, second, third] = arrivals as [number, number, number];
    assert.ok(second - first >= 20 && second - first < 500, `first wait ${second - first} ms`);
    assert.ok(third - second >= 40 && third - second < 500, `second wait ${third - second} ms`);
  });

  it("gives up after its retries with the last answer as the error", async () => {
    const busy = { status: 503, headers: { "retry-after": "0" },
                   body: { detail: [{ loc: [], msg: "Redis unreachable", type: "service_unavailable" }] } };
    const api = run([busy, busy, busy, busy, { status: 200, body: me }]);
    const error = await api.me().then(() => assert.fail("should give up"), (e: unknown) => e);
    assert.ok(error instanceof ContinuumError);
    assert.equal(error.status, 503);
    assert.equal(error.retryAfterS, 0);
    assert.equal(error.errors[0]?.type, "service_unavailable");
    assert.equal(arrivals.length, 4, "the first attempt and three retries");
  });

  it("never retries other errors", async () => {
    const api = run([{ status: 500, body: { detail: "boom" } }, { status: 200, body: me }]);
    const error = await api.me().then(() => assert.fail("should fail"), (e: unknown) => e);
    assert.ok(error instanceof ContinuumError && error.status === 500);
    assert.equal(arrivals.length, 1);
  });

  it("reads Retry-After as seconds or as an HTTP date", () => {
    const now = Date.parse("2026-05-01T10:00:00Z");
    assert.equal(retryAfterSeconds("7", now), 7);
    assert.equal(retryAfterSeconds("Fri, 01 May 2026 10:00:03 GMT", now), 3);
    assert.equal(retryAfterSeconds("Fri, 01 May 2026 09:00:00 GMT", now), 0);
    assert.equal(retryAfterSeconds("soon", now), undefined);
    assert.equal(retryAfterSeconds(null, now), undefined);
  });
});

// The client against a real `continuum api` with real Postgres, Redis and a Celery worker:
// every route of the OpenAPI document is reached by a method, answers are what the API says,
// errors name their field, and lists page through `next`.

import assert from "node:assert/strict";
import { after, describe, it } from "node:test";

import { Continuum, ContinuumError } from "@continuum/client";
import { documentedRoutes, live, recordingFetch, routeOf, skipLive, waitFor } from "./support.js";

const requests: string[] = [];
const USER = "ada";
const SESSION = "ts-sdk-session-1";

function client(token = live.token, instance?: string): Continuum {
  return new Continuum({ baseUrl: live.url, token, instance, fetch: recordingFetch(requests) });
}

async function refused(call: Promise<unknown>): Promise<ContinuumError> {
  const error = await call.then(
    () => assert.fail("the call should have been refused"),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof ContinuumError, `not a ContinuumError: ${String(error)}`);
  return error;
}

describe("the client against the live API", { skip: skipLive }, () => {
  const api = client();

  it("says who the token is", async () => {
    const me = await api.me();
    assert.deepEqual(me.namespaces, [live.namespace]);
    assert.equal(typeof me.token_id, "number");
  });

  it("sends events that a worker stores, filling in ids and times", async () => {
    const one = await api.events.send({
      kind: "turn", session_id: SESSION, channel: "web", user_id: USER, role: "user",
      content: "We'll use Postgres for the event store.", message_id: "m1",
    });
    assert.equal(one.enqueued, 1);
    const batch = await api.events.send([
      { kind: "turn", session_id: SESSION, channel: "web", user_id: USER, role: "assistant",
        content: "Noted: Postgres it is.", message_id: "m2" },
      { kind: "idle", session_id: SESSION, channel: "web", user_id: USER, idle_ms: 1000,
        last_activity_at: new Date().toISOString() },
    ]);
    assert.equal(batch.enqueued, 2);
    assert.equal(new Set([...one.event_ids, ...batch.event_ids]).size, 3);
    const stored = await waitFor(async () => {
      const page = await api.messages.list({ session_id: SESSION, order: "oldest" });
      return page.items.length === 2 && page.items;
    });
    assert.deepEqual(stored.map((m) => [m.message_id, m.role]), [["m1", "user"], ["m2", "assistant"]]);
    const found = await api.messages.list({ q: "Postgres", limit: 1 });
    assert.equal(found.items.length, 1);
    assert.ok(found.next, "a second match is on the next page");
    const all = [];
    for await (const message of api.messages.iterate({ q: "Postgres", limit: 1 })) {
      all.push(message.message_id);
    }
    assert.deepEqual(all.sort(), ["m1", "m2"]);
  });

  it("names the bad field of a refused call", async () => {
    const role = await refused(api.events.send({
      kind: "turn", session_id: SESSION, channel: "web", role: "robot" as "user", content: "hi",
    }));
    assert.equal(role.status, 422);
    assert.equal(role.field, "body.role");
    assert.match(role.message, /POST \/v1\/events answered 422: body\.role: /);
    const batch = await refused(api.events.send([
      { kind: "turn", session_id: SESSION, channel: "web", role: "user", content: "fine" },
      { kind: "turn", session_id: SESSION, channel: "web", role: "user", content: "   " },
    ]));
    assert.deepEqual(batch.errors.map((e) => e.field), ["body.1.content"]);
    const page = await refused(api.tasks.list({ limit: 1000 }));
    assert.equal(page.field, "query.limit");
    const several = client(live.multiToken);
    const instance = await refused(several.search.list({ q: "Postgres" }));
    assert.equal(instance.field, "query.instance");
    assert.equal(instance.status, 422);
    const chosen = client(live.multiToken, live.namespace);
    assert.ok((await chosen.search.list({ q: "Postgres" })).items.length > 0);
    const unknown = await refused(api.sessions.get("no-such-session"));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.field, undefined);
    assert.equal(unknown.errors[0]?.msg, "not found");
    const stranger = await refused(client("ctm_not-a-token").me());
    assert.equal(stranger.status, 401);
  });

  it("pages through lists with their next links", async () => {
    const titles = ["one", "two", "three", "four", "five"].map((n) => `ts task ${n}`);
    for (const title of titles) {
      const task = await api.tasks.create({ title, user_id: USER, channel: "web" });
      assert.equal(task.title, title);
    }
    const first = await api.tasks.list({ user_id: USER, limit: 2 });
    assert.equal(first.items.length, 2);
    assert.match(first.next ?? "", /offset=2/);
    const before = requests.length;
    const seen = [];
    for await (const task of api.tasks.iterate({ user_id: USER, limit: 2 })) {
      seen.push(task.title);
    }
    assert.deepEqual([...seen].sort(), [...titles].sort());
    assert.equal(requests.length - before, 3, "three pages of two");
    assert.deepEqual(seen.slice(0, 2), first.items.map((t) => t.title));
    const done = await api.tasks.setStatus(first.items[0]!.task_id.slice(0, 8), "done");
    assert.equal(done.status, "done");
    assert.ok(done.completed_at);
    const open = [];
    for await (const task of api.tasks.iterate({ user_id: USER })) {
      open.push(task.task_id);
    }
    assert.equal(open.length, 4);
  });

  it("writes memories through the tools and reads them back", async () => {
    const writer = { user_id: USER, provenance: "user_explicit" as const };
    const stored = await api.memories.store(
      { memory_type: "preference", key: "editor", value: "Ada writes code in Helix." }, writer);
    assert.equal(stored.success, true);
    const updated = await api.memories.update(
      { existing_key: "EDITOR", new_value: "Ada writes code in Zed now." }, writer);
    assert.equal(updated.action, "updated");
    const listed = await api.memories.list({ user_id: USER, kind: "preference" });
    // A memory of a key reads "Key: value".
    assert.deepEqual(listed.items.map((m) => m.content), ["Editor: Ada writes code in Zed now."]);
    const iterated = [];
    for await (const memory of api.memories.iterate({ user_id: USER, status: "any", limit: 1 })) {
      iterated.push(memory.content);
    }
    assert.ok(iterated.includes("Editor: Ada writes code in Helix."), iterated.join(" | "));
    const kinds = await api.memories.kinds();
    assert.ok(kinds.some((k) => k.kind === "preference" && k.storable));
    const hits = await api.search.list({ q: "Zed", user_id: USER, source: ["memory"] });
    assert.equal(hits.items[0]?.content, "Editor: Ada writes code in Zed now.");
    const everything = [];
    for await (const hit of api.search.iterate({ q: "Postgres", limit: 1 })) {
      everything.push(hit.source);
    }
    assert.ok(everything.includes("message"));
    const context = await api.context({ user_id: USER, seed_text: "Which editor?" });
    assert.match(String(context.block), /Zed/);
    const edited = await api.memories.edit(Number(updated.memoryId), "Editor: Ada writes code in Zed.");
    assert.equal(edited.success, true);
    assert.equal(edited.previousMemoryId, updated.memoryId);
    assert.equal((await refused(api.memories.edit(999_999, "nothing"))).status, 404);
    assert.equal((await refused(api.memories.edit(Number(edited.memoryId), " "))).field, "body.content");
    const hidden = await api.memories.markPrivate({ key: "editor" }, writer);
    assert.equal(hidden.success, true);
    const forgotten = await api.memories.forget({ key: "editor" }, writer);
    assert.equal(forgotten.success, true);
    const again = await refused(api.memories.forget({ key: "editor" }, writer));
    assert.equal(again.status, 404);
    const bad = await refused(api.memories.store(
      { memory_type: "decision" as "fact", key: "x", value: "y" }, writer));
    assert.equal(bad.field, "body.memory_type");
  });

  it("sets and reads preferences", async () => {
    const set = await api.preferences.set("Theme", { value: "dark", user_id: USER, category: "ui" });
    assert.equal(set.value, "dark");
    assert.equal((await api.preferences.get("theme", { user_id: USER })).value, "dark");
    assert.ok((await api.preferences.list({ user_id: USER })).items.some((p) => p.key === set.key));
    const keys = [];
    for await (const preference of api.preferences.iterate({ user_id: USER, category: "ui" })) {
      keys.push(preference.key);
    }
    assert.deepEqual(keys, [set.key]);
    assert.equal((await refused(api.preferences.get("no_such_key"))).status, 404);
  });

  it("lists sessions, live and stored, and hands off between channels", async () => {
    const stored = await api.sessions.get(SESSION);
    assert.equal(stored.message_count, 2);
    assert.ok((await api.sessions.list({ channel: "web" })).items.some((s) => s.session_id === SESSION));
    const ids = [];
    for await (const session of api.sessions.iterate({ limit: 1 })) {
      ids.push(session.session_id);
    }
    assert.ok(ids.includes(SESSION));
    assert.ok((await api.sessions.active()).some((s) => s.session_id === SESSION));
    await api.handoffs.send({ user_id: USER, from_channel: "web", to_channel: "voice",
                              context_summary: "Ada was choosing an editor." });
    const shown = await api.handoffs.check({ user_id: USER, channel: "voice" });
    assert.match(JSON.stringify(shown), /choosing an editor/);
    assert.equal(await api.handoffs.check({ user_id: USER, channel: "voice" }), null);
  });

  it("reads a session's turns in order and erases them", async () => {
    const turns = api.sessions.turns(SESSION);
    const oldest = await turns.list({ limit: 1 });
    assert.deepEqual(oldest.items.map((t) => t.message_id), ["m1"]);
    assert.ok(oldest.next);
    const all = [];
    for await (const turn of turns.iterate({ limit: 1 })) {
      all.push(`${turn.role}:${turn.message_id}`);
    }
    assert.deepEqual(all, ["user:m1", "assistant:m2"]);
    const newest = await turns.list({ order: "newest", limit: 1 });
    assert.equal(newest.items[0]?.message_id, "m2");
    assert.deepEqual(await api.sessions.eraseTurns(SESSION, { message_id: ["m2"] }), { erased: 1 });
    assert.deepEqual((await turns.list()).items.map((t) => t.message_id), ["m1"]);
  });

  it("keeps documents under a path and finds them", async () => {
    const namespace = ["ada", "notes"];
    const put = await api.documents.put({
      namespace, key: "editor", value: { editor: "Zed", since: 2026 }, text: "Ada's editor is Zed",
    });
    assert.deepEqual(put.namespace, namespace);
    assert.deepEqual((await api.documents.get({ namespace, key: "editor" })).value,
                     { editor: "Zed", since: 2026 });
    const filtered = await api.documents.search({ namespace_prefix: ["ada"], filter: { editor: "Zed" } });
    assert.deepEqual(filtered.items.map((d) => d.key), ["editor"]);
    const found = await api.documents.search({ namespace_prefix: ["ada"], query: "which editor" });
    assert.equal(found.items[0]?.key, "editor");
    assert.deepEqual((await api.documents.namespaces({ prefix: ["ada"] })).namespaces, [namespace]);
    assert.deepEqual(await api.documents.delete({ namespace, key: "editor" }), { deleted: true });
    const gone = await refused(api.documents.get({ namespace, key: "editor" }));
    assert.equal(gone.status, 404);
    const bad = await refused(api.documents.put({ namespace: ["a.b"], key: "k", value: {} }));
    assert.equal(bad.field, "body.namespace.0");
  });

  it("lists conflicts and suggested tasks, and reports the pipeline's status", async () => {
    assert.deepEqual((await api.conflicts.list()).items, []);
    for await (const conflict of api.conflicts.iterate({ user_id: USER })) {
      assert.fail(`no conflict expected, got ${JSON.stringify(conflict)}`);
    }
    assert.equal((await refused(api.conflicts.settle(999_999, "active"))).status, 404);
    const bad = await refused(api.conflicts.settle(999_999, "both" as "active"));
    assert.equal(bad.field, "body.keep");
    assert.deepEqual((await api.tasks.suggestions.list({ user_id: USER })).items, []);
    for await (const suggestion of api.tasks.suggestions.iterate()) {
      assert.fail(`no suggestion expected, got ${JSON.stringify(suggestion)}`);
    }
    assert.equal((await refused(api.tasks.confirm("ffffffff"))).status, 404);
    assert.equal((await refused(api.tasks.dismiss("ffffffff"))).status, 404);
    const status = await api.status();
    assert.deepEqual((status.tenant as { namespaces: string[] }).namespaces, [live.namespace]);
    assert.equal(status.pipeline, null, "the global figures are for operator tokens");
  });

  it("reads cron reports, sync problems and metrics", async () => {
    assert.deepEqual((await api.cronReports.list()).items, []);
    assert.deepEqual(await api.cronReports.names(), []);
    for await (const report of api.cronReports.iterate({ day: "2026-01-01" })) {
      assert.fail(`no report expected, got ${JSON.stringify(report)}`);
    }
    assert.deepEqual((await api.syncProblems.list({ resolved: true })).items, []);
    for await (const problem of api.syncProblems.iterate()) {
      assert.fail(`no problem expected, got ${JSON.stringify(problem)}`);
    }
    assert.match(await api.metrics(), /^# HELP continuum_/m);
  });

  it("exports the namespace and imports the archive back: twice is once", async () => {
    const archive = await api.exportArchive();
    const lines = archive.trimEnd().split("\n");
    assert.equal(JSON.parse(lines[0] ?? "").type, "header");
    assert.equal(JSON.parse(lines.at(-1) ?? "").type, "manifest");
    const report = await api.importArchive(archive);
    assert.equal(report.namespace, live.namespace);
    assert.deepEqual(report.inserted, { session: 0, message: 0, memory: 0, task: 0, cron_report: 0 });
    const cut = await refused(api.importArchive(lines.slice(0, -1).join("\n") + "\n"));
    assert.equal(cut.status, 422);
    assert.match(JSON.stringify(cut.body), /truncated/);
  });

  it("forgets a user everywhere", async () => {
    const report = await api.forgetUser(USER);
    assert.equal(report.complete, true);
    assert.equal(report.user_id, USER);
    assert.deepEqual((await api.memories.list({ user_id: USER, status: "any" })).items
      .filter((m) => m.user_id === USER), []);
  });

  after(() => {
    // Runs when the suite did: every route of the OpenAPI document was reached.
    const routes = documentedRoutes();
    const reached = new Set(requests.map((request) => routeOf(request, routes)));
    assert.deepEqual(routes.filter((route) => !reached.has(route)), [], "routes no method reached");
  });
});

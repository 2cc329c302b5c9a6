// `Continuum`: every public route of the HTTP API as a typed method, grouped as the API's
// routers are. Argument and answer types come from the API's OpenAPI document (src/schema.ts,
// generated). Lists answer one page (`list`) or every item across pages (`iterate`, an async
// iterator that follows each page's `next` link).

import type { components, paths } from "./schema.js";
import { type ClientOptions, type Query, RawBody, Transport } from "./http.js";

export type Schemas = components["schemas"];

type Method = "get" | "post" | "put" | "patch" | "delete";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type QueryOf<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type BodyOf<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
type JsonOf<R> = R extends { content: { "application/json": infer J } } ? J : never;
type ResultOf<O> = O extends { responses: infer R }
  ? 200 extends keyof R
    ? JsonOf<R[200]>
    : 201 extends keyof R
      ? JsonOf<R[201]>
      : 202 extends keyof R
        ? JsonOf<R[202]>
        : never
  : never;

/** The query parameters of `METHOD path`, as the API declares them. */
export type QueryParams<P extends keyof paths, M extends Method = "get"> = QueryOf<
  Operation<P, M>
>;
/** The JSON body of `METHOD path`. */
export type RequestBody<P extends keyof paths, M extends "post" | "put" | "patch"> = BodyOf<Operation<P, M>>;
/** The JSON answer of `METHOD path`. */
export type Result<P extends keyof paths, M extends Method = "get"> = ResultOf<
  Operation<P, M>
>;
/** One item of a paginated list. */
export type ItemOf<P extends keyof paths> = Result<P> extends { items: (infer T)[] } ? T : never;
/** A list's parameters: its filters, and `limit` / `offset` (`iterate` starts at `offset`
 * and fetches `limit` items a page). */
export type ListParams<P extends keyof paths> = QueryParams<P>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An event as stored: one of the four kinds. */
export type Event =
  | Schemas["TurnEvent"]
  | Schemas["IdleEvent"]
  | Schemas["PreCompactionEvent"]
  | Schemas["SessionEndEvent"];
/** An event to send: `namespace` may be left out when the token covers one, `ts` and
 * `event_id` are filled in (now; a random UUID) when missing. */
export type EventInput = DistributiveOmit<Event, "namespace" | "ts"> & {
  namespace?: string;
  ts?: string;
};

/** Who writes through the memory tools: the user and session the memory belongs to, and how
 * trusted the write is (`user_explicit` when the user asked for it). */
export type Writer = QueryParams<"/v1/memories/store", "post">;

/** A random UUID: the Web Crypto global's, or on Node 18 (where that global is behind a
 * flag) node:crypto's. */
async function randomUUID(): Promise<string> {
  const web = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (web?.randomUUID) {
    return web.randomUUID();
  }
  return (await import("node:crypto")).randomUUID();
}

const path = (template: string, values: Record<string, string>): string =>
  template.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? ""));

/** A paginated list endpoint (route `P`, at `url`: the route with its path filled in): one
 * page, or every item. */
export class Listing<P extends keyof paths> {
  constructor(
    private readonly transport: Transport,
    private readonly url: string,
  ) {}

  /** One page: `{items, limit, offset, next}` (`next` null on the last). */
  list(query: QueryParams<P> = {} as QueryParams<P>): Promise<Result<P>> {
    return this.transport.request<Result<P>>("GET", this.url, query as Query);
  }

  /** Every item from `offset` on, page after page (each page fetched when the one before
   * is used up). */
  async *iterate(query: ListParams<P> = {} as ListParams<P>): AsyncGenerator<ItemOf<P>, void, undefined> {
    type Page = { items: ItemOf<P>[]; next?: string | null };
    let page = await this.transport.request<Page>("GET", this.url, query as Query);
    while (true) {
      yield* page.items;
      if (!page.next) {
        return;
      }
      page = await this.transport.request<Page>("GET", page.next);
    }
  }
}

/** The API's client. Every method answers the API's JSON, typed, or throws ContinuumError. */
export class Continuum {
  private readonly transport: Transport;

  /** Raw messages (R77): full text, one session, one day, the last N. */
  readonly messages: Listing<"/v1/messages">;
  /** Hybrid search (meaning and words) over memories and messages. */
  readonly search: Listing<"/v1/search">;
  readonly events: {
    /** Validate and enqueue one event or a batch (202): `{enqueued, event_ids}`. */
    send(events: EventInput | EventInput[]): Promise<Result<"/v1/events", "post">>;
  };
  readonly memories: Listing<"/v1/memories"> & {
    /** Every memory kind: what it holds and whether the tools store it. */
    kinds(query?: QueryParams<"/v1/memories/kinds">): Promise<Result<"/v1/memories/kinds">>;
    /** Remember something (`store_memory`). */
    store(args: RequestBody<"/v1/memories/store", "post">, writer?: Writer): Promise<Result<"/v1/memories/store", "post">>;
    /** New version under a key, or a new memory (`update_memory`). */
    update(args: RequestBody<"/v1/memories/update", "post">, writer?: Writer): Promise<Result<"/v1/memories/update", "post">>;
    /** Forget by key or id (`forget_memory`); 404 when nothing matches. */
    forget(args: RequestBody<"/v1/memories/forget", "post">, writer?: Writer): Promise<Result<"/v1/memories/forget", "post">>;
    /** Mark private, or visible again with `private: false` (`mark_private`). */
    markPrivate(args: RequestBody<"/v1/memories/mark-private", "post">, writer?: Writer): Promise<Result<"/v1/memories/mark-private", "post">>;
    /** A new version of one active memory saying `content` supersedes it; 404 when none. */
    edit(memoryId: number, content: string, writer?: Writer): Promise<Result<"/v1/memories/{memory_id}", "patch">>;
  };
  /** Quarantined claims beside the trusted memories they contradict. */
  readonly conflicts: Listing<"/v1/conflicts"> & {
    /** Settle the conflict of quarantined memory `memoryId`: which value stands. */
    settle(memoryId: number, keep: RequestBody<"/v1/conflicts/{memory_id}/settle", "post">["keep"], query?: QueryParams<"/v1/conflicts/{memory_id}/settle", "post">): Promise<Result<"/v1/conflicts/{memory_id}/settle", "post">>;
  };
  readonly cronReports: Listing<"/v1/cron-reports"> & {
    /** Every cron name with a report. */
    names(query?: QueryParams<"/v1/cron-reports/names">): Promise<Result<"/v1/cron-reports/names">>;
  };
  readonly preferences: Listing<"/v1/preferences"> & {
    /** One preference by key (any case); 404 when there is none. */
    get(key: string, query?: QueryParams<"/v1/preferences/{key}">): Promise<Result<"/v1/preferences/{key}">>;
    /** Set it as the user stated it: a new value supersedes the old one. */
    set(key: string, preference: RequestBody<"/v1/preferences/{key}", "put">, query?: QueryParams<"/v1/preferences/{key}", "put">): Promise<Result<"/v1/preferences/{key}", "put">>;
  };
  readonly tasks: Listing<"/v1/tasks"> & {
    /** Create a task (201). */
    create(task: RequestBody<"/v1/tasks", "post">, query?: QueryParams<"/v1/tasks", "post">): Promise<Result<"/v1/tasks", "post">>;
    /** Move a task (id or a unique prefix) to a status. */
    setStatus(taskId: string, status: RequestBody<"/v1/tasks/{task_id}/status", "post">["status"], query?: QueryParams<"/v1/tasks/{task_id}/status", "post">): Promise<Result<"/v1/tasks/{task_id}/status", "post">>;
    /** Suggested tasks waiting for the user's answer. */
    suggestions: Listing<"/v1/tasks/suggestions">;
    /** A suggested task becomes a pending task (409 if it was dismissed). */
    confirm(taskId: string, query?: QueryParams<"/v1/tasks/{task_id}/confirm", "post">): Promise<Result<"/v1/tasks/{task_id}/confirm", "post">>;
    /** A suggested task is dismissed, never a task (409 if it is one). */
    dismiss(taskId: string, query?: QueryParams<"/v1/tasks/{task_id}/dismiss", "post">): Promise<Result<"/v1/tasks/{task_id}/dismiss", "post">>;
  };
  readonly sessions: Listing<"/v1/sessions"> & {
    /** Sessions active in the last hour across channels, with their topic. */
    active(query?: QueryParams<"/v1/sessions/active">): Promise<Result<"/v1/sessions/active">>;
    /** One stored session; 404 when unknown. */
    get(sessionId: string, query?: QueryParams<"/v1/sessions/{session_id}">): Promise<Result<"/v1/sessions/{session_id}">>;
    /** A session's turns by event time, whole and in order (`order: "newest"`: last first). */
    turns(sessionId: string): Listing<"/v1/sessions/{session_id}/messages">;
    /** Delete a session's turns (only `message_id`s when given): `{erased}`. */
    eraseTurns(sessionId: string, query?: QueryParams<"/v1/sessions/{session_id}/messages", "delete">): Promise<Result<"/v1/sessions/{session_id}/messages", "delete">>;
  };
  /** JSON documents under a namespace path and a key (what a LangGraph store keeps). */
  readonly documents: {
    /** Store a value under (namespace, key), replacing what was there. */
    put(document: RequestBody<"/v1/documents/item", "put">, query?: QueryParams<"/v1/documents/item", "put">): Promise<Result<"/v1/documents/item", "put">>;
    /** One document; 404 when there is none. */
    get(query: QueryParams<"/v1/documents/item">): Promise<Result<"/v1/documents/item">>;
    /** Remove one: `{deleted}` (false when there was none). */
    delete(query: QueryParams<"/v1/documents/item", "delete">): Promise<Result<"/v1/documents/item", "delete">>;
    /** Documents under a path prefix: by hybrid search with `query`, else newest first. */
    search(search: RequestBody<"/v1/documents/search", "post">, query?: QueryParams<"/v1/documents/search", "post">): Promise<Result<"/v1/documents/search", "post">>;
    /** The paths that hold documents, matching `prefix` and `suffix`. */
    namespaces(filter: RequestBody<"/v1/documents/namespaces", "post">, query?: QueryParams<"/v1/documents/namespaces", "post">): Promise<Result<"/v1/documents/namespaces", "post">>;
  };
  readonly handoffs: {
    /** Announce that a user moves to another channel (201). */
    send(handoff: RequestBody<"/v1/handoff", "post">, query?: QueryParams<"/v1/handoff", "post">): Promise<Result<"/v1/handoff", "post">>;
    /** The user's pending handoff, consumed unless `consume: false`; null when none. */
    check(query: QueryParams<"/v1/handoff">): Promise<Result<"/v1/handoff">>;
  };
  /** Problems transcript sync found in the token's instances. */
  readonly syncProblems: Listing<"/v1/sync/problems">;

  constructor(options: ClientOptions) {
    const transport = new Transport(options);
    this.transport = transport;
    const call = <T>(method: string, route: string, query?: object, body?: unknown): Promise<T> =>
      transport.request<T>(method, route, (query ?? {}) as Query, body);
    const tool = (route: string) => (args: unknown, writer?: Writer) => call<never>("POST", route, writer, args);

    this.messages = new Listing<"/v1/messages">(transport, "/v1/messages");
    this.search = new Listing<"/v1/search">(transport, "/v1/search");
    this.events = {
      send: async (events) => {
        const now = new Date().toISOString();
        const complete = async (event: EventInput) => ({
          event_id: event.event_id ?? (await randomUUID()),
          ts: now,
          ...event,
        });
        const body = Array.isArray(events) ? await Promise.all(events.map(complete)) : await complete(events);
        return call("POST", "/v1/events", {}, body);
      },
    };
    this.memories = Object.assign(new Listing<"/v1/memories">(transport, "/v1/memories"), {
      kinds: (query?: object) => call<never>("GET", "/v1/memories/kinds", query),
      store: tool("/v1/memories/store"),
      update: tool("/v1/memories/update"),
      forget: tool("/v1/memories/forget"),
      markPrivate: tool("/v1/memories/mark-private"),
      edit: (memoryId: number, content: string, writer?: Writer) =>
        call<never>("PATCH", path("/v1/memories/{memory_id}", { memory_id: String(memoryId) }), writer, { content }),
    });
    this.conflicts = Object.assign(new Listing<"/v1/conflicts">(transport, "/v1/conflicts"), {
      settle: (memoryId: number, keep: string, query?: object) =>
        call<never>("POST", path("/v1/conflicts/{memory_id}/settle", { memory_id: String(memoryId) }), query, { keep }),
    });
    this.cronReports = Object.assign(new Listing<"/v1/cron-reports">(transport, "/v1/cron-reports"), {
      names: (query?: object) => call<never>("GET", "/v1/cron-reports/names", query),
    });
    this.preferences = Object.assign(new Listing<"/v1/preferences">(transport, "/v1/preferences"), {
      get: (key: string, query?: object) => call<never>("GET", path("/v1/preferences/{key}", { key }), query),
      set: (key: string, preference: unknown, query?: object) =>
        call<never>("PUT", path("/v1/preferences/{key}", { key }), query, preference),
    });
    this.tasks = Object.assign(new Listing<"/v1/tasks">(transport, "/v1/tasks"), {
      create: (task: unknown, query?: object) => call<never>("POST", "/v1/tasks", query, task),
      setStatus: (taskId: string, status: string, query?: object) =>
        call<never>("POST", path("/v1/tasks/{task_id}/status", { task_id: taskId }), query, { status }),
      suggestions: new Listing<"/v1/tasks/suggestions">(transport, "/v1/tasks/suggestions"),
      confirm: (taskId: string, query?: object) =>
        call<never>("POST", path("/v1/tasks/{task_id}/confirm", { task_id: taskId }), query),
      dismiss: (taskId: string, query?: object) =>
        call<never>("POST", path("/v1/tasks/{task_id}/dismiss", { task_id: taskId }), query),
    });
    const turnsUrl = (sessionId: string) =>
      path("/v1/sessions/{session_id}/messages", { session_id: sessionId });
    this.sessions = Object.assign(new Listing<"/v1/sessions">(transport, "/v1/sessions"), {
      active: (query?: object) => call<never>("GET", "/v1/sessions/active", query),
      get: (sessionId: string, query?: object) =>
        call<never>("GET", path("/v1/sessions/{session_id}", { session_id: sessionId }), query),
      turns: (sessionId: string) =>
        new Listing<"/v1/sessions/{session_id}/messages">(transport, turnsUrl(sessionId)),
      eraseTurns: (sessionId: string, query?: object) =>
        call<never>("DELETE", turnsUrl(sessionId), query),
    });
    this.documents = {
      put: (document, query) => call("PUT", "/v1/documents/item", query, document),
      get: (query) => call("GET", "/v1/documents/item", query),
      delete: (query) => call("DELETE", "/v1/documents/item", query),
      search: (search, query) => call("POST", "/v1/documents/search", query, search),
      namespaces: (filter, query) => call("POST", "/v1/documents/namespaces", query, filter),
    };
    this.handoffs = {
      send: (handoff, query) => call("POST", "/v1/handoff", query, handoff),
      check: (query) => call("GET", "/v1/handoff", query),
    };
    this.syncProblems = new Listing<"/v1/sync/problems">(transport, "/v1/sync/problems");
  }

  /** The token's id, name and namespaces. */
  me(query?: QueryParams<"/v1/me">): Promise<Result<"/v1/me">> {
    return this.transport.request("GET", "/v1/me", (query ?? {}) as Query);
  }

  /** The context block for a runtime's system prompt: `block`, its items with scores and
   * `why`, the memory ids injected (R10, R26). */
  context(query: QueryParams<"/v1/context"> = {}): Promise<Result<"/v1/context">> {
    return this.transport.request("GET", "/v1/context", query as Query);
  }

  /** What the pipeline is doing, as the token may see it: its tenants' figures, and for an
   * operator token the global ones (`pipeline`). */
  status(query?: QueryParams<"/v1/status">): Promise<Result<"/v1/status">> {
    return this.transport.request("GET", "/v1/status", (query ?? {}) as Query);
  }

  /** Forget a user of the namespace everywhere, provably: the verification report. */
  forgetUser(
    userId: string,
    query?: QueryParams<"/v1/forget", "post">,
  ): Promise<Result<"/v1/forget", "post">> {
    return this.transport.request("POST", "/v1/forget", (query ?? {}) as Query, { user_id: userId });
  }

  /** The namespace's archive, JSON Lines (only `user_id`'s rows if given); an encrypted
   * tenant's needs `plaintext: true`, since the archive holds its text opened. */
  exportArchive(query?: QueryParams<"/v1/export">): Promise<string> {
    return this.transport.request("GET", "/v1/export", (query ?? {}) as Query);
  }

  /** Import an archive (as `exportArchive` gave it) into the namespace: all of it or
   * nothing (a damaged or newer-version archive is refused, 422), twice is once. */
  importArchive(
    archive: string,
    query?: QueryParams<"/v1/import", "post">,
  ): Promise<Result<"/v1/import", "post">> {
    const body = new RawBody(archive, "application/x-ndjson");
    return this.transport.request("POST", "/v1/import", (query ?? {}) as Query, body);
  }

  /** Prometheus metrics, as text (aggregate numbers only; no token needed). */
  metrics(): Promise<string> {
    return this.transport.request("GET", "/metrics");
  }
}

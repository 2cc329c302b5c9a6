// The transport under every call: URLs and query strings, the bearer token, a deadline per
// attempt, retries with backoff on 429 and 503 (honouring `Retry-After`), and errors as
// ContinuumError. Only `fetch` (Node 20+, browsers, Deno, Bun) is needed.

import { ContinuumError } from "./errors.js";

/** How the client reaches the API. */
export interface ClientOptions {
  /** Where `continuum api` listens, e.g. "http://127.0.0.1:8000" (a path prefix is kept). */
  baseUrl: string;
  /** A bearer token from `continuum tokens create --namespace NS`. */
  token: string;
  /** The namespace (instance) of every call that does not name one; needed when the token
   * covers several and a call works on one (search, context, tasks, ...). */
  instance?: string;
  /** Attempts after the first when the API answers 429 or 503 (default 3). */
  retries?: number;
  /** First backoff when no `Retry-After` is given, doubled each retry (default 500 ms). */
  retryBaseMs?: number;
  /** Longest wait before a retry, `Retry-After` included (default 30 s). */
  maxRetryDelayMs?: number;
  /** Deadline of one attempt (default 30 s). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

/** A query string's values: arrays repeat the parameter (`kind=a&kind=b`). */
export type QueryValue = string | number | boolean | null | undefined | readonly (string | number)[];
export type Query = { readonly [name: string]: QueryValue };

const RETRY_STATUSES = new Set([429, 503]);

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Seconds from a `Retry-After` header (delta seconds or an HTTP date), if it has one. */
export function retryAfterSeconds(header: string | null, now: number = Date.now()): number | undefined {
  if (header === null || header.trim() === "") {
    return undefined;
  }
  const seconds = Number(header);
  if (Number.isFinite(seconds)) {
    return Math.max(0, seconds);
  }
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - now) / 1000);
}

/** A request body sent as it is (an archive), not as JSON. */
export class RawBody {
  constructor(
    readonly text: string,
    readonly contentType: string,
  ) {}
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) {
    return null;
  }
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("json") || type.includes("ndjson")) {
    return text;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export class Transport {
  private readonly base: URL;
  private readonly options: Required<Omit<ClientOptions, "instance" | "fetch">> & {
    instance: string | undefined;
    fetch: typeof fetch;
  };

  constructor(options: ClientOptions) {
    if (!options.baseUrl) {
      throw new TypeError("baseUrl is required, e.g. http://127.0.0.1:8000");
    }
    if (!options.token) {
      throw new TypeError("token is required: create one with `continuum tokens create --namespace NS`");
    }
    this.base = new URL(options.baseUrl.replace(/\/+$/, "") + "/");
    this.options = {
      baseUrl: options.baseUrl,
      token: options.token,
      instance: options.instance,
      retries: options.retries ?? 3,
      retryBaseMs: options.retryBaseMs ?? 500,
      maxRetryDelayMs: options.maxRetryDelayMs ?? 30_000,
      timeoutMs: options.timeoutMs ?? 30_000,
      fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
    };
  }

  /** The absolute URL of an API path ("/v1/...", as `next` links are) under the base URL. */
  url(path: string, query: Query = {}): URL {
    const url = new URL(path.replace(/^\/+/, ""), this.base);
    const params = url.searchParams;
    if (this.options.instance !== undefined && !params.has("instance") && query.instance == null) {
      params.set("instance", this.options.instance);
    }
    for (const [name, value] of Object.entries(query)) {
      if (value === undefined || value === null) {
        continue;
      }
      if (Array.isArray(value)) {
        for (const item of value) {
          params.append(name, String(item));
        }
      } else {
        params.set(name, String(value));
      }
    }
    return url;
  }

  /** Wait before retry number `attempt` (0-based): what `Retry-After` asks, else an
   * exponential backoff with jitter; never more than maxRetryDelayMs. */
  private delayMs(attempt: number, retryAfterS: number | undefined): number {
    const { retryBaseMs, maxRetryDelayMs } = this.options;
    if (retryAfterS !== undefined) {
      return Math.min(retryAfterS * 1000, maxRetryDelayMs);
    }
    const backoff = retryBaseMs * 2 ** attempt;
    return Math.min(backoff * (0.5 + Math.random() / 2), maxRetryDelayMs);
  }

  /** One call: the parsed body of a 2xx answer, or a ContinuumError. */
  async request<T>(method: string, path: string, query: Query = {}, body?: unknown): Promise<T> {
    const url = this.url(path, query);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      accept: "application/json",
    };
    if (body !== undefined) {
      headers["content-type"] = body instanceof RawBody ? body.contentType : "application/json";
    }
    const payload =
      body === undefined ? undefined : body instanceof RawBody ? body.text : JSON.stringify(body);
    const label = `${method} ${url.pathname}`;
    for (let attempt = 0; ; attempt += 1) {
      const response = await this.options.fetch(url, {
        method,
        headers,
        body: payload,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const retryAfterS = retryAfterSeconds(response.headers.get("retry-after"));
      if (RETRY_STATUSES.has(response.status) && attempt < this.options.retries) {
        await response.body?.cancel();
        await sleep(this.delayMs(attempt, retryAfterS));
        continue;
      }
      const parsed = await readBody(response);
      if (!response.ok) {
        throw new ContinuumError(response.status, label, parsed, retryAfterS);
      }
      return parsed as T;
    }
  }
}

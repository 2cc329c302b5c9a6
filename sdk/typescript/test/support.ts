// What the tests share: the live API they are pointed at (tests/sdk/test_typescript.py starts a
// real `continuum api`, real servers and a real worker, and passes its URL and tokens in the
// environment), polling for what workers do later, and a fetch that records every request.

import { readFileSync } from "node:fs";

export const live = {
  url: process.env.CONTINUUM_URL ?? "",
  /** A token of one namespace, `namespace`. */
  token: process.env.CONTINUUM_TOKEN ?? "",
  /** A token of `namespace` and `otherNamespace`. */
  multiToken: process.env.CONTINUUM_TOKEN_MULTI ?? "",
  namespace: process.env.CONTINUUM_NAMESPACE ?? "",
  otherNamespace: process.env.CONTINUUM_OTHER_NAMESPACE ?? "",
};

/** Why the live tests are skipped, or false when the live API is there. */
export const skipLive =
  !live.url || !live.token
    ? "no live API: set CONTINUUM_URL and CONTINUUM_TOKEN (tests/sdk/test_typescript.py does)"
    : false;

/** Call `check` until it answers something truthy; fail after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${timeoutMs} ms (last value ${String(value)})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A fetch that records each request as "METHOD /path?query" before sending it. */
export function recordingFetch(requests: string[]): typeof fetch {
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    requests.push(`${init?.method ?? "GET"} ${url.pathname}${url.search}`);
    return fetch(input, init);
  };
}

/** Every operation of the OpenAPI document: "METHOD /path/{param}". */
export function documentedRoutes(): string[] {
  const document = JSON.parse(
    readFileSync(new URL("../../openapi.json", import.meta.url), "utf8"),
  ) as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** The documented route a recorded request reached ("GET /v1/tasks?limit=2" → "GET /v1/tasks"). */
export function routeOf(request: string, routes: string[]): string | undefined {
  const [method, target = ""] = request.split(" ");
  const pathname = target.split("?")[0];
  return routes.find((route) => {
    const [routeMethod, template = ""] = route.split(" ");
    const pattern = new RegExp(`^${template.replace(/\{\w+\}/g, "[^/]+")}$`);
    return routeMethod === method && pattern.test(pathname ?? "");
  });
}

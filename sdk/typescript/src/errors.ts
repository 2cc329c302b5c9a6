// The error every failed call throws: the HTTP status and each bad field the API named.
//
// The API answers every error in one shape, `{"detail": [{"loc": [...], "msg": ..., "type":
// ...}]}`, or `{"detail": "..."}` for 401, 404 and some 503s. `loc` locates the field:
// ["body", "role"], ["body", 3, "content"] for the fourth event of a batch, ["query", "limit"].

/** One problem the API reported, with the field it names as a dotted path. */
export interface FieldError {
  /** Where the problem is, as the API located it: ["body", 0, "content"]. */
  loc: (string | number)[];
  /** What is wrong with it. */
  msg: string;
  /** The kind of problem: "value_error", "missing", "service_unavailable", ... */
  type: string;
  /** `loc` joined with dots: "body.0.content"; "" when the problem is the whole request. */
  field: string;
}

function fieldErrors(detail: unknown): FieldError[] {
  if (typeof detail === "string") {
    return [{ loc: [], msg: detail, type: "error", field: "" }];
  }
  if (!Array.isArray(detail)) {
    return [];
  }
  return detail.map((item: unknown) => {
    const entry = (item ?? {}) as { loc?: unknown; msg?: unknown; type?: unknown };
    const loc = Array.isArray(entry.loc)
      ? entry.loc.filter((part): part is string | number =>
          typeof part === "string" || typeof part === "number")
      : [];
    return {
      loc,
      msg: typeof entry.msg === "string" ? entry.msg : JSON.stringify(item),
      type: typeof entry.type === "string" ? entry.type : "error",
      field: loc.join("."),
    };
  });
}

/** A call the API refused or could not serve (any status but 2xx, after retries). */
export class ContinuumError extends Error {
  /** The HTTP status: 400, 401, 403, 404, 413, 422, 429, 503, ... */
  readonly status: number;
  /** The request, e.g. "POST /v1/events". */
  readonly request: string;
  /** Every problem the API named, in its order. */
  readonly errors: FieldError[];
  /** The first named field ("body.role", "query.instance"), or undefined when none is. */
  readonly field: string | undefined;
  /** Seconds the API asked to wait before trying again (`Retry-After`), if it said. */
  readonly retryAfterS: number | undefined;
  /** The response body as parsed (JSON) or read (text). */
  readonly body: unknown;

  constructor(status: number, request: string, body: unknown, retryAfterS?: number) {
    const detail = (body as { detail?: unknown } | null)?.detail;
    const errors = fieldErrors(detail === undefined ? body : detail);
    const problems = errors.map((e) => (e.field ? `${e.field}: ${e.msg}` : e.msg)).join("; ");
    super(`${request} answered ${status}${problems ? `: ${problems}` : ""}`);
    this.name = "ContinuumError";
    this.status = status;
    this.request = request;
    this.errors = errors;
    this.field = errors.find((e) => e.field)?.field;
    this.retryAfterS = retryAfterS;
    this.body = body;
  }
}
